import Foundation

/// `fire-maintain-timer`: the maintain timer hotspotd armed on entering Authenticated fires now, as if its interval
/// (300 s on the platform, the scenario's `maintain-interval` here) had passed: the lab's clock jumps to it. The
/// helper gets the same maintain command either way; the scenario no longer waits out an interval, and no maintain can
/// fall between two steps by the machine's speed. Fails (hotspotd's error) when no timer is armed.
public struct FireMaintainTimerStep: ScenarioStepAction {
    static let kind = StepKind("fire-maintain-timer", example: "fire-maintain-timer", replay: .asWritten) { _ in FireMaintainTimerStep() }

    public func perform(in context: any StepContext) throws -> String {
        try context.fireMaintainTimer()
        return "the maintain timer fired"
    }
}
