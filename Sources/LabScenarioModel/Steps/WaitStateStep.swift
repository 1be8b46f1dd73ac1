import Foundation

/// `wait-state: S` / `wait-state: {state: S, timeout: 30, after: K}`: hotspotd enters S (the first transition to S
/// after the previous wait) within the timeout. `after: K` (a step kind, such as `link`): the first transition to S
/// traced after the last K step had taken effect and after the previous wait, in trace order, never "already there".
public struct WaitStateStep: ScenarioStepAction {
    public var state: String
    public var timeout: Double
    public var after: String? = nil

    static let kind = StepKind("wait-state", example: "wait-state: Authenticated", replay: .notReplayed) { args in
        if args.isScalar { return WaitStateStep(state: try ScenarioParser.oneOf(args.value, ScenarioParser.states, what: "state"), timeout: 30) }
        let keys = try args.keys(allowed: ["state", "timeout", "after"], required: ["state"])
        return WaitStateStep(state: try ScenarioParser.oneOf(keys.required("state"), ScenarioParser.states, what: "state"),
                             timeout: try keys["timeout"].map { try ScenarioParser.number($0, in: 0.1...600) } ?? 30,
                             after: try keys["after"].map { try ScenarioParser.oneOf($0, ScenarioParser.stepKinds, what: "step kind") })
    }

    public func perform(in context: any StepContext) throws -> String {
        let timeout = Duration.milliseconds(Int64(self.timeout * 1000))
        guard let after else {
            let previous = context.waitCursor
            context.waitCursor = try context.waitForState(state, after: previous, timeout: timeout)
            // A bound only where a transition was matched. "Already there" (hotspotd's status says S, and no transition
            // since the cursor has been read yet) matched none: its transition may still be on its way to the trace
            // (CI run 27: `leave`, then `wait-state: Inactive` answered from the status), so `expect-states` reads to now.
            context.stateBound = context.waitCursor > previous ? context.waitCursor : nil
            context.matchedTransition = context.waitCursor > previous ? context.waitCursor - 1 : nil
            return "state \(state)"
        }
        let cursor = max(context.waitCursor, try context.lineAfterStep(ofKind: after))
        context.waitCursor = try context.waitForTransition(to: state, after: cursor, timeout: timeout)
        context.stateBound = context.waitCursor
        context.matchedTransition = context.waitCursor - 1
        return "state \(state) (entered after the \(after) step took effect)"
    }
}
