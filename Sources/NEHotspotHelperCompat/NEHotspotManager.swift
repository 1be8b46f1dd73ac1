// Apple's `NEHotspotManager` (iOS 26): the app's switch for its two provider extensions, kept by hotspotd
// (`setManager` / `getManager` on its control socket, $HOTSPOT_CONTROL_SOCKET; docs/PROVIDERS.md).
import Synchronization

/// Enables or disables the app's evaluation and authentication providers.
public final class NEHotspotManager: Sendable {
    /// What `loadFromPreferences()` and `saveToPreferences()` throw: Apple's three cases, each carrying here
    /// the operation, the app and the cause in `message` (two errors are equal when their cases are).
    public struct Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        public enum Code: String, Sendable, Hashable {
            case configurationNotLoaded, configurationInvalid, internalError
        }

        public let code: Code
        public let message: String

        public init(_ code: Code, _ message: String) {
            self.code = code
            self.message = message
        }

        /// `saveToPreferences()` before `loadFromPreferences()`.
        public static let configurationNotLoaded = Error(.configurationNotLoaded, "the configuration is not loaded")
        /// A field hotspotd (or this side) refuses: a third evaluated SSID, an unknown app, another provider's identifier.
        public static let configurationInvalid = Error(.configurationInvalid, "the configuration is invalid")
        /// hotspotd cannot be reached, or answers something unexpected.
        public static let internalError = Error(.internalError, "internal error")

        public static func == (a: Error, b: Error) -> Bool { a.code == b.code }
        public func hash(into hasher: inout Hasher) { hasher.combine(code) }
        public static func ~= (pattern: Error, value: any Swift.Error) -> Bool { (value as? Error)?.code == pattern.code }

        public var description: String { "NEHotspotManager.Error.\(code.rawValue): \(message)" }
    }

    private struct State {
        var configuration: HotspotManagerConfiguration
        var loaded = false
    }

    private let state: Mutex<State>
    /// hotspotd's control socket (default: $HOTSPOT_CONTROL_SOCKET, else /run/hotspotd/control.sock).
    public let controlSocketPath: String?

    /// The manager of the app `$HOTSPOT_APP` (as on iOS, the calling app's).
    public convenience init() {
        self.init(app: HotspotHelperEnvironmentValue.app ?? "", controlSocketPath: nil)
    }

    /// Not Apple's: the manager of `app` through the control socket at `controlSocketPath`.
    public init(app: String, controlSocketPath: String? = nil) {
        state = Mutex(State(configuration: HotspotManagerConfiguration(app: app)))
        self.controlSocketPath = controlSocketPath
    }

    /// The app this manager configures.
    public var app: String { state.withLock { $0.configuration.app } }

    /// The system starts the providers only when this is true.
    public final var isEnabled: Bool {
        get { state.withLock { $0.configuration.isEnabled } }
        set { state.withLock { $0.configuration.isEnabled = newValue } }
    }

    /// Pre-evaluated SSIDs (at most two): the evaluation provider is not asked about them.
    public final var evaluatedSSIDs: [String] {
        get { state.withLock { $0.configuration.evaluatedSSIDs } }
        set { state.withLock { $0.configuration.evaluatedSSIDs = newValue } }
    }

    /// The identifier of the evaluation provider to use; it must be one the app itself declares (hotspotd refuses
    /// another app's with `configurationInvalid`).
    public final var evaluationProviderBundleIdentifier: String? {
        get { state.withLock { $0.configuration.evaluationProviderBundleIdentifier } }
        set { state.withLock { $0.configuration.evaluationProviderBundleIdentifier = newValue } }
    }

    /// Loads the app's configuration from hotspotd (a never-saved app loads the default: not enabled).
    public final func loadFromPreferences() async throws {
        let app = self.app
        guard !app.isEmpty else {
            throw Error(.configurationInvalid, "loadFromPreferences: no app (HOTSPOT_APP is not set and no app was given)")
        }
        // The control socket blocks (up to its timeout): on a thread of its own, never one of the few cooperative threads.
        let socketPath = controlSocketPath
        let result: Result<HotspotManagerConfiguration, HotspotHelperError> = await HotspotHelper.blocking {
            Result { () throws(HotspotHelperError) in try HotspotManagerControl.load(app: app, socketPath: socketPath) }
        }
        do {
            let loaded = try result.get()
            state.withLock {
                $0.configuration = loaded
                $0.loaded = true
            }
        } catch {
            throw Self.classify("loadFromPreferences", error)
        }
    }

    /// Saves the configuration to hotspotd. Only after `loadFromPreferences()`.
    public final func saveToPreferences() async throws {
        let (isLoaded, configuration) = state.withLock { ($0.loaded, $0.configuration) }
        guard isLoaded else {
            throw Error(.configurationNotLoaded, "saveToPreferences for \(configuration.app): call loadFromPreferences() first")
        }
        let socketPath = controlSocketPath
        let result: Result<Void, HotspotHelperError> = await HotspotHelper.blocking {
            Result { () throws(HotspotHelperError) in try HotspotManagerControl.save(configuration, socketPath: socketPath) }
        }
        do {
            try result.get()
        } catch {
            throw Self.classify("saveToPreferences", error)
        }
    }

    /// A field refused (by this side's check or hotspotd's `invalidField`/`unknownApp`) is configurationInvalid;
    /// anything else (no daemon, a bad reply) is internalError. The message is the whole cause.
    static func classify(_ operation: String, _ error: HotspotHelperError) -> Error {
        let text = error.description
        let invalid = ["invalidField", "unknownApp", "undeclaredRole", "evaluatedSSIDs", "app:"].contains { text.contains($0) }
            && !text.contains("connect to hotspotd")
        return Error(invalid ? .configurationInvalid : .internalError, "\(operation): \(text)")
    }
}

/// The environment's app identifier (`$HOTSPOT_APP`).
enum HotspotHelperEnvironmentValue {
    static var app: String? {
        guard let value = getenv(HotspotProviderOptions.appVariable) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }
}
