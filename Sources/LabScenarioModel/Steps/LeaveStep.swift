import Foundation

/// `leave`: the user leaves the network.
public struct LeaveStep: ScenarioStepAction {
    static let kind = StepKind("leave", example: "leave", replay: .asWritten) { _ in LeaveStep() }

    public func perform(in context: any StepContext) throws -> String {
        try context.leave()
        return "leave"
    }
}
