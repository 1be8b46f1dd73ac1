import Foundation

/// `expect-command: {command: C, result: R, helper: H, did-just-join: B, absent: B, min-signal-strength: X,
/// max-signal-strength: Y, count: N, after: K}`: a command sent since the start (optionally to H, answered with R, with
/// didJustJoin B, with the network's signalStrength in X...Y); `absent`: none; `count`: exactly N. `after: K` (a step
/// kind): only commands answered or sent after the last K step had taken effect count (trace order, not arrival
/// time): one in flight during the action counts by its answer, one answered before it does not.
public struct ExpectCommandStep: ScenarioStepAction {
    public var command: String
    public var result: String?
    public var helper: String?
    public var didJustJoin: Bool?
    public var absent: Bool
    public var signal: ClosedRange<Double>?
    public var count: Int?
    public var after: String? = nil

    static let kind = StepKind("expect-command", example: "expect-command: {command: maintain, result: success}", replay: .notReplayed) { args in
        let keys = try args.keys(allowed: ["command", "result", "helper", "did-just-join", "absent", "min-signal-strength", "max-signal-strength", "count", "after"],
                                 required: ["command"])
        let low = try keys["min-signal-strength"].map { try ScenarioParser.number($0, in: 0...1) }
        let high = try keys["max-signal-strength"].map { try ScenarioParser.number($0, in: 0...1) }
        if let low, let high, low > high {
            throw try keys.required("max-signal-strength").error("expected max-signal-strength >= min-signal-strength (\(low)), found \(high)")
        }
        return ExpectCommandStep(command: try ScenarioParser.oneOf(keys.required("command"), ScenarioParser.commands, what: "command"),
                                 result: try keys["result"].map { try ScenarioParser.oneOf($0, ScenarioParser.results, what: "result") },
                                 helper: try args.helper(keys["helper"]), didJustJoin: try keys["did-just-join"]?.bool(),
                                 absent: try keys["absent"]?.bool() ?? false,
                                 signal: (low == nil && high == nil) ? nil : (low ?? 0)...(high ?? 1),
                                 count: try keys["count"]?.int(in: 1...1000),
                                 after: try keys["after"].map { try ScenarioParser.oneOf($0, ScenarioParser.stepKinds, what: "step kind") })
    }

    public func perform(in context: any StepContext) throws -> String {
        let helper = self.helper.map(context.helperID)
        let records = context.readTrace(from: 0)
        // With `after: K`: the commands answered after K took effect, or sent after it (a command in flight while the
        // action was under way counts by its answer; one answered before it does not).
        let anchor = try self.after.map { try context.lineAfterStep(ofKind: $0) } ?? 0
        let late = records.dropFirst(anchor)
        let counted = Set(late.compactMap(\.record.command?.id) + late.compactMap(\.record.response?.command))
        let after = self.after.map { " answered or sent after the \($0) step took effect" } ?? ""
        let sentCommands = records.compactMap(\.record.command).filter { self.after == nil || counted.contains($0.id) }
        let commands = sentCommands.filter { c in
            c.commandType == command
                && (helper == nil || c.helper == helper)
                && (didJustJoin == nil || c.network?.didJustJoin == didJustJoin)
                && (signal.map { range in c.network?.signalStrength.map { range.contains($0) } == true } ?? true)
        }
        let wanted = signal.map { String(format: " with signalStrength in %.2f...%.2f", $0.lowerBound, $0.upperBound) } ?? ""
        if absent {
            guard commands.isEmpty else { throw StepFailure("expected no \(command) command\(wanted)\(after), \(commands.count) were sent") }
            return "no \(command)\(wanted)"
        }
        guard !commands.isEmpty else {
            let sent = sentCommands.map { c -> String in
                let type = c.commandType
                guard signal != nil, let strength = c.network?.signalStrength else { return type }
                return type + String(format: " (signalStrength %.3f)", strength)
            }
            throw StepFailure("expected a \(command) command\(helper.map { " to \($0)" } ?? "")\(wanted)\(after), sent: \(sent.isEmpty ? "none" : sent.joined(separator: ", "))")
        }
        if let count, commands.count != count {
            throw StepFailure("expected \(count) \(command) command\(count == 1 ? "" : "s")\(helper.map { " to \($0)" } ?? "")\(wanted)\(after.isEmpty ? " since the start" : after), \(commands.count) were sent")
        }
        let strengths = signal == nil ? "" : " (signalStrength " + commands.compactMap { $0.network?.signalStrength }
            .map { String(format: "%.3f", $0) }.joined(separator: ", ") + ")"
        guard let result else { return "\(command) sent\(strengths)" }
        let ids = Set(commands.map(\.id))
        let answers = records.compactMap(\.record.response).filter { ids.contains($0.command) }
        guard answers.contains(where: { $0.result == result }) else {
            let seen = answers.map(\.result)
            throw StepFailure("expected \(command) answered \(result), actual \(seen.isEmpty ? "no answer" : seen.joined(separator: ", "))")
        }
        return "\(command) -> \(result)\(strengths)"
    }
}
