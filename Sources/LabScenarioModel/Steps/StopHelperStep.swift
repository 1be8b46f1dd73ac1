import Foundation

/// `stop-helper: H` / `continue-helper: H`: SIGSTOP (a hung helper) or SIGCONT.
public struct StopHelperStep: ScenarioStepAction {
    public var helper: String
    public var stop: Bool

    static let stopKind = StepKind("stop-helper", example: "stop-helper: hotspot-helper-portal", replay: .asWritten) { args in StopHelperStep(helper: try args.helper(args.value), stop: true) }
    static let continueKind = StepKind("continue-helper", example: "continue-helper: hotspot-helper-portal", replay: .asWritten) { args in
        StopHelperStep(helper: try args.helper(args.value), stop: false)
    }

    public func perform(in context: any StepContext) throws -> String {
        guard context.helperPID(helper) != nil else { throw context.noHelper(helper) }
        try context.signalHelper(helper, stop ? SIGSTOP : SIGCONT)
        return "\(helper) \(stop ? "stopped (hung)" : "continued")"
    }
}
