import Foundation
import HotspotProtocol

/// `expect-provider: {app: A, event: E, role: evaluation|authentication, reason: R, exit-status: N, count: N, absent: B}`:
/// hotspotd traced a provider lifecycle event of app A (a provider app's bundle identifier) since the start:
/// `launched`, `started` (answered start true), `stopped` (sent stop, with `reason` R), `exited` (the process ended;
/// `exit-status` N, or `crashed`: killed by a signal or a non-zero status), `no-answer` (its commands counted as not
/// answered at once), `network-attempt` (the SDK reported the evaluation provider trying the network). A provider's
/// process ends on its own time after hotspotd's stop, so the step waits for the event (`timeout` seconds, default
/// 10; `absent` and `count` are checked at once, after that wait for the first).
public struct ExpectProviderStep: ScenarioStepAction {
    public var app: String
    public var event: String
    public var role: String?
    public var reason: String?
    public var exitStatus: Int?
    public var absent: Bool
    public var count: Int?
    public var timeout: Double = 10

    /// Event names and the trace kinds they read (docs/TRACE.md).
    static let events: [(name: String, kind: String)] = [
        ("launched", "providerLaunched"), ("started", "providerStarted"), ("stopped", "providerStopped"), ("exited", "providerExited"),
        ("crashed", "providerExited"), ("no-answer", "providerNoAnswer"), ("network-attempt", "helperReport"),
    ]
    static let roles = ["evaluation": "evaluationProvider", "authentication": "authenticationProvider"]

    static let kind = StepKind("expect-provider", example: "expect-provider: {app: com.hotspotlab.portal, event: stopped, reason: idleTimeout}",
                               replay: .notReplayed) { args in
        let keys = try args.keys(allowed: ["app", "event", "role", "reason", "exit-status", "absent", "count", "timeout"], required: ["app", "event"])
        let event = try ScenarioParser.oneOf(keys.required("event"), events.map(\.name), what: "event")
        let reason = try keys["reason"].map { try ScenarioParser.oneOf($0, ["idleTimeout", "configurationDisabled", "noNetworkAvailable", "providerFailed"], what: "stop reason") }
        if let f = keys["reason"], event != "stopped" { throw f.error("`reason` applies to the stopped event, not \(event)") }
        if let f = keys["exit-status"], event != "exited" { throw f.error("`exit-status` applies to the exited event, not \(event)") }
        return ExpectProviderStep(app: try args.helper(keys.required("app")), event: event,
                                  role: try keys["role"].map { try ScenarioParser.oneOf($0, ["evaluation", "authentication"], what: "role") },
                                  reason: reason, exitStatus: try keys["exit-status"]?.int(in: 0...255),
                                  absent: try keys["absent"]?.bool() ?? false, count: try keys["count"]?.int(in: 1...1000),
                                  timeout: try keys["timeout"].map { try ScenarioParser.number($0, in: 0...600) } ?? 30)
    }

    func matches(_ entry: TraceEntry) -> Bool {
        let record = entry.record
        guard let kind = Self.events.first(where: { $0.name == event })?.kind, record.kind == kind,
              record.provider?.app == app else { return false }
        if let role, record.provider?.role != Self.roles[role] {
            // A report names the helper, not the role: the evaluation provider's is the only one it is about.
            guard event == "network-attempt", role == "evaluation" else { return false }
        }
        switch event {
        case "started": return record.providerStarted?.ok == true
        case "stopped": return reason == nil || record.providerStopped?.reason == reason
        case "exited": return exitStatus == nil || record.providerExited?.status == exitStatus
        case "crashed": return record.providerExited?.signal != nil || (record.providerExited?.status ?? 0) != 0
        case "network-attempt": return record.helperReport?.report == "networkFromEvaluationProvider"
        default: return true
        }
    }

    public func perform(in context: any StepContext) throws -> String {
        var records = context.readTrace(from: 0)
        var found = records.filter(matches)
        if !absent, timeout > 0, found.count < (count ?? 1) {
            // Wait for the event: polled on the trace, at most `timeout` seconds, and at least once (a thread preempted
            // past the deadline before its first look must still look again).
            let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
            repeat {
                context.pause(0.05)
                records = context.readTrace(from: 0)
                found = records.filter(matches)
            } while found.count < (count ?? 1) && ContinuousClock.now < deadline
        }
        let what = "\(event)\(reason.map { " (\($0))" } ?? "")\(exitStatus.map { " (exit status \($0))" } ?? "") of \(role.map { "the \($0) provider of " } ?? "")\(app)"
        if absent {
            guard found.isEmpty else { throw StepFailure("expected no \(what), \(found.count) traced") }
            return "no \(what)"
        }
        guard !found.isEmpty else {
            let seen = records.filter { $0.kind.hasPrefix("provider") && $0.record.provider?.app == app }
                .map { r in [r.kind, r.record.provider?.role, r.record.providerStopped?.reason].compactMap { $0 }.joined(separator: " ") }
            throw StepFailure("expected \(what), traced for \(app): \(seen.isEmpty ? "nothing" : seen.joined(separator: ", "))")
        }
        if let count, found.count != count { throw StepFailure("expected \(count) \(what), \(found.count) traced") }
        if let latency = found.first?.record.providerStarted?.latencyMs { return String(format: "%@ (%.0f ms from launch)", what, latency) }
        return "\(what)\(found.count > 1 ? " ×\(found.count)" : "")"
    }
}
