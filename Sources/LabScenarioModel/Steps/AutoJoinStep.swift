import Foundation

/// `auto-join`: the device joins known networks on its own (didAutoJoin true).
public struct AutoJoinStep: ScenarioStepAction {
    static let kind = StepKind("auto-join", example: "auto-join", replay: .asWritten) { _ in AutoJoinStep() }

    public func perform(in context: any StepContext) throws -> String {
        try context.autoJoin()
        return "auto-join"
    }
}
