import Foundation

/// `sleep: SECONDS`: wait. Not replayed: the replay waits the recorded pauses itself.
public struct SleepStep: ScenarioStepAction {
    public var seconds: Double

    static let kind = StepKind("sleep", example: "sleep: 1", replay: .notReplayed) { args in SleepStep(seconds: try ScenarioParser.number(args.value, in: 0...600)) }

    public func perform(in context: any StepContext) throws -> String {
        context.pause(seconds)
        return "slept \(seconds) s"
    }
}
