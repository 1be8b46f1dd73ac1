import PortalKinds
import Yams

/// A hotspot's `portal:` and the scenario `portal:` step's `settings:`, checked against the kind's definition
/// (PortalKinds: the same one the portal server validates with), each error at the value or key at fault.
extension Reader {
    func portal(_ field: Field) throws -> PortalSettings {
        guard case .mapping(let mapping) = field.node else {
            throw field.error("expected a mapping with `kind:` (one of \(PortalCatalog.kinds.joined(separator: ", "))), found \(field.kindName)")
        }
        var kind: PortalKindDefinition?
        var port: Field?
        var settingFields: [(name: String, key: Field, value: Field)] = []
        for (key, value) in mapping {
            guard let name = key.string else { throw Field(node: key, path: field.path, file: field.file).error("expected a string key") }
            let f = field.child(name, value)
            switch name {
            case "kind":
                let text = try f.string()
                guard let definition = PortalCatalog.definition(text) else {
                    throw f.error("unknown portal kind `\(text)`; expected one of: \(PortalCatalog.kinds.joined(separator: ", "))")
                }
                kind = definition
            case "port":
                port = f
            default:
                settingFields.append((name, Field(node: key, path: f.path, file: field.file), f))
            }
        }
        guard let kind else { throw field.error("missing key `kind`") }
        let portNumber = try port?.int(in: 1...65535) ?? 8080
        if let port, portNumber == 53 || portNumber == 67 { throw port.error("port \(portNumber) is used by dnsmasq; expected another port") }
        var settings: [String: String] = [:]
        for (name, key, value) in settingFields {
            guard kind.setting(name) != nil || PortalCatalog.labSettings.contains(name) else {
                throw key.error("unknown key `\(name)` for the \(kind.name) portal; expected one of: "
                    + (["kind", "port"] + PortalCatalog.labSettings + kind.settingNames).joined(separator: ", "))
            }
            settings[name] = try PortalFields.value(value, setting: name, kind: kind)
        }
        if let problem = RecordedPortalSetting.check(&settings, kind: kind.name, topologyFile: field.file) {
            throw (settingFields.first { $0.name == "definition" }?.value ?? field).error(problem)
        }
        if let (name, message) = SessionCookie.problem(settings, kind: kind) {
            throw (settingFields.first { $0.name == name }?.value ?? field).error(message)
        }
        if let missing = kind.missing(settings).first {
            throw field.error("missing key `\(missing.name)` for the \(kind.name) portal (\(missing.type.expected): \(missing.help))")
        }
        if PortalTLS.isHTTPSOnly(settings), portNumber == PortalTLS.port {
            throw (port ?? field).error("port \(portNumber) is the https-only portal's TLS port; expected another port for its plain HTTP")
        }
        return PortalSettings(kind: kind.name, port: portNumber, settings: settings)
    }
}

/// Portal settings read from YAML, for the topology's `portal:` and the scenario's `portal:` step.
package enum PortalFields {
    /// The value of the setting `name`: a scalar, valid for the kind's definition or the lab's settings.
    static func value(_ value: Field, setting name: String, kind: PortalKindDefinition) throws -> String {
        guard case .scalar = value.node else { throw value.error("expected a scalar, found \(value.kindName)") }
        let text = try value.string()
        // The lab's settings are flags (`session-cookie` and `csrf-token` are checked with the kind once all are read).
        let problem = PortalCatalog.labSettings.contains(name) ? PortalTLS.problem(text) : kind.problem(setting: name, value: text)
        if let problem { throw value.error(problem) }
        return text
    }

    /// The scenario `portal:` step's `settings:` for `kind` (or `down`, which takes none): each a setting of the kind
    /// (or `https-only`) with a valid value. Required settings may come from the topology's portal, so they are
    /// checked when the portal switches (`RunningTopology.switchPortal`), before the old portal stops.
    package static func stepSettings(_ field: Field, kind: String) throws -> [String: String] {
        guard let definition = PortalCatalog.definition(kind) else {
            throw field.error("the portal `\(kind)` takes no settings")
        }
        guard case .mapping(let mapping) = field.node else {
            throw field.error("expected a mapping of the \(kind) portal's settings, found \(field.kindName)")
        }
        var settings: [String: String] = [:]
        for (key, node) in mapping {
            guard let name = key.string else { throw Field(node: key, path: field.path, file: field.file).error("expected a string key") }
            let f = field.child(name, node)
            guard definition.setting(name) != nil || PortalCatalog.labSettings.contains(name) else {
                throw Field(node: key, path: f.path, file: field.file).error("unknown setting `\(name)` for the \(kind) portal; expected one of: "
                    + (PortalCatalog.labSettings + definition.settingNames).joined(separator: ", "))
            }
            settings[name] = try value(f, setting: name, kind: definition)
            if let problem = RecordedPortalSetting.check(&settings, kind: kind, topologyFile: field.file) { throw f.error(problem) }
        }
        return settings
    }
}
