import Foundation

/// `uplink: down|up` / `{state: ..., hotspot: H}`: the hotspot's uplink to the internet goes down (a total
/// outage) or comes back (`RunningTopology.setUplink`).
public struct UplinkStep: ScenarioStepAction {
    public var up: Bool
    public var hotspot: String?

    static let kind = StepKind("uplink", example: "uplink: up", replay: .asWritten) { args in
        let (up, hotspot) = try AccessPointStep.upOrDown(args)
        return UplinkStep(up: up, hotspot: hotspot)
    }

    public func perform(in context: any StepContext) throws -> String {
        let hotspot = try context.hotspotFor(hotspot)
        return try context.setUplink(hotspot: hotspot.name, up: up)
    }
}
