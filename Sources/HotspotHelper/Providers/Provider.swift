#if canImport(Glibc)
import Glibc
#endif

// The provider model of iOS 26 (`NEHotspotEvaluationProvider`, `NEHotspotAuthenticationProvider`): instead of one
// process registering a handler, an app ships two extensions; the system launches each on demand, starts it,
// hands it commands of its role and stops it with a reason. The handler returns its response and the framework
// delivers it (docs/PROVIDERS.md). `NEHotspotHelperCompat` spells these as Apple does.

/// Which commands a provider gets (`role` in `register`, docs/PROTOCOL.md).
public enum HotspotProviderRole: String, Sendable, CaseIterable, CustomStringConvertible {
    /// filterScanList and evaluate; runs with no network (a namespace with only `lo`).
    case evaluationProvider
    /// authenticate, maintain, presentUI and logoff; never sees the scan list.
    case authenticationProvider

    /// The command types hotspotd routes to this role.
    public var commandTypes: Set<HotspotHelperCommandType> {
        switch self {
        case .evaluationProvider: [.filterScanList, .evaluate]
        case .authenticationProvider: [.authenticate, .maintain, .presentUI, .logoff]
        }
    }

    public var description: String { rawValue }
}

/// Why a provider is stopped (`NEProviderStopReason`, Apple's cases and raw values). On the wire (`stop`) it is
/// the case's name.
public enum HotspotProviderStopReason: Int, Sendable, CaseIterable, CustomStringConvertible {
    case none = 0
    case userInitiated = 1
    case providerFailed = 2
    case noNetworkAvailable = 3
    case unrecoverableNetworkChange = 4
    case providerDisabled = 5
    case authenticationCanceled = 6
    case configurationFailed = 7
    case idleTimeout = 8
    case configurationDisabled = 9
    case configurationRemoved = 10
    case superceded = 11
    case userLogout = 12
    case userSwitch = 13
    case connectionFailed = 14
    case sleep = 15
    case appUpdate = 16

    /// The wire name (`"idleTimeout"`), as in `{"type":"stop","reason":"idleTimeout"}`.
    public var name: String {
        switch self {
        case .none: "none"
        case .userInitiated: "userInitiated"
        case .providerFailed: "providerFailed"
        case .noNetworkAvailable: "noNetworkAvailable"
        case .unrecoverableNetworkChange: "unrecoverableNetworkChange"
        case .providerDisabled: "providerDisabled"
        case .authenticationCanceled: "authenticationCanceled"
        case .configurationFailed: "configurationFailed"
        case .idleTimeout: "idleTimeout"
        case .configurationDisabled: "configurationDisabled"
        case .configurationRemoved: "configurationRemoved"
        case .superceded: "superceded"
        case .userLogout: "userLogout"
        case .userSwitch: "userSwitch"
        case .connectionFailed: "connectionFailed"
        case .sleep: "sleep"
        case .appUpdate: "appUpdate"
        }
    }

    /// The reason with this wire name, nil for a name this SDK does not know.
    public init?(name: String) {
        guard let reason = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = reason
    }

    public var description: String { name }
}

/// What both provider kinds have (Apple: `init()`, `start()`, `stop(reason:)`, `handleCommand(_:)`).
///
/// The SDK calls `start()` once, then `handleCommand` for each command of the role (concurrently: a presentUI
/// waiting for the user does not hold up a maintain), then `stop(reason:)` once; after stop no command is
/// handled and the process exits. `handleCommand` returns the response and the SDK delivers it: calling
/// `deliver()` on it is refused and reported to hotspotd (`report` `deliverCalledByProvider`).
public protocol HotspotProvider: AnyObject, SendableMetatype {
    /// The role this provider registers with.
    static var providerRole: HotspotProviderRole { get }
    init()
    /// False: the provider could not start (hotspotd counts its commands as not answered).
    func start() async -> Bool
    func stop(reason: HotspotProviderStopReason) async
    func handleCommand(_ command: HotspotHelperCommand) async -> HotspotHelperResponse
}

/// filterScanList and evaluate (`NEHotspotEvaluationProvider`). No network: it decides from the network and the
/// scan list it is given.
public protocol HotspotEvaluationProvider: HotspotProvider {}

/// authenticate, maintain, presentUI and logoff (`NEHotspotAuthenticationProvider`). Its traffic goes through
/// the command (`command.http`, `command.createTCPConnection`), as a helper's does.
public protocol HotspotAuthenticationProvider: HotspotProvider {}

extension HotspotEvaluationProvider {
    public static var providerRole: HotspotProviderRole { .evaluationProvider }
}

extension HotspotAuthenticationProvider {
    public static var providerRole: HotspotProviderRole { .authenticationProvider }
}

extension HotspotProvider {
    /// The `@main` entry: reads the environment hotspotd sets, registers, runs the provider until it is stopped
    /// and exits (0 after stop, 1 when hotspotd goes away first, 2 when registration fails).
    public static func main() async {
        let status = await HotspotProviderRuntime.run(Self.self, options: HotspotProviderOptions.fromEnvironment())
        exit(status.exitCode)
    }
}
