import Foundation

/// `expect-states: [S1, S2, ...]`: exactly these states were entered since the previous `expect-states` (or the start).
public struct ExpectStatesStep: ScenarioStepAction {
    public var states: [String]

    static let kind = StepKind("expect-states", example: "expect-states: [Evaluating]", replay: .notReplayed) { args in
        ExpectStatesStep(states: try args.value.list().map { try ScenarioParser.oneOf($0, ScenarioParser.states, what: "state") })
    }

    public func perform(in context: any StepContext) throws -> String {
        let actual = context.states(from: context.stateCheckpoint)
        context.stateCheckpoint = context.traceLineCount()
        guard actual == states else {
            throw StepFailure("expected \(states.isEmpty ? "no state change" : "the states " + states.joined(separator: " -> ")), actual \(actual.isEmpty ? "none" : actual.joined(separator: " -> "))")
        }
        return actual.joined(separator: " -> ")
    }
}
