import Foundation
import LabTopology

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

    /// The portal kind and its settings, checked against the kind's definition (PortalKinds, as the topology parser
    /// and the portal server check them); required settings may come from the topology's portal (switchPortal checks).
    static func validated(kind field: Field, settings settingsField: Field?) throws -> (kind: String, settings: [String: String]) {
        let kind = try ScenarioParser.oneOf(field, PortalCatalog.kinds + ["down"], what: "portal kind")
        return (kind, try settingsField.map { try PortalFields.stepSettings($0, kind: kind) } ?? [:])
    }

    public func perform(in context: any StepContext) throws -> String {
        let hotspot = try context.hotspotFor(hotspot)
        try context.switchPortal(hotspot: hotspot.name, kind: kind, settings: settings)
        return kind == "down" ? "portal of \(hotspot.name) died" : "portal of \(hotspot.name) is now \(kind)"
    }
}
