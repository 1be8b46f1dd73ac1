import Foundation

/// `expect-states: [S1, S2, ...]`: exactly these states were entered since the previous `expect-states` (or the start),
/// up to the transition the last `wait-state` matched when only checks have run since it (`StepContext.stateBound`),
/// else up to now. In trace order, so a timer that fires while the checks in between take their time (a maintain
/// round on a loaded machine) is not counted here but by the next `expect-states`.
public struct ExpectStatesStep: ScenarioStepAction {
    public var states: [String]

    /// The step kinds that only look (at hotspotd's trace and status, the gate, the network from the station): they keep
    /// the bound the last `wait-state` set. Every other step acts or lets time pass on purpose (`sleep` before
    /// `expect-states: []`), and clears it (`ScenarioRunner.runSteps`). `ScenarioRunnerTests.stepKindClasses` holds every kind to one side.
    public static let checksOnly: Set<String> = [
        "expect-states", "expect-command", "expect-cache", "expect-notification", "expect-provider",
        "expect-auto-join-disabled", "gate", "application", "probe",
    ]

    static let kind = StepKind("expect-states", example: "expect-states: [Evaluating]", replay: .notReplayed) { args in
        ExpectStatesStep(states: try args.value.list().map { try ScenarioParser.oneOf($0, ScenarioParser.states, what: "state") })
    }

    public func perform(in context: any StepContext) throws -> String {
        let from = context.stateCheckpoint
        let now = context.traceLineCount()
        let end = context.stateBound.flatMap { (from...now).contains($0) ? $0 : nil } ?? now
        let actual = context.readTrace(from: from).prefix(end - from).compactMap { $0.record.transition?.to }
        context.stateCheckpoint = end
        guard actual == states else {
            throw StepFailure("expected \(states.isEmpty ? "no state change" : "the states " + states.joined(separator: " -> ")), actual \(actual.isEmpty ? "none" : actual.joined(separator: " -> "))")
        }
        return actual.joined(separator: " -> ")
    }
}
