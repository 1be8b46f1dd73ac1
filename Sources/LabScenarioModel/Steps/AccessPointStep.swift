import Foundation

/// `ap: down|up` / `{state: ..., hotspot: H}`: the access points of the hotspot disappear (hostapd disabled) or come back.
public struct AccessPointStep: ScenarioStepAction {
    public var up: Bool
    public var hotspot: String?

    static let kind = StepKind("ap", example: "ap: down", replay: .asWritten) { args in
        let (up, hotspot) = try upOrDown(args)
        return AccessPointStep(up: up, hotspot: hotspot)
    }

    /// `up`/`down`, or `{state: up|down, hotspot: H}` (also the `uplink` step's syntax).
    static func upOrDown(_ args: StepArguments) throws -> (up: Bool, hotspot: String?) {
        if args.isScalar { return (try ScenarioParser.oneOf(args.value, ["up", "down"], what: "\(args.kind) state") == "up", nil) }
        let keys = try args.keys(allowed: ["state", "hotspot"], required: ["state"])
        let state = try ScenarioParser.oneOf(keys.required("state"), ["up", "down"], what: "\(args.kind) state")
        return (state == "up", try args.hotspot(keys["hotspot"]))
    }

    public func perform(in context: any StepContext) throws -> String {
        let hotspot = try context.hotspotFor(hotspot)
        let command = up ? "ENABLE" : "DISABLE"
        // Every access point of the hotspot, in turn.
        let count = try context.hostapdCount(hotspot: hotspot.name)
        guard count > 0 else { throw StepFailure("hotspot \(hotspot.name) has no hostapd (veth mode)") }
        for index in 0..<count {
            let reply = try context.hostapdRequest(hotspot: hotspot.name, index: index, command)
            guard reply.hasPrefix("OK") else { throw StepFailure("hostapd \(command) answered \(reply)") }
        }
        return "access point\(count > 1 ? "s" : "") of \(hotspot.name) \(up ? "back" : "gone")"
    }
}
