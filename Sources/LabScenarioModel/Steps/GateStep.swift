import Foundation

/// `gate: authenticated|unauthenticated` / `{expect: ..., hotspot: NAME}`: the hotspot's captive gate holds (or
/// does not hold) the station in its authenticated set.
public struct GateStep: ScenarioStepAction {
    public var authenticated: Bool
    public var hotspot: String?

    static let kind = StepKind("gate", example: "gate: authenticated", replay: .notReplayed) { args in
        let states = ["authenticated", "unauthenticated"]
        if args.isScalar {
            return GateStep(authenticated: try ScenarioParser.oneOf(args.value, states, what: "gate state") == "authenticated", hotspot: nil)
        }
        let keys = try args.keys(allowed: ["expect", "hotspot"], required: ["expect"])
        return GateStep(authenticated: try ScenarioParser.oneOf(keys.required("expect"), states, what: "gate state") == "authenticated",
                        hotspot: try args.hotspot(keys["hotspot"]))
    }

    public func perform(in context: any StepContext) throws -> String {
        let hotspot = try context.hotspotFor(hotspot)
        let mac = try context.macAddress()
        let elements = try context.gateAuthenticated(hotspot: hotspot.name)
        let present = elements.contains { $0.lowercased().hasPrefix(mac.lowercased()) }
        guard present == authenticated else {
            throw StepFailure("expected the gate of \(hotspot.name) \(authenticated ? "to hold" : "not to hold") the station \(mac); "
                              + "its authenticated set: \(elements.isEmpty ? "empty" : elements.joined(separator: ", "))")
        }
        return "gate of \(hotspot.name): \(authenticated ? "authenticated" : "not authenticated") (\(elements.joined(separator: ", ")))"
    }
}
