import HotspotCore
import HotspotProtocol
import HotspotSystem

/// `DaemonCore` run in memory, like swift-nio's EmbeddedChannel: peers are objects that write frames and
/// read what the daemon queued for them; timers fire only when the `ManualClock` is advanced; network and
/// station actions are recorded; the state lives in a `MemoryStateStorage`. No sockets, threads or sleeps.
public final class EmbeddedDaemon {
    public let clock: ManualClock
    public let storage: MemoryStateStorage
    public let core: DaemonCore
    /// Every trace record, in order.
    public private(set) var records: [JSON] = []
    /// Every network action, in order.
    public private(set) var networkActions: [NetworkAction] = []
    /// Every station request, in order.
    public private(set) var stationRequests: [StationRequest] = []
    /// Every action the core produced, in order (`keepActions` false: none kept, for tests that send megabytes).
    public private(set) var actions: [DaemonAction] = []
    public var keepActions = true
    /// Lines the daemon wrote to stderr.
    public private(set) var logLines: [String] = []
    /// Answers station requests (a thrown error fails the request). Used only when built with `station: true`.
    public var stationHandler: (StationRequest) throws -> Void = { _ in }
    /// Every provider launch, in order; each gets the next pid (from 5001) unless `spawnFailure` is set.
    public private(set) var launches: [ProviderLaunch] = []
    /// Every SIGKILL the daemon asked for.
    public private(set) var kills: [Int32] = []
    /// When set, spawning a provider fails with this reason.
    public var spawnFailure: String?
    private var nextPID: Int32 = 5000

    private var armed: [DaemonTimer: (deadline: Duration, order: UInt64)] = [:]
    private var armOrder: UInt64 = 0
    /// When set, trace writes fail with this error (a full disk): each record is lost whole and reported to the
    /// core as `Daemon` reports `TraceWriter`'s failures; the first write after it is cleared recovers.
    public var traceWriteError: String?
    private var traceLoss: TraceLoss?
    fileprivate var outbound: [ConnectionID: [UInt8]] = [:]
    fileprivate var closed: Set<ConnectionID> = []

    public init(options: DaemonOptions = DaemonOptions(runDirectory: "/embedded"), state: PersistentState? = nil,
                station: Bool = false, start: Duration = .seconds(1000))
    {
        clock = ManualClock(start: start)
        storage = MemoryStateStorage(path: options.stateFile, saved: state)
        core = DaemonCore(options: options, clock: clock, wallClock: SystemWallClock(), store: storage, pid: 4242,
                          hasStation: station)
        run(core.start())
    }

    // MARK: peers

    /// A peer connected to the helper or control socket.
    public final class Peer {
        public let id: ConnectionID
        public let kind: ConnectionKind
        unowned let daemon: EmbeddedDaemon
        var decoder: FrameDecoder
        /// When true the peer takes nothing the daemon queues (a stalled reader).
        public var stalled = false

        init(id: ConnectionID, kind: ConnectionKind, daemon: EmbeddedDaemon) {
            self.id = id
            self.kind = kind
            self.daemon = daemon
            // A helper accepts the helper frame limit; a control client what docs/PROTOCOL.md promises it.
            decoder = FrameDecoder(maximumLength: kind == .helper ? maximumFrameLength : DaemonCore.maximumControlReply)
        }

        /// The daemon closed the connection.
        public var isClosed: Bool { daemon.closed.contains(id) }

        /// Bytes the daemon queued for this peer and the peer has not taken.
        public var unread: Int { daemon.outbound[id]?.count ?? 0 }

        public func sendBytes(_ bytes: [UInt8]) { daemon.run(daemon.core.received(id, bytes)) }
        public func send(_ json: JSON) { sendBytes(frame(json.bytes)) }
        public func send(_ message: HelperMessage) { sendBytes(message.framed) }
        public func send(_ request: ControlRequest) { send(request.json) }

        /// The peer ends the connection.
        public func close() { daemon.run(daemon.core.endOfFile(id)) }

        /// Takes every message the daemon queued (throws what a real peer's decoder would, e.g. a frame over
        /// the peer's limit).
        public func read() throws(ProtocolError) -> [JSON] {
            let bytes = daemon.outbound.removeValue(forKey: id) ?? []
            daemon.core.wrote(id, bytes.count)
            decoder.append(bytes)
            var out: [JSON] = []
            while let p = try decoder.nextFrame() { out.append(try JSON.parse(p)) }
            return out
        }

        /// The first message of `type` waiting (the messages before it are dropped), nil if none.
        public func read(type: String) throws(ProtocolError) -> JSON? {
            try read().first { $0["type"]?.stringValue == type }
        }

        /// Sends a control request and returns its reply (trace records before it skipped).
        public func request(_ request: ControlRequest, requestID: JSON? = nil) throws(ProtocolError) -> JSON? {
            var json = request.json
            if let requestID, case .object(var o) = json {
                o["requestID"] = requestID
                json = .object(o)
            }
            send(json)
            return try read().last { $0["type"]?.stringValue != "trace" }
        }
    }

    /// Connects a peer to the helper or control socket.
    public func connect(_ kind: ConnectionKind, peer: PeerCredentials? = nil) -> Peer {
        let (id, actions) = core.connectionOpened(kind: kind, peer: peer)
        let p = Peer(id: id, kind: kind, daemon: self)
        run(actions)
        return p
    }

    /// Connects a helper and registers it; the `registered` reply is read.
    public func helper(_ identifier: String, displayName: String? = nil) throws(ProtocolError) -> Peer {
        let p = connect(.helper)
        p.send(.register(identifier: identifier, displayName: displayName ?? String(identifier.prefix(15)), version: protocolVersion))
        _ = try p.read()
        return p
    }

    // MARK: time and the station

    /// Moves the clock forward, firing every timer that comes due on the way, in deadline order.
    public func advance(by d: Duration) {
        let end = clock.now() + d
        while let (timer, due) = armed.min(by: { ($0.value.deadline, $0.value.order) < ($1.value.deadline, $1.value.order) })
            .map({ ($0.key, $0.value.deadline) }), due <= end
        {
            armed[timer] = nil
            if due > clock.now() { clock.set(due) }
            run(core.timerFired(timer))
        }
        clock.set(end)
    }

    /// Timers armed now, with how long until each fires.
    public var armedTimers: [DaemonTimer: Duration] { armed.mapValues { $0.deadline - clock.now() } }

    /// An event observed by the station driver.
    public func submit(_ event: Event, via: String = "embedded") { run(core.submit(event, via: via)) }

    /// The daemon stops (`stop` record, every connection closed).
    public func stop() { run(core.stop()) }

    // MARK: the trace

    /// The records written so far, read (`TraceEntry`).
    public var entries: [TraceEntry] { records.map(TraceEntry.init(json:)) }

    public func records(_ kind: String) -> [JSON] { entries.filter { $0.kind == kind }.map(\.written) }

    public func commands(_ type: CommandType? = nil) -> [JSON] {
        entries.filter { e in e.record.command.map { type == nil || $0.commandType == type?.description } ?? false }.map(\.written)
    }

    public func transitions() -> [String] {
        entries.compactMap(\.record.transition).map { "\($0.from)->\($0.to)" }
    }

    // MARK: carrying out actions

    private let queue = ActionQueue()

    /// Carries actions out in order; actions produced meanwhile (a station request's outcome) come after.
    func run(_ actions: [DaemonAction]) {
        queue.run(actions) { carryOut($0) }
    }

    private func carryOut(_ action: DaemonAction) {
        if keepActions { actions.append(action) }
        switch action {
        case .send(let id, let bytes):
            outbound[id, default: []].append(contentsOf: bytes)
        case .close(let id):
            closed.insert(id)
        case .armTimer(let timer, let after):
            armOrder += 1
            armed[timer] = (clock.now() + after, armOrder)
        case .cancelTimer(let timer):
            armed[timer] = nil
        case .trace(let record):
            if let error = traceWriteError {
                // Lost as `TraceWriter` loses a record on a full disk: not kept, counted by the core.
                let seq = TraceEntry.position(of: record).seq.intValue ?? 0
                let first = traceLoss == nil
                if var loss = traceLoss {
                    loss.lastSeq = seq
                    loss.records += 1
                    traceLoss = loss
                } else {
                    traceLoss = TraceLoss(file: "embedded", error: error, records: 1, firstSeq: seq, lastSeq: seq)
                }
                run(core.traceWriteFailed(error: error, first: first))
            } else {
                records.append(record)
                if let loss = traceLoss {
                    traceLoss = nil
                    run(core.traceWriteRecovered(loss))
                }
            }
        case .network(let n):
            networkActions.append(n)
        case .station(let request, let replyTo):
            stationRequests.append(request)
            var failure: String?
            do { try stationHandler(request) } catch { failure = "\(error)" }
            run(core.stationRequestFinished(replyTo, error: failure))
        case .log(let line):
            logLines.append(line)
        case .launchProvider(let launch):
            launches.append(launch)
            if let failure = spawnFailure {
                run(core.providerSpawnFailed(launch.key, reason: failure))
            } else {
                nextPID += 1
                run(core.providerSpawned(launch.key, pid: nextPID))
            }
        case .killProcess(let pid):
            kills.append(pid)
        }
    }

    /// A provider process ended (as the shell reports it when it reaps the child).
    public func providerExited(pid: Int32, status: Int32? = 0, signal: Int32? = nil) {
        run(core.providerExited(pid: pid, status: status, signal: signal))
    }
}
