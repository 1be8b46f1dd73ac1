import HotspotCore
import HotspotProtocol

/// `stations[].apps`: the apps installed on a station (docs/TOPOLOGY.md, "Apps"). Every error names the field's
/// `file:line:column`, as the rest of the topology's.
extension Reader {
    static let appKeys = ["bundle-id", "display-name", "helper", "evaluation-provider", "authentication-provider", "manager"]

    func apps(_ field: Field) throws -> [StationApp] {
        // Bundle identifiers (apps' and providers') are unique on a station: identifier -> where first used.
        var seen: [String: String] = [:]
        return try field.list().map { item in
            let app = try self.app(item)
            let keys = try item.keys(allowed: Self.appKeys)
            var uses = [(try keys.required("bundle-id"), app.bundleIdentifier)]
            for (role, provider) in [("evaluation-provider", app.evaluationProvider), ("authentication-provider", app.authenticationProvider)] {
                if let provider, let f = keys[role] { uses.append((f, provider.identifier)) }
            }
            for (f, identifier) in uses {
                if let first = seen[identifier] {
                    throw f.error("duplicate bundle identifier `\(identifier)` (first used by \(first)); expected a unique identifier on the station")
                }
                seen[identifier] = f.path
            }
            return app
        }
    }

    func app(_ item: Field) throws -> StationApp {
        let keys = try item.keys(allowed: Self.appKeys, required: ["bundle-id"])
        let bundle = try bundleIdentifier(try keys.required("bundle-id"))
        var displayName = StationApp.defaultDisplayName(bundle)
        if let f = keys["display-name"] {
            displayName = try f.nonEmptyString()
            guard displayName.count <= maximumDisplayNameLength else {
                throw f.error("expected a display name of at most \(maximumDisplayNameLength) characters, found \(displayName.count) (`\(displayName)`)")
            }
        }
        let helper = try keys["helper"]?.nonEmptyString()
        let evaluation = try keys["evaluation-provider"].map { try provider($0, default: bundle + ".evaluation") }
        let authentication = try keys["authentication-provider"].map { try provider($0, default: bundle + ".authentication") }
        if let f = keys["helper"], evaluation != nil || authentication != nil {
            throw f.error("an app is a legacy helper app (`helper:`) or a provider app (`evaluation-provider:`, `authentication-provider:`), not both")
        }
        if helper == nil, evaluation == nil, authentication == nil {
            throw item.error("app `\(bundle)` declares nothing to run; expected `helper:` (a legacy NEHotspotHelper app) or `evaluation-provider:` and/or `authentication-provider:`")
        }
        if let e = evaluation, let a = authentication, e.identifier == a.identifier {
            throw (keys["authentication-provider"] ?? item).error("identifier `\(a.identifier)` is also the evaluation provider's; expected two identifiers")
        }
        var manager: ManagerConfiguration?
        if let f = keys["manager"] {
            guard helper == nil else {
                throw f.error("app `\(bundle)` is a legacy helper app: it declares no provider role for a manager to enable; expected `evaluation-provider:` or `authentication-provider:`")
            }
            manager = try self.manager(f, evaluation: evaluation)
        }
        return StationApp(bundleIdentifier: bundle, displayName: displayName, helper: helper, evaluationProvider: evaluation,
                          authenticationProvider: authentication, manager: manager)
    }

    /// A bundle identifier: 1 to 255 bytes of letters, digits, `.`, `-` and `_`, no empty component.
    func bundleIdentifier(_ field: Field) throws -> String {
        let text = try field.nonEmptyString()
        let ok = text.utf8.count <= 255 && !text.hasPrefix(".") && !text.hasSuffix(".") && !text.contains("..")
            && text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) }
        guard ok else {
            throw field.error("expected a bundle identifier such as com.example.portal (letters, digits, '.', '-', '_'; at most 255 bytes), found `\(text)`")
        }
        return text
    }

    /// `CMD` or `{identifier: ID, command: CMD}`.
    func provider(_ field: Field, default identifier: String) throws -> StationProvider {
        if case .scalar = field.node {
            return StationProvider(identifier: identifier, command: try field.commandLine())
        }
        let keys = try field.keys(allowed: ["identifier", "command"], required: ["command"])
        let id = try keys["identifier"].map(bundleIdentifier) ?? identifier
        return StationProvider(identifier: id, command: try keys.required("command").commandLine())
    }

    /// `{enabled, evaluated-ssids, evaluation-provider}`: the app's `NEHotspotManager` configuration.
    func manager(_ field: Field, evaluation: StationProvider?) throws -> ManagerConfiguration {
        let keys = try field.keys(allowed: ["enabled", "evaluated-ssids", "evaluation-provider"], required: ["enabled"])
        let enabled = try keys.required("enabled").bool()
        var ssids: [String] = []
        if let f = keys["evaluated-ssids"] {
            let items = try f.list()
            if items.count > 2 {
                throw items[2].error("at most 2 evaluated SSIDs (NEHotspotManager.evaluatedSSIDs), found \(items.count)")
            }
            for item in items {
                let ssid = try item.nonEmptyString()
                guard ssid.utf8.count <= 32 else { throw item.error("expected an SSID of at most 32 bytes, found \(ssid.utf8.count)") }
                guard !ssids.contains(ssid) else { throw item.error("duplicate evaluated SSID `\(ssid)`") }
                ssids.append(ssid)
            }
        }
        var evaluationIdentifier: String?
        if let f = keys["evaluation-provider"] {
            let id = try bundleIdentifier(f)
            guard let evaluation else {
                throw f.error("the app declares no evaluation provider; expected `evaluation-provider:` in the app before the manager names one")
            }
            guard id == evaluation.identifier else {
                throw f.error("unknown bundle identifier `\(id)`; the app's evaluation provider is `\(evaluation.identifier)`")
            }
            evaluationIdentifier = id
        }
        return ManagerConfiguration(isEnabled: enabled, evaluatedSSIDs: ssids, evaluationProviderBundleIdentifier: evaluationIdentifier)
    }
}

extension TopologyParser {
    /// An app manifest (`certify --app-manifest FILE`): one app as a station's `apps:` entry declares it
    /// (docs/TOPOLOGY.md "Apps"), checked the same way, errors at `file:line:column`.
    public static func loadApp(path: String) throws -> StationApp {
        let yaml = try LabYAML.read(path: path)
        guard let root = try LabYAML.compose(yaml, file: path) else {
            throw TopologyError(file: path, line: 1, column: 1, field: "", message: "the file is empty; expected a mapping with `bundle-id:` and the providers")
        }
        return try Reader(file: path).app(Field(node: root, path: "", file: path))
    }
}

extension StationApp {
    /// The app as hotspotd's `--apps` file declares it, each provider's command resolved by `resolve` (words to an argv).
    package func declaration(resolve: (String) throws -> [String]) rethrows -> AppDeclaration {
        AppDeclaration(bundleIdentifier: bundleIdentifier, displayName: displayName,
                       evaluationProvider: try evaluationProvider.map { ProviderDeclaration(identifier: $0.identifier, command: try resolve($0.command)) },
                       authenticationProvider: try authenticationProvider.map { ProviderDeclaration(identifier: $0.identifier, command: try resolve($0.command)) })
    }
}
