import Foundation

/// `wait-state: S` / `wait-state: {state: S, timeout: 30}`: hotspotd enters S (the first transition to S after
/// the previous wait) within the timeout.
public struct WaitStateStep: ScenarioStepAction {
    public var state: String
    public var timeout: Double

    static let kind = StepKind("wait-state", example: "wait-state: Authenticated", replay: .notReplayed) { args in
        if args.isScalar { return WaitStateStep(state: try ScenarioParser.oneOf(args.value, ScenarioParser.states, what: "state"), timeout: 30) }
        let keys = try args.keys(allowed: ["state", "timeout"], required: ["state"])
        return WaitStateStep(state: try ScenarioParser.oneOf(keys.required("state"), ScenarioParser.states, what: "state"),
                             timeout: try keys["timeout"].map { try ScenarioParser.number($0, in: 0.1...600) } ?? 30)
    }

    public func perform(in context: any StepContext) throws -> String {
        context.waitCursor = try context.waitForState(state, after: context.waitCursor, timeout: .milliseconds(Int64(timeout * 1000)))
        return "state \(state)"
    }
}
