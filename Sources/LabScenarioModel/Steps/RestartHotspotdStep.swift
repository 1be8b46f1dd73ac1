import Foundation

/// `restart-hotspotd` / `restart-hotspotd: {helper-delay: S}`: SIGKILL hotspotd and start it again; the helpers
/// come back S seconds later.
public struct RestartHotspotdStep: ScenarioStepAction {
    public var helperDelay: Double

    static let kind = StepKind("restart-hotspotd", example: "restart-hotspotd", replay: .asWritten) { args in
        if args.isNull { return RestartHotspotdStep(helperDelay: 0) }
        let keys = try args.keys(allowed: ["helper-delay"])
        return RestartHotspotdStep(helperDelay: try keys["helper-delay"].map { try ScenarioParser.number($0, in: 0...60) } ?? 0)
    }

    public func perform(in context: any StepContext) throws -> String {
        context.stateCheckpoint = try context.restartHotspotd(helperDelay: .milliseconds(Int64(helperDelay * 1000)))
        context.waitCursor = context.stateCheckpoint
        context.matchedTransition = nil
        return "hotspotd restarted"
    }
}
