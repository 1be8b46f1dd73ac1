import Foundation

/// `kill-helper: H`: SIGKILL to the helper process.
public struct KillHelperStep: ScenarioStepAction {
    public var helper: String

    static let kind = StepKind("kill-helper", example: "kill-helper: hotspot-helper-portal", replay: .asWritten) { args in KillHelperStep(helper: try args.helper(args.value)) }

    public func perform(in context: any StepContext) throws -> String {
        guard let pid = context.helperPID(helper) else { throw context.noHelper(helper) }
        try context.killHelper(helper)
        return "killed \(helper) (pid \(pid))"
    }
}
