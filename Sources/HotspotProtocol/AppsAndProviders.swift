import HotspotCore

// MARK: apps and providers (docs/PROTOCOL.md, "Apps and providers")

/// What a process registered as: a legacy helper (every command) or one of an app's two providers.
public enum ProviderRole: String, Sendable, Hashable, CaseIterable, Comparable {
    case helper, evaluationProvider, authenticationProvider

    /// The provider role that handles a command type: filterScanList and evaluate go to the evaluation
    /// provider, the rest (authenticate, maintain, presentUI, logoff) to the authentication provider.
    public static func handling(_ type: CommandType) -> ProviderRole {
        switch type {
        case .filterScanList, .evaluate: .evaluationProvider
        default: .authenticationProvider
        }
    }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// `register` with its optional `role` and `app` (a legacy helper's is `register(identifier:displayName:version:)`).
public struct Registration: Sendable, Hashable {
    public var identifier: String
    public var displayName: String
    public var version: Int
    public var role: ProviderRole
    /// The app's bundle identifier; a helper's defaults to its identifier.
    public var app: String

    public init(identifier: String, displayName: String, version: Int, role: ProviderRole = .helper, app: String? = nil) {
        self.identifier = identifier
        self.displayName = displayName
        self.version = version
        self.role = role
        self.app = app ?? identifier
    }

    /// Reads a `register` message (its `type` is not checked). A provider role requires `app`.
    public init(json: JSON) throws(ProtocolError) {
        let f = try Fields(json, path: "")
        identifier = try f.string("identifier")
        displayName = try f.string("displayName")
        version = try f.int("version")
        role = .helper
        if let r = try f.optionalString("role") {
            guard let role = ProviderRole(rawValue: r) else {
                throw ProtocolError(.invalidField, "role: expected \"helper\", \"evaluationProvider\" or \"authenticationProvider\", got \"\(r)\"")
            }
            self.role = role
        }
        let app = try f.optionalString("app")
        if role != .helper, app == nil {
            throw ProtocolError(.invalidField, "app: missing (a \(role.rawValue) names its app's bundle identifier)")
        }
        if let app, app.isEmpty || app.utf8.count > 255 { throw ProtocolError(.invalidField, "app: expected 1 to 255 bytes") }
        self.app = app ?? identifier
    }

    public var json: JSON {
        ["type": "register", "identifier": .string(identifier), "displayName": .string(displayName),
         "version": .number(Double(version)), "role": .string(role.rawValue), "app": .string(app)]
    }
}

/// Why hotspotd stops a provider: Apple's `NEProviderStopReason`, by its raw names.
public enum ProviderStopReason: String, Sendable, Hashable, CaseIterable {
    case none, userInitiated, providerFailed, noNetworkAvailable, unrecoverableNetworkChange, providerDisabled,
         authenticationCanceled, configurationFailed, idleTimeout, configurationDisabled, configurationRemoved, superceded,
         userLogout, userSwitch, connectionFailed, sleep, appUpdate
}

/// The provider lifecycle messages: hotspotd sends `start` and `stop`; the provider answers `started` and `stopped`.
public enum LifecycleMessage: Sendable, Hashable {
    case start
    case stop(ProviderStopReason)
    case started(ok: Bool)
    case stopped

    public static let types = ["start", "stop", "started", "stopped"]

    /// nil when the message is not a lifecycle message.
    public init?(json: JSON) throws(ProtocolError) {
        guard let type = json["type"]?.stringValue, Self.types.contains(type) else { return nil }
        let f = try Fields(json, path: "")
        switch type {
        case "start": self = .start
        case "stop":
            let r = try f.string("reason")
            guard let reason = ProviderStopReason(rawValue: r) else {
                throw ProtocolError(.invalidField, "reason: \"\(r)\" is not an NEProviderStopReason name")
            }
            self = .stop(reason)
        case "started":
            guard let ok = f.object["ok"]?.boolValue else { throw ProtocolError(.invalidField, "ok: missing (expected true or false)") }
            self = .started(ok: ok)
        default: self = .stopped
        }
    }

    public var json: JSON {
        switch self {
        case .start: ["type": "start"]
        case .stop(let r): ["type": "stop", "reason": .string(r.rawValue)]
        case .started(let ok): ["type": "started", "ok": .bool(ok)]
        case .stopped: ["type": "stopped"]
        }
    }

    public var framed: [UInt8] { frame(json.bytes) }
}

/// One provider an app declares: its identifier and the argv that runs it (no shell).
public struct ProviderDeclaration: Sendable, Hashable {
    public var identifier: String
    public var command: [String]

    public init(identifier: String, command: [String]) {
        self.identifier = identifier
        self.command = command
    }

    public var json: JSON { ["identifier": .string(identifier), "command": .array(command.map(JSON.string))] }
}

/// An installed app, as `--apps` declares it: a bundle identifier, a display name and up to two providers.
public struct AppDeclaration: Sendable, Hashable {
    public var bundleIdentifier: String
    public var displayName: String
    public var evaluationProvider: ProviderDeclaration?
    public var authenticationProvider: ProviderDeclaration?

    public init(bundleIdentifier: String, displayName: String, evaluationProvider: ProviderDeclaration? = nil,
                authenticationProvider: ProviderDeclaration? = nil)
    {
        self.bundleIdentifier = bundleIdentifier
        self.displayName = displayName
        self.evaluationProvider = evaluationProvider
        self.authenticationProvider = authenticationProvider
    }

    public func provider(_ role: ProviderRole) -> ProviderDeclaration? {
        switch role {
        case .helper: nil
        case .evaluationProvider: evaluationProvider
        case .authenticationProvider: authenticationProvider
        }
    }

    public var json: JSON {
        var o: [String: JSON] = ["bundleIdentifier": .string(bundleIdentifier), "displayName": .string(displayName)]
        if let evaluationProvider { o["evaluationProvider"] = evaluationProvider.json }
        if let authenticationProvider { o["authenticationProvider"] = authenticationProvider.json }
        return .object(o)
    }
}

/// The `--apps` file: `{"apps": [AppDeclaration...]}`. Errors name the file, the JSON path and what was expected.
public enum AppsFile {
    /// Renders the file for a list of apps (what the lab writes per station); `parse` reads it back.
    public static func render(_ apps: [AppDeclaration]) -> [UInt8] {
        var bytes = JSON.object(["apps": .array(apps.map(\.json))]).bytes
        bytes.append(0x0A)
        return bytes
    }

    public static func parse(_ bytes: [UInt8], file: String) throws(ProtocolError) -> [AppDeclaration] {
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw ProtocolError(.invalidField, "\(file): \(error.message)") }
        guard case .object(let top) = json else { throw ProtocolError(.invalidField, "\(file): expected a JSON object {\"apps\": [...]}") }
        guard let list = top["apps"]?.arrayValue else { throw ProtocolError(.invalidField, "\(file): apps: missing or not an array") }
        var apps: [AppDeclaration] = []
        var identifiers: Set<String> = []
        func fail(_ path: String, _ what: String) -> ProtocolError { ProtocolError(.invalidField, "\(file): \(path): \(what)") }
        for (k, item) in list.enumerated() {
            let path = "apps[\(k)]"
            guard case .object(let o) = item else { throw fail(path, "expected an object") }
            func string(_ key: String, in o: [String: JSON], _ p: String) throws(ProtocolError) -> String {
                guard let s = o[key]?.stringValue, !s.isEmpty, s.utf8.count <= 255 else {
                    throw fail("\(p).\(key)", "expected a string of 1 to 255 bytes")
                }
                return s
            }
            let bundle = try string("bundleIdentifier", in: o, path)
            let name = try string("displayName", in: o, path)
            guard name.count <= maximumDisplayNameLength else {
                throw fail("\(path).displayName", "expected at most \(maximumDisplayNameLength) characters, got \"\(name)\"")
            }
            func provider(_ key: String) throws(ProtocolError) -> ProviderDeclaration? {
                guard let v = o[key], v != .null else { return nil }
                let p = "\(path).\(key)"
                guard case .object(let po) = v else { throw fail(p, "expected an object {\"identifier\", \"command\"}") }
                let id = try string("identifier", in: po, p)
                guard let argv = po["command"]?.arrayValue, !argv.isEmpty else {
                    throw fail("\(p).command", "expected a non-empty array of strings (an argv, no shell)")
                }
                var command: [String] = []
                for (i, a) in argv.enumerated() {
                    guard let s = a.stringValue else { throw fail("\(p).command[\(i)]", "expected a string") }
                    command.append(s)
                }
                return ProviderDeclaration(identifier: id, command: command)
            }
            let app = AppDeclaration(bundleIdentifier: bundle, displayName: name, evaluationProvider: try provider("evaluationProvider"),
                                     authenticationProvider: try provider("authenticationProvider"))
            guard identifiers.insert(bundle).inserted else { throw fail("\(path).bundleIdentifier", "\"\(bundle)\" is declared twice") }
            if let e = app.evaluationProvider, let a = app.authenticationProvider, e.identifier == a.identifier {
                throw fail("\(path).authenticationProvider.identifier", "\"\(a.identifier)\" is also the evaluation provider's identifier")
            }
            apps.append(app)
        }
        return apps
    }
}

/// An app's `NEHotspotManager` configuration: set on the control socket, persisted with the state.
public struct ManagerConfiguration: Sendable, Hashable {
    public var isEnabled: Bool
    public var evaluatedSSIDs: [String]
    public var evaluationProviderBundleIdentifier: String?

    /// An app never configured: disabled (the system starts its providers only when enabled).
    public static let initial = ManagerConfiguration(isEnabled: false)

    public init(isEnabled: Bool, evaluatedSSIDs: [String] = [], evaluationProviderBundleIdentifier: String? = nil) {
        self.isEnabled = isEnabled
        self.evaluatedSSIDs = evaluatedSSIDs
        self.evaluationProviderBundleIdentifier = evaluationProviderBundleIdentifier
    }

    /// Reads the fields of `setManager` / `manager` / a persisted entry; `path` prefixes the field names.
    public init(json: JSON, path: String = "") throws(ProtocolError) {
        let f = try Fields(json, path: path)
        guard let enabled = f.object["isEnabled"]?.boolValue else {
            throw ProtocolError(.invalidField, "\(f.name("isEnabled")): missing (expected true or false)")
        }
        isEnabled = enabled
        evaluatedSSIDs = []
        if f.has("evaluatedSSIDs") {
            guard let a = f.object["evaluatedSSIDs"]?.arrayValue else {
                throw ProtocolError(.invalidField, "\(f.name("evaluatedSSIDs")): expected an array of SSIDs")
            }
            guard a.count <= 2 else { throw ProtocolError(.invalidField, "\(f.name("evaluatedSSIDs")): at most 2 SSIDs, got \(a.count)") }
            for (k, v) in a.enumerated() {
                guard let s = v.stringValue, !s.isEmpty, s.utf8.count <= 32 else {
                    throw ProtocolError(.invalidField, "\(f.name("evaluatedSSIDs"))[\(k)]: expected an SSID of 1 to 32 bytes")
                }
                evaluatedSSIDs.append(s)
            }
        }
        evaluationProviderBundleIdentifier = try f.optionalString("evaluationProviderBundleIdentifier")
    }

    public var fields: [String: JSON] {
        ["isEnabled": .bool(isEnabled), "evaluatedSSIDs": .array(evaluatedSSIDs.map(JSON.string)),
         "evaluationProviderBundleIdentifier": evaluationProviderBundleIdentifier.map(JSON.string) ?? .null]
    }
}
