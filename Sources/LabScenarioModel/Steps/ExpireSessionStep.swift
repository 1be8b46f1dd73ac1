import Foundation

/// `expire-session` / `expire-session: HOTSPOT`: the portal session ends, the gate forgets the station.
public struct ExpireSessionStep: ScenarioStepAction {
    public var hotspot: String?

    static let kind = StepKind("expire-session", example: "expire-session: cafe", replay: .asWritten) { args in
        ExpireSessionStep(hotspot: args.isNull ? nil : try args.hotspot(args.value))
    }

    public func perform(in context: any StepContext) throws -> String {
        let hotspot = try context.hotspotFor(hotspot)
        try context.expirePortalSessions(hotspot: hotspot.name)
        return "portal session of \(hotspot.name) expired (gate set flushed)"
    }
}
