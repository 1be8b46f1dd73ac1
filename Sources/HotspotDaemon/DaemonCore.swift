import HotspotCore
import HotspotProtocol
import HotspotSystem

/// hotspotd without I/O: it takes what happened (a connection opened, bytes received, a connection ended, a
/// timer fired, a station event) and answers with `DaemonAction`s (send, close, arm or cancel a timer, a trace
/// record, a network or station action). The monotonic clock, the wall clock and the state storage are
/// injected. `Daemon` carries the actions out on sockets and a poll loop; `EmbeddedDaemon` in memory.
///
/// Every entry point returns the actions it produced, in order. Single-threaded.
public final class DaemonCore {
    public let options: DaemonOptions
    public let clock: any MonotonicClock
    let wallClock: any WallClock
    let store: any StateStorage
    /// This process's id (in `start` and `status`).
    let pid: Int32
    /// Station requests (join, leave, autoJoin) are carried out by a station driver; without one they fail.
    let hasStation: Bool
    public internal(set) var machine: HotspotMachine

    /// One accepted connection.
    final class Connection {
        let id: ConnectionID
        let kind: ConnectionKind
        let peer: PeerCredentials?
        var decoder: FrameDecoder
        /// Bytes sent and not yet taken by the peer (`wrote`).
        var queued = 0
        var helperID: HelperID?
        var subscribed = false
        var closed = false
        var partialTimerArmed = false
        /// A station request of this connection is being carried out: its later frames wait.
        var awaitingStation = false
        /// The provider this connection registered as (nil: a legacy helper or not registered).
        var provider: ProviderKey?

        init(id: ConnectionID, kind: ConnectionKind, peer: PeerCredentials?) {
            self.id = id
            self.kind = kind
            self.peer = peer
            decoder = FrameDecoder()
        }

        var tracePeer: TracePeer {
            guard let peer else { return TracePeer(connection: id) }
            return TracePeer(connection: id, pid: Int(peer.pid), uid: Int(peer.uid), gid: Int(peer.gid))
        }
    }

    var connections: [ConnectionID: Connection] = [:]
    var helperConnections: [HelperID: Connection] = [:]
    /// Trace subscribers in subscription order.
    var subscribers: [Connection] = []
    private var nextConnection = 1

    struct Outstanding {
        var sentAt: Duration
        var command: Command
    }
    var outstanding: [CommandID: Outstanding] = [:]
    var maintainTimerArmed = false
    var shownScanList: [HotspotNetwork]?
    var lastScanList: [AnnotatedNetwork]?
    /// Between showScanList and hideScanList: `status.scanList` shows the last annotated list.
    var scanListVisible = false
    var notifications: [JSON] = []
    var effects: [Effect] = []
    /// Where the answer of the `logoffRequested` being handled goes.
    var logoffReply: ((Bool) -> Void)?
    var persistDirty = false
    /// Failed writes of the trace and the state file (`status.persistence`).
    var persistence = PersistenceHealth()
    /// The declared apps by bundle identifier, and their providers.
    var apps: [String: AppDeclaration] = [:]
    var managers: [String: ManagerConfiguration] = [:]
    var slots: [ProviderKey: ProviderSlot] = [:]
    /// Events hotspotd itself produces while handling one (answers for pre-evaluated SSIDs, commands that
    /// count as no answer at once): handled after it, in order.
    var deferredEvents: [(Event, TraceRecord.EventSource)] = []
    var handlingDepth = 0
    /// The provider connection whose `response` is being handled (a rejection's error goes back to it).
    var respondingConnection: Connection?
    private var seq: UInt64 = 0
    private var outbox: [DaemonAction] = []

    /// Each peer's one budget (helper, control client, trace subscriber alike): the output queued for it and
    /// not taken yet. A frame that takes it past the budget closes the connection (`overloaded`), unless the
    /// frame is all that is queued (one reply larger than the budget still goes out whole). Input is bounded
    /// apart by the frame limit (`maximumFrameLength`): a peer costs at most about this plus two frames.
    public static let maximumQueuedOutput = 4 << 20
    /// The largest control reply (docs/PROTOCOL.md: control clients accept up to 16 MiB).
    public static let maximumControlReply = 16 << 20
    /// Asks the shell whether a connection's peer has already closed (a query, no I/O the core sees): a
    /// registration of an identifier whose connection has ended but whose end is not handled yet replaces it
    /// instead of being refused (issue 27, the close race). The default (embedded) knows no more than the core.
    public var peerHasClosed: (ConnectionID) -> Bool = { _ in false }
    /// Connections refused at the connection limit, by socket (`status.connections`), and the sockets refusing now.
    var refusedConnections: [ConnectionKind: Int] = [:]
    var refusing: [ConnectionKind: Int] = [:]
    /// accept(2) calls that found no descriptor (EMFILE, ENFILE), by socket (`status.connections.acceptFailures`):
    /// with the back-off a handful per second at most, never a busy loop.
    var acceptFailures: [ConnectionKind: Int] = [:]

    public init(options: DaemonOptions, clock: any MonotonicClock, wallClock: any WallClock = SystemWallClock(),
                store: any StateStorage, pid: Int32, hasStation: Bool = false)
    {
        self.options = options
        self.clock = clock
        self.wallClock = wallClock
        self.store = store
        self.pid = pid
        self.hasStation = hasStation
        machine = HotspotMachine(timing: options.timing)
        effects.reserveCapacity(32)
        for app in options.apps {
            apps[app.bundleIdentifier] = app
            for role in [ProviderRole.evaluationProvider, .authenticationProvider] {
                if let p = app.provider(role) {
                    let key = ProviderKey(app: app.bundleIdentifier, role: role)
                    slots[key] = ProviderSlot(key: key, declaration: p)
                }
            }
        }
    }

    func take() -> [DaemonAction] {
        let out = outbox
        outbox.removeAll(keepingCapacity: true)
        return out
    }

    func emit(_ action: DaemonAction) { outbox.append(action) }

    var persistentState: PersistentState {
        PersistentState(cache: machine.cache, autoJoinDisabled: machine.autoJoinDisabled, managers: managers)
    }

    // MARK: lifecycle

    /// Loads the persisted state and writes the `start` record (never fails: a bad state file is moved aside).
    public func start() -> [DaemonAction] {
        var startRecord = TraceRecord.Start(
            traceVersion: traceFormatVersion, pid: Int(pid), interface: options.interface, helperSocket: options.helperSocket,
            controlSocket: options.controlSocket, stateFile: options.stateFile, timeScale: options.timing.scale,
            maintainInterval_ms: options.timing.scaledMaintainInterval.milliseconds, protocolVersion: protocolVersion,
            wallclock_s: wallClock.secondsSinceEpoch())
        let stale = store.removeStaleTemporaries()
        if !stale.isEmpty { startRecord.removedTemporaries = stale }
        let limit = HotspotMachine.defaultCacheLimit
        switch store.load(limit: limit) {
        case .missing:
            startRecord.state = "none"
        case .loaded(var s):
            // The runtime limits hold for what was loaded too (issue 27): a state file written by another build or
            // by hand may hold more.
            s.applyLimit(limit)
            machine = HotspotMachine(timing: options.timing, cache: s.cache, autoJoinDisabled: s.autoJoinDisabled)
            managers = s.managers
            startRecord.state = "loaded"
            let dropped = s.dropped
            if dropped.cacheEntries > 0 || dropped.autoJoinDisabled > 0 {
                let message = "warning: state file \(options.stateFile) holds \(s.cache.count + dropped.cacheEntries) cache entries and "
                    + "\(s.autoJoinDisabled.count + dropped.autoJoinDisabled) auto-join-disabled networks; the limit is \(limit) each: "
                    + "dropped \(dropped.cacheEntries) cache entries and \(dropped.autoJoinDisabled) auto-join-disabled networks "
                    + "(the last in the file's order)"
                emit(.log("hotspotd: \(message)"))
                record(.stateTrimmed(.init(file: options.stateFile, limit: limit, cacheDropped: dropped.cacheEntries,
                                           autoJoinDisabledDropped: dropped.autoJoinDisabled)))
                persistDirty = true
            }
        case .corrupt(let reason, let movedTo):
            startRecord.state = "corrupt"
            let message = "warning: state file \(options.stateFile) is corrupt (\(reason)); "
                + (movedTo.map { "moved to \($0); " } ?? "") + "starting clean"
            emit(.log("hotspotd: \(message)"))
            record(.warning(.init(message: message, movedTo: movedTo)))
        }
        // The loaded state, when small; a summary otherwise (a restart loop with a large cache wrote it whole
        // into every start record: docs/RELIABILITY.md).
        let persisted = persistentState.json
        let persistedBytes = persisted.bytes.count
        if persistedBytes <= Self.maximumEmbeddedState {
            startRecord.persisted = persisted
        } else {
            startRecord.persistedSummary = .init(cacheEntries: machine.cache.count, autoJoinDisabled: machine.autoJoinDisabled.count,
                                                 bytes: persistedBytes, limit: Self.maximumEmbeddedState)
        }
        startRecord.appsFile = options.appsFile
        if !apps.isEmpty { startRecord.apps = options.apps.map(\.json) }
        record(.start(startRecord))
        // A state file that cannot be written (a full or read-only filesystem) is said at once, not at the first
        // change (issue 27): a trimmed state is written now, any other is tried beside the file.
        if persistDirty {
            savePersistentState()
        } else {
            do {
                try store.checkWritable(persistentState)
            } catch {
                stateWriteFailed("\(error)")
                record(.warning(.init(message: "state file \(options.stateFile) cannot be written: \(error); the state is kept in memory until it can",
                                      movedTo: nil)))
            }
        }
        registerEnabledApps()
        return take()
    }

    /// The daemon stops: the `stop` record, then every connection closes without telling the machine.
    public func stop() -> [DaemonAction] {
        record(.stop(.init()))
        for conn in connections.values.sorted(by: { $0.id < $1.id }) {
            close(conn, reason: "daemon stopping", notifyMachine: false)
        }
        return take()
    }

    // MARK: trace

    /// Writes one trace record (docs/TRACE.md) and sends it to every live subscriber.
    func record(_ record: TraceRecord) {
        seq += 1
        let t = clock.now().components
        let json = record.json(seq: Int(seq), time: Double(t.seconds) * 1e9 + Double(t.attoseconds / 1_000_000_000))
        emit(.trace(json))
        guard !subscribers.isEmpty else { return }
        let bytes = frame(JSON.object(["type": "trace", "record": json]).bytes)
        // A subscriber closed by this very send (overloaded) is skipped by `send`, and its `overloaded`
        // record goes only to the others: no record is sent to a connection being closed.
        for conn in subscribers where !conn.closed { send(conn, bytes) }
    }

    /// A trace record from outside the core (the station driver, the hook's waiter).
    public func externalRecord(_ r: TraceRecord) -> [DaemonAction] {
        record(r)
        return take()
    }

    // MARK: connections

    /// A connection was accepted; returns its id and the actions (its `connect` record).
    public func connectionOpened(kind: ConnectionKind, peer: PeerCredentials?) -> (ConnectionID, [DaemonAction]) {
        let conn = Connection(id: nextConnection, kind: kind, peer: peer)
        nextConnection += 1
        if let limit = refusing.removeValue(forKey: kind) {
            record(.connectionLimit(.init(socket: kind.rawValue, action: "accept", limit: limit,
                                          refused: refusedConnections[kind] ?? 0)))
        }
        connections[conn.id] = conn
        record(.connect(.init(peer: conn.tracePeer, socket: kind.rawValue)))
        return (conn.id, take())
    }

    /// The shell refused a connection: `kind`'s socket has `limit` connections open. Counted; the first of a
    /// run of refusals is traced (`connectionLimit`, action `refuse`), the next accepted connection ends the run.
    public func connectionRefused(kind: ConnectionKind, limit: Int) -> [DaemonAction] {
        refusedConnections[kind, default: 0] += 1
        if refusing[kind] == nil {
            refusing[kind] = limit
            record(.connectionLimit(.init(socket: kind.rawValue, action: "refuse", limit: limit,
                                          refused: refusedConnections[kind] ?? 0)))
            emit(.log("hotspotd: \(kind.rawValue) socket: \(limit) connections open, the limit; refusing more until one closes"))
        }
        return take()
    }

    /// The shell's accept(2) on `kind`'s socket found no descriptor: counted (`status.connections.acceptFailures`).
    public func acceptFailed(kind: ConnectionKind) {
        acceptFailures[kind, default: 0] += 1
    }

    /// Bytes arrived on the connection: every complete frame is handled in order.
    public func received(_ id: ConnectionID, _ bytes: some Collection<UInt8>) -> [DaemonAction] {
        guard let conn = connections[id], !conn.closed else { return [] }
        conn.decoder.append(bytes)
        processFrames(conn)
        return take()
    }

    /// Handles the connection's complete frames in order; stops while a station request of it is carried out
    /// (its reply comes before the replies to the requests after it).
    func processFrames(_ conn: Connection) {
        while !conn.closed, !conn.awaitingStation {
            let payload: [UInt8]?
            do {
                payload = try conn.decoder.nextFrame()
            } catch {
                protocolError(conn, error, offending: nil)
                close(conn, reason: "protocol error: \(error.description)")
                break
            }
            guard let payload else { break }
            switch conn.kind {
            case .helper: helperFrame(conn, payload)
            case .control: controlFrame(conn, payload)
            }
        }
        watchPartialFrame(conn)
    }

    /// The peer ended the connection.
    public func endOfFile(_ id: ConnectionID) -> [DaemonAction] {
        guard let conn = connections[id] else { return [] }
        let partial = conn.decoder.bufferedCount
        close(conn, reason: partial > 0 ? "end of file inside a frame (\(partial) bytes buffered)" : "end of file")
        return take()
    }

    /// Reading or writing the connection failed (`reason` names the call and the error).
    public func transportFailed(_ id: ConnectionID, reason: String) -> [DaemonAction] {
        guard let conn = connections[id] else { return [] }
        close(conn, reason: reason)
        return take()
    }

    /// The peer took `count` queued bytes.
    public func wrote(_ id: ConnectionID, _ count: Int) {
        guard let conn = connections[id] else { return }
        conn.queued = max(0, conn.queued - count)
    }

    /// The bytes queued for the connection and not yet taken (nil: no such connection).
    public func queuedOutput(_ id: ConnectionID) -> Int? { connections[id]?.queued }

    /// A frame left incomplete for `partialFrameTimeout` ends the connection (its sender is stuck or hostile).
    private func watchPartialFrame(_ conn: Connection) {
        guard !conn.closed, !conn.awaitingStation else { return }
        if conn.decoder.bufferedCount == 0 {
            if conn.partialTimerArmed {
                conn.partialTimerArmed = false
                emit(.cancelTimer(.partialFrame(conn.id)))
            }
            return
        }
        guard !conn.partialTimerArmed else { return }
        conn.partialTimerArmed = true
        emit(.armTimer(.partialFrame(conn.id), after: options.partialFrameTimeout))
    }

    private func partialFrameTimedOut(_ id: ConnectionID) {
        guard let conn = connections[id], conn.partialTimerArmed else { return }
        conn.partialTimerArmed = false
        guard !conn.closed, conn.decoder.bufferedCount > 0 else { return }
        let e = ProtocolError(.incompleteFrame, "a frame stayed incomplete for \(options.partialFrameTimeout) (\(conn.decoder.bufferedCount) bytes buffered)")
        protocolError(conn, e, offending: nil)
        close(conn, reason: "protocol error: \(e.description)")
    }

    /// Queues a frame for the connection; a peer with more than its limit unread is closed (`overloaded`).
    func send(_ conn: Connection, _ bytes: [UInt8]) {
        guard !conn.closed else { return }
        conn.queued += bytes.count
        emit(.send(conn.id, bytes))
        let limit = Self.maximumQueuedOutput
        if conn.queued > limit, conn.queued > bytes.count {
            close(conn, reason: "peer does not read (more than \(limit) bytes queued)", overloaded: true)
        }
    }

    func close(_ conn: Connection, reason: String, notifyMachine: Bool = true, overloaded: Bool = false) {
        guard !conn.closed else { return }
        // Closed before any record is written: no record is sent to the connection being closed.
        conn.closed = true
        if conn.subscribed { subscribers.removeAll { $0 === conn } }
        if overloaded {
            record(.overloaded(.init(peer: conn.tracePeer, queued: conn.queued)))
        }
        if conn.partialTimerArmed {
            conn.partialTimerArmed = false
            emit(.cancelTimer(.partialFrame(conn.id)))
        }
        connections[conn.id] = nil
        record(.disconnect(.init(peer: conn.tracePeer, socket: conn.kind.rawValue, reason: reason, helper: conn.helperID)))
        emit(.close(conn.id))
        if let h = conn.helperID, helperConnections[h] === conn {
            helperConnections[h] = nil
            if notifyMachine { handle(.helperGone(h), source: .init(helper: h)) }
        }
        if let key = conn.provider { providerDisconnected(key, conn, reason: reason, notify: notifyMachine) }
    }

    func protocolError(_ conn: Connection, _ e: ProtocolError, offending: [UInt8]?, requestID: JSON? = nil) {
        var excerpt: String?
        if let offending { excerpt = String(decoding: offending.prefix(200), as: UTF8.self) }
        record(.protocolError(.init(peer: conn.tracePeer, socket: conn.kind.rawValue, code: e.code.rawValue, message: e.message,
                                    helper: conn.helperID, offending: excerpt, offendingBytes: offending?.count)))
        // Every error reply echoes the request's `requestID` when the request had one.
        let rid = requestID ?? offending.flatMap(Self.requestID(of:))
        switch conn.kind {
        case .helper: send(conn, frame(Self.helperError(e, offending: excerpt, requestID: rid).bytes))
        case .control: send(conn, frame(ControlReply.error(e, requestID: rid).bytes))
        }
    }

    /// The helper-socket `error` message, with the request's `requestID` when it had one.
    static func helperError(_ e: ProtocolError, offending: String?, requestID: JSON?) -> JSON {
        let json = DaemonMessage.error(e, offending: offending).json
        guard let requestID, case .object(var o) = json else { return json }
        o["requestID"] = requestID
        return .object(o)
    }

    /// The `requestID` of a frame that is a JSON object (whatever else is wrong with it).
    static func requestID(of payload: [UInt8]) -> JSON? {
        guard let json = try? JSON.parse(payload), case .object(let o) = json else { return nil }
        return o["requestID"]
    }

    // MARK: timers

    /// A timer the core armed fired.
    public func timerFired(_ timer: DaemonTimer) -> [DaemonAction] {
        switch timer {
        case .deadline(let id):
            if outstanding.removeValue(forKey: id) != nil {
                record(.timer(.init(timer: "deadline", command: Int(id))))
                handle(.deadlinePassed(id), source: .init(via: "timer"))
            }
        case .maintain:
            if maintainTimerArmed {
                maintainTimerArmed = false
                record(.timer(.init(timer: "maintain")))
                handle(.maintainTimerFired, source: .init(via: "timer"))
            }
        case .scanListRefresh:
            if let list = shownScanList {
                record(.timer(.init(timer: "scanListRefresh")))
                handle(.scanListShown(list), source: .init(via: "timer"))
                emit(.armTimer(.scanListRefresh, after: options.timing.scaledScanListRefresh))
            }
        case .partialFrame(let id):
            partialFrameTimedOut(id)
        case .providerIdle(let key), .providerStopGrace(let key), .providerKill(let key):
            providerTimerFired(timer, key)
        }
        return take()
    }

    // MARK: the station side

    /// An event observed on the interface (by the station driver).
    public func submit(_ event: Event, via: String) -> [DaemonAction] {
        handle(event, source: .init(via: via))
        return take()
    }

    /// The current association.
    public var association: HotspotNetwork? { machine.association }

    /// The last annotated scan list: the passwords helpers set for the networks they claim.
    public var annotatedScanList: [AnnotatedNetwork]? { lastScanList }
}
