import Foundation

/// `portal: {kind: K, hotspot: H, settings: {...}}` / `portal: down`: the portal changes on the server side (the
/// hotspot's portal server replaced by another kind), or dies.
public struct PortalStep: ScenarioStepAction {
    public var kind: String
    public var hotspot: String?
    public var settings: [String: String]

    static let kind = StepKind("portal", example: "portal: down", replay: .asWritten) { args in
        if args.isScalar {
            let (kind, settings) = try validated(kind: args.value, settings: nil)
            return PortalStep(kind: kind, hotspot: nil, settings: settings)
        }
        let keys = try args.keys(allowed: ["kind", "hotspot", "settings"], required: ["kind"])
        let (kind, settings) = try validated(kind: keys.required("kind"), settings: keys["settings"])
        return PortalStep(kind: kind, hotspot: try args.hotspot(keys["hotspot"]), settings: settings)
    }

    /// The portal kind and its settings, checked (the one place that knows what a portal kind accepts).
    static func validated(kind field: Field, settings settingsField: Field?) throws -> (kind: String, settings: [String: String]) {
        var settings: [String: String] = [:]
        if let s = settingsField, case .mapping(let m) = s.node {
            for (key, value) in m {
                let f = s.child(key.string ?? "?", value)
                settings[key.string ?? ""] = try f.string()
                if key.string == PortalTLS.setting, let problem = PortalTLS.problem(try f.string()) { throw f.error(problem) }
            }
        }
        return (try ScenarioParser.oneOf(field, PortalCatalog.kinds + ["down"], what: "portal kind"), settings)
    }

    public func perform(in context: any StepContext) throws -> String {
        let hotspot = try context.hotspotFor(hotspot)
        try context.switchPortal(hotspot: hotspot.name, kind: kind, settings: settings)
        return kind == "down" ? "portal of \(hotspot.name) died" : "portal of \(hotspot.name) is now \(kind)"
    }
}
