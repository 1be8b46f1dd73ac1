import Foundation
import PortalKinds

/// `probe: {client: C, expect: V}`: runs client C's real connectivity probe rules (`ClientProbeRules`: apple,
/// android, chromeos, windows, networkmanager, firefox; `all`: each of them) from the station and expects the
/// verdict V: open, captive, partial or none. The requests are the system's own probe traffic (`hotspot-probe`).
public struct ProbeStep: ScenarioStepAction {
    public var clients: [String]
    public var expect: ProbeVerdict

    static let kind = StepKind("probe", example: "probe: {client: android, expect: open}", replay: .notReplayed) { args in
        let keys = try args.keys(allowed: ["client", "expect"], required: ["client", "expect"])
        let client = try ScenarioParser.oneOf(keys.required("client"), ClientProbeRules.clients + ["all"], what: "client")
        let verdict = try ScenarioParser.oneOf(keys.required("expect"), ProbeVerdict.allCases.map(\.rawValue), what: "verdict")
        guard let expect = ProbeVerdict(rawValue: verdict) else { throw try keys.required("expect").error("unknown verdict `\(verdict)`") }
        return ProbeStep(clients: client == "all" ? ClientProbeRules.clients : [client], expect: expect)
    }

    /// Each client's verdict from what its probes got (`observations` by URL).
    public static func verdicts(_ clients: [String], observations: [String: ProbeObservation]) -> [(client: String, verdict: ProbeVerdict)] {
        clients.compactMap { ClientProbeRules.rules($0) }.map { rules in
            (rules.client, rules.verdict(http: observations[rules.http.url] ?? .failed("not fetched"),
                                         https: rules.https.map { observations[$0.url] ?? .failed("not fetched") }))
        }
    }

    static func describe(_ observation: ProbeObservation?) -> String {
        switch observation {
        case .answered(let status, let body)?: return "HTTP \(status) \(body.prefix(40).debugDescription)"
        case .failed(let error)?: return error
        case nil: return "not fetched"
        }
    }

    public func perform(in context: any StepContext) throws -> String {
        let rules = clients.compactMap { ClientProbeRules.rules($0) }
        var urls: [String] = []
        for rule in rules {
            for url in [rule.http.url] + (rule.https.map { [$0.url] } ?? []) where !urls.contains(url) { urls.append(url) }
        }
        let observed = try context.probe(urls)
        var observations: [String: ProbeObservation] = [:]
        for (url, observation) in zip(urls, observed) { observations[url] = observation }
        let verdicts = Self.verdicts(clients, observations: observations)
        let wrong = verdicts.filter { $0.verdict != expect }
        guard wrong.isEmpty else {
            let details = wrong.map { item -> String in
                let rule = rules.first { $0.client == item.client }
                let seen = ([rule?.http.url] + [rule?.https?.url]).compactMap { $0 }.map { "\($0): \(Self.describe(observations[$0]))" }
                return "\(item.client) says \(item.verdict.rawValue) (\(seen.joined(separator: "; ")))"
            }
            throw StepFailure("expected \(expect.rawValue) from \(clients.joined(separator: ", ")); " + details.joined(separator: "; "))
        }
        return "\(expect.rawValue): " + clients.joined(separator: ", ")
    }
}
