import Foundation
import HotspotProtocol
import HotspotSystem
import LabTopology

/// `ipv6-only` (docs/CERTIFY.md): the run `ipv6-only` makes the café IPv6-only (`ip: v6-only`: SLAAC and DHCPv6, no
/// IPv4 address for the station, the IPv4 internet through NAT64 and DNS64), as the network Apple's App Review
/// tests apps on, and the user joins it: the helper must claim it and sign in. A helper that hard-codes an IPv4
/// address (its portal's, a backend's) or opens IPv4-only sockets cannot reach it before the sign-in (there is no
/// IPv4 route, and NAT64 stays closed behind the gate until a sign-in), and fails here; the cause names the answer,
/// and the IPv4 addresses in the helper's log where it wrote any.
///
/// Owns, in that run only (the lab's mark `networkMark` at its start), an evaluate of the café answered none while
/// it is captive, and an authenticate of the café not answered success (the other checks that own those answers,
/// reauthenticate and its kin, step aside there).
struct IPv6OnlyCheck: CertifyCheck {
    let id = "ipv6-only"
    let title = "signs in on an IPv6-only network (NAT64/DNS64, no IPv4 address), as on App Review's network"
    let runs: [CertificationRun] = [.ipv6Only]
    let position = 16.5

    /// The lab's mark at the start of the run: the café is IPv6-only.
    static let networkMark = "certify: the café is IPv6-only (NAT64, DNS64)"
    /// The lab's mark of the IPv4 addresses the helper's log names, after the run.
    static let hintsMark = "certify: IPv4 addresses in the helper's log"

    /// The certification topology with the café (`home`) made IPv6-only: its prefix derived from its IPv4 subnet
    /// unless it has one; the other networks stay as they are.
    static func ipv6Only(_ topology: Topology, home: String) throws -> Topology {
        var topology = topology
        guard let index = topology.hotspots.firstIndex(where: { $0.ssid == home }) else {
            throw SystemError("make IPv6-only", home, reason: "\(topology.file) has no hotspot with this SSID; expected the certification topology's networks")
        }
        var gateway = topology.hotspots[index].gateway
        gateway.ip = .v6Only
        if gateway.ipv6 == nil { gateway.ipv6 = GatewayIPv6.derived(from: gateway.subnet) }
        topology.hotspots[index].gateway = gateway
        return topology
    }

    /// The helper's log lines that name an IPv4 address (at most `limit`, the last ones).
    static func ipv4Lines(inLog text: String, limit: Int = 3) -> [String] {
        let pattern = try! NSRegularExpression(pattern: #"\b(?:\d{1,3}\.){3}\d{1,3}\b"#)
        let lines = text.split(separator: "\n").map(String.init).filter { line in
            pattern.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil
        }
        return Array(lines.suffix(limit))
    }

    static func hints(in trace: [TraceEntry]) -> TraceEntry? {
        trace.last { GroundTruth.mark($0)?.certify == hintsMark }
    }

    static func hintText(_ entry: TraceEntry?) -> String {
        guard let first = entry?.record.labAction?.action.lines?.last else { return "" }
        return "; the helper's log names an IPv4 address: \(first)"
    }

    static let why = "on the IPv6-only café (no IPv4 address; the IPv4 internet through NAT64 and DNS64 only, as on App Review's network) "
        + "the helper must reach its portal over IPv6 or by name, never by an IPv4 literal or an IPv4-only socket"

    func judge(_ j: Judge) -> CheckResult {
        let trace = j.records(.ipv6Only)
        let hint = Self.hintText(Self.hints(in: trace))
        let evaluations = j.responses(.ipv6Only, to: "evaluate").filter { j.command(.ipv6Only, $0.payload)?.network?.ssid.text == j.home }
        guard let login = j.responses(.ipv6Only, to: "authenticate").last else {
            return j.fail(self, "the helper was not asked to sign in on the IPv6-only café (evaluate: "
                          + (evaluations.last.map { "confidence \($0.network?.confidence ?? 0)" } ?? "no answer") + ")\(hint)",
                          evaluations.map { j.evidence(.ipv6Only, $0.entry) } + j.notes(.ipv6Only))
        }
        guard login.result == "success" else {
            return j.fail(self, "authenticate answered \(login.result) on the IPv6-only café\(hint)", [j.evidence(.ipv6Only, login.entry)] + j.notes(.ipv6Only))
        }
        guard j.record(.ipv6Only)?.gate["afterSignIn"] == true else {
            return j.fail(self, "authenticate answered success on the IPv6-only café, but the gate does not hold the station",
                          [j.evidence(.ipv6Only, login.entry)] + j.notes(.ipv6Only))
        }
        return j.pass(self, "signed in on the IPv6-only café (NAT64/DNS64)", [j.evidence(.ipv6Only, login.entry), "gate after the sign-in: authenticated"])
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        guard truth.ipv6Only != nil, truth.hijack == nil, let (r, command) = truth.judged(entry), command.network?.ssid.text == judge.home else { return nil }
        let hint = Self.hints(in: truth.trace)
        switch r.commandType {
        case "evaluate" where r.network?.confidence == 0 && !truth.sessionAlive:
            return CertifyCause(reason: "evaluate of the IPv6-only café answered none at seq \(entry.seq), so the helper never claimed it: "
                                + Self.why + Self.hintText(hint), context: [command.entry, truth.ipv6Only, hint])
        case "authenticate" where r.result != "success":
            return CertifyCause(reason: "authenticate answered \(r.result) at seq \(entry.seq), expected success: " + Self.why + Self.hintText(hint),
                                context: [command.entry, truth.ipv6Only, hint])
        default:
            return nil
        }
    }
}

extension RunDriver {
    /// The run `ipv6-only`: the café (IPv6-only in this run's lab) is marked so, the user joins it and the helper
    /// signs in; the gate is read; the IPv4 addresses the helper's log names are marked.
    func ipv6Only() throws {
        mark(IPv6OnlyCheck.networkMark)
        defer { markIPv4Hints() }
        _ = try signInAtHome()
    }

    func markIPv4Hints() {
        let lines = station.helpers.flatMap { helper -> [String] in
            guard let text = try? String(contentsOfFile: helper.log, encoding: .utf8) else { return [] }
            return IPv6OnlyCheck.ipv4Lines(inLog: text)
        }
        guard !lines.isEmpty else { return }
        note("IPv4 addresses in the helper's log: " + lines.joined(separator: " | "))
        mark(IPv6OnlyCheck.hintsMark, ["lines": .array(lines.suffix(3).map { JSON.string($0) })])
    }
}
