import HotspotCore
import HotspotProtocol
import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// One accepted connection, as the core knows it (the shell maps it to a socket).
public typealias ConnectionID = Int

/// Which socket a connection came in on.
public enum ConnectionKind: String, Sendable {
    case helper, control
}

/// A timer the core asks for; arming a token that is armed replaces it.
public enum DaemonTimer: Hashable, Sendable {
    /// A command's deadline.
    case deadline(CommandID)
    case maintain
    case scanListRefresh
    /// A frame on the connection stayed incomplete for the partial-frame timeout.
    case partialFrame(ConnectionID)
    /// A provider had no command for the idle timeout.
    case providerIdle(ProviderKey)
    /// A provider did not answer `stop` in time.
    case providerStopGrace(ProviderKey)
    /// A provider process still there after its connection closed is killed.
    case providerKill(ProviderKey)
}

/// One provider of one app.
public struct ProviderKey: Hashable, Sendable, CustomStringConvertible {
    public var app: String
    public var role: ProviderRole
    public init(app: String, role: ProviderRole) {
        self.app = app
        self.role = role
    }
    public var description: String { "\(app) \(role.rawValue)" }
}

/// A provider process to start: the shell spawns `argv` with `environment` added to its own, then calls
/// `DaemonCore.providerSpawned` (or `providerSpawnFailed`), and `providerExited` when it is reaped.
public struct ProviderLaunch: Sendable, Equatable {
    public var key: ProviderKey
    public var argv: [String]
    public var environment: [String: String]
}

/// A `NetworkControl` call the state machine asked for.
public enum NetworkAction: Sendable, Equatable {
    case suppressIP(interface: String, network: NetworkIdentity?)
    case releaseIP(interface: String, network: NetworkIdentity?)
    case disassociate(interface: String, network: NetworkIdentity?)
    case setAutoJoin(Bool, network: NetworkIdentity, interface: String)

    /// Carries the action out on `control`.
    public func perform(on control: any NetworkControl) {
        switch self {
        case .suppressIP(let i, let n): control.suppressIP(interface: i, network: n)
        case .releaseIP(let i, let n): control.releaseIP(interface: i, network: n)
        case .disassociate(let i, let n): control.disassociate(interface: i, network: n)
        case .setAutoJoin(let on, let n, let i): control.setAutoJoin(on, network: n, interface: i)
        }
    }
}

/// A control request the station driver carries out (join, leave, autoJoin).
public enum StationRequest: Sendable, Equatable {
    case join(ssid: SSID, password: String?)
    case leave
    case autoJoin(except: Set<NetworkIdentity>)

    /// Carries the request out on `station`; a thrown error becomes the request's `requestFailed` error.
    public func perform(on station: any StationDriver) throws {
        switch self {
        case .join(let ssid, let password): try station.join(ssid: ssid, password: password)
        case .leave: try station.leave()
        case .autoJoin(let disabled): try station.autoJoin(except: disabled)
        }
    }
}

/// Where a station request's outcome goes (back into `DaemonCore.stationRequestFinished`).
public struct StationReplyTo: Sendable, Equatable {
    public let connection: ConnectionID
    public let requestID: JSON?
    /// The control request as received (in the `error` record of a failure).
    public let request: JSON
}

/// What the core asks its shell to do. The shell carries the actions out in order.
public enum DaemonAction: Sendable, Equatable {
    /// Queue bytes (whole frames) for the connection; report what the peer took with `DaemonCore.wrote`.
    case send(ConnectionID, [UInt8])
    /// Close the connection's socket (the core has forgotten it; queued output may be dropped).
    case close(ConnectionID)
    case armTimer(DaemonTimer, after: Duration)
    case cancelTimer(DaemonTimer)
    /// A complete trace record (with `seq`, `t_ns`, `kind`) for the trace file and stderr echo; subscribers
    /// already got it as `send` actions.
    case trace(JSON)
    case network(NetworkAction)
    /// Carry out a station request, then call `DaemonCore.stationRequestFinished(_:error:)`.
    case station(StationRequest, replyTo: StationReplyTo)
    /// A line for stderr.
    case log(String)
    /// Spawn a provider process (see `ProviderLaunch`).
    case launchProvider(ProviderLaunch)
    /// SIGKILL a provider process that outstayed its stop.
    case killProcess(Int32)
}

/// The wall clock (seconds since the epoch), for the `start` record.
public protocol WallClock: AnyObject, Sendable {
    func secondsSinceEpoch() -> Double
}

/// CLOCK_REALTIME.
public final class SystemWallClock: WallClock {
    public init() {}
    public func secondsSinceEpoch() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec)
    }
}

/// Where the persisted state lives. `StateStore` is the file; tests use `MemoryStateStorage`.
public protocol StateStorage: AnyObject {
    var path: String { get }
    /// The saved state, with at most `limit` cache entries and auto-join-disabled networks.
    func load(limit: Int) -> StateStore.LoadOutcome
    func save(_ state: PersistentState) throws
    /// Removes what a killed writer left behind; returns the names removed.
    func removeStaleTemporaries() -> [String]
    /// Throws when `state` could not be saved now (without replacing what is saved).
    func checkWritable(_ state: PersistentState) throws
}

/// `StateStore` as a `StateStorage`.
public final class FileStateStorage: StateStorage {
    public let store: StateStore
    public init(path: String) { store = StateStore(path: path) }
    public var path: String { store.path }
    public func load(limit: Int) -> StateStore.LoadOutcome { store.load(limit: limit) }
    public func save(_ state: PersistentState) throws { try store.save(state) }
    public func removeStaleTemporaries() -> [String] { store.removeStaleTemporaries() }
    public func checkWritable(_ state: PersistentState) throws { try store.checkWritable(state) }
}

/// State kept in memory (the embedded harness).
public final class MemoryStateStorage: StateStorage {
    public let path: String
    public var saved: PersistentState?
    /// What `load` reports (nil: what was saved, or missing).
    public var loadOutcome: StateStore.LoadOutcome?
    public private(set) var saveCount = 0

    public init(path: String = "memory:state.json", saved: PersistentState? = nil) {
        self.path = path
        self.saved = saved
    }

    public func load(limit: Int) -> StateStore.LoadOutcome {
        if let loadOutcome { return loadOutcome }
        guard var state = saved else { return .missing }
        state.applyLimit(limit)
        return .loaded(state)
    }

    /// When set, `save` and `checkWritable` throw it (a full disk in unit tests).
    public var failure: (any Error)?

    public func save(_ state: PersistentState) throws {
        if let failure { throw failure }
        saved = state
        saveCount += 1
    }

    public func checkWritable(_ state: PersistentState) throws {
        if let failure { throw failure }
    }

    public func removeStaleTemporaries() -> [String] { [] }
}

/// Carries actions out in order, for the shell and the embedded harness alike. Actions produced while one is
/// being carried out (a station request's outcome, re-entering `run`) are queued behind the current ones
/// instead of running inside them.
final class ActionQueue {
    private var pending: [DaemonAction] = []
    private var running = false

    func run(_ actions: [DaemonAction], _ carryOut: (DaemonAction) -> Void) {
        pending.append(contentsOf: actions)
        guard !running else { return }
        running = true
        defer { running = false }
        var next = 0
        while next < pending.count {
            let action = pending[next]
            next += 1
            carryOut(action)
        }
        pending.removeAll(keepingCapacity: true)
    }
}
