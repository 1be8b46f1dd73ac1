import HotspotCore
import HotspotProtocol
import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// What a station driver may do with the daemon: feed it events, add trace records, run code on its loop,
/// and read the association and the annotated scan list. `Daemon` is one; tests may pass their own.
public protocol StationEventSink: AnyObject {
    /// Feeds an event observed on the interface. Loop thread only.
    func submit(_ event: Event, via: String)
    /// Records a trace record (a `station` or `error` record): the driver's own evidence. Loop thread only.
    func record(_ record: TraceRecord)
    /// Runs `body` on the loop thread. Thread-safe.
    func post(_ body: @escaping () -> Void)
    /// The current association (loop thread only).
    var association: HotspotNetwork? { get }
    /// The last annotated scan list (loop thread only).
    var annotatedScanList: [AnnotatedNetwork]? { get }
}

/// hotspotd's shell: carries `DaemonCore`'s actions out on two listening Unix sockets and a poll(2) loop.
/// Single-threaded: everything runs on the event loop's thread.
public final class Daemon: StationEventSink, @unchecked Sendable {  // @unchecked: single-threaded, state touched only on the loop's thread (`post` hands work to it)
    public let options: DaemonOptions
    public let loop: EventLoop
    public let trace: TraceWriter
    public let core: DaemonCore
    public var machine: HotspotMachine { core.machine }
    let network: any NetworkControl

    /// One accepted socket and the output the peer has not taken yet: the frames as the core made them (a trace
    /// record's frame is one array shared by every subscriber's queue, not a copy each), the first one written
    /// up to `offset`. What it holds is what the core counts as queued (`DaemonCore.maximumQueuedOutput`).
    private final class Link {
        let socket: UnixSocket
        let kind: ConnectionKind
        var frames: [[UInt8]] = []
        var head = 0
        var offset = 0
        init(socket: UnixSocket, kind: ConnectionKind) {
            self.socket = socket
            self.kind = kind
        }
        var hasOutput: Bool { head < frames.count }
        func enqueue(_ bytes: [UInt8]) {
            if head == frames.count {
                frames.removeAll(keepingCapacity: frames.count <= 64)
                head = 0
            } else if head >= 64, head * 2 >= frames.count {
                frames.removeFirst(head)
                head = 0
            }
            frames.append(bytes)
        }
    }

    private var helperListener: UnixSocket?
    private var controlListener: UnixSocket?
    private var links: [ConnectionID: Link] = [:]
    private var timers: [DaemonTimer: EventLoop.TimerID] = [:]
    private var readBuffer = [UInt8](repeating: 0, count: 65_536)
    /// Provider processes not reaped yet, by pid.
    private var children: [Int32: ChildProcess] = [:]

    /// Output queued for a helper that does not read; past it the connection is closed.
    public static let maximumQueuedOutput = DaemonCore.maximumQueuedOutput

    /// The device side (wpa_supplicant, DHCP) when hotspotd runs a real station; nil when association and
    /// IP come over the control socket.
    let station: (any StationDriver)?

    public init(options: DaemonOptions, network: (any NetworkControl)? = nil, station: (any StationDriver)? = nil,
                clock: any MonotonicClock = SystemMonotonicClock(), wallClock: any WallClock = SystemWallClock(),
                store: (any StateStorage)? = nil)
        throws(SystemError)
    {
        self.station = station
        self.options = options
        try UnixSocket.makeDirectory(options.runDirectory, mode: 0o700)
        loop = try EventLoop(clock: clock)
        trace = try TraceWriter(path: options.traceFile, maximumBytes: options.traceMaximumBytes)
        trace.echo = options.echoTrace
        core = DaemonCore(options: options, clock: clock, wallClock: wallClock,
                          store: store ?? FileStateStorage(path: options.stateFile), pid: getpid(), hasStation: station != nil)
        if let network {
            self.network = network
        } else {
            let hook = HookNetworkControl(hook: options.hook)
            self.network = hook
            hook.onFinish = { [weak self] argv, status, error in
                self?.loop.post { [weak self] in
                    self?.record(.hook(.init(argv: argv, status: status.map { Int($0) }, error: error)))
                }
            }
        }
        core.peerHasClosed = { [unowned self] id in self.links[id]?.socket.peerHasClosed ?? true }
    }

    // MARK: lifecycle

    /// Loads the persisted state and listens on both sockets. Throws only for socket errors (never for a bad state file).
    public func start() throws(SystemError) {
        perform(core.start())
        takeReserve()
        let h = try UnixSocket.listen(path: options.helperSocket)
        let c = try UnixSocket.listen(path: options.controlSocket)
        helperListener = h
        controlListener = c
        loop.watch(h.fd) { [unowned self] _, _, _ in self.acceptAll(h, kind: .helper) }
        loop.watch(c.fd) { [unowned self] _, _, _ in self.acceptAll(c, kind: .control) }
        if let station {
            do {
                try station.attach(to: self)
            } catch {
                throw SystemError("attach the station driver for", options.interface, reason: "\(error)")
            }
        }
    }

    /// Feeds an event observed on the interface (by the station driver). Loop thread only.
    public func submit(_ event: Event, via: String) { perform(core.submit(event, via: via)) }

    /// Thread-safe: runs `body` on the loop thread.
    public func post(_ body: @escaping () -> Void) { loop.post(body) }

    /// Records a trace record (loop thread only): the station driver's own evidence.
    public func record(_ record: TraceRecord) { perform(core.externalRecord(record)) }

    /// The current association (loop thread only).
    public var association: HotspotNetwork? { core.association }

    /// The last annotated scan list (loop thread only): the passwords helpers set for the networks they claim.
    public var annotatedScanList: [AnnotatedNetwork]? { core.annotatedScanList }

    /// The control API's `status` answer (loop thread only).
    public var status: JSON { core.status }

    /// Runs the event loop until `stop()`.
    public func run() {
        loop.run()
        station?.detach()
        perform(core.stop())
        // Providers outlive nothing: their connections are closed; what is still running is terminated.
        for child in children.values { try? child.signal(SIGTERM) }
        helperListener?.close()
        controlListener?.close()
        unlink(options.helperSocket)
        unlink(options.controlSocket)
    }

    /// Thread-safe.
    public func stop() { loop.stop() }

    // MARK: carrying out the core's actions

    /// Actions not carried out yet, in the order the core produced them (the trace file stays in `seq` order
    /// when carrying one out calls the core again: a failed write, the station driver's own records).
    private let queue = ActionQueue()

    private func perform(_ actions: [DaemonAction]) {
        queue.run(actions) { carryOut($0) }
    }

    private func carryOut(_ action: DaemonAction) {
        switch action {
        case .send(let id, let bytes):
            guard let link = links[id] else { return }
            link.enqueue(bytes)
            flush(id)
        case .close(let id):
            guard let link = links.removeValue(forKey: id) else { return }
            loop.unwatch(link.socket.fd)
            link.socket.close()
            open[link.kind, default: 0] -= 1
            descriptorFreed()
        case .armTimer(let timer, let after):
            if let t = timers[timer] { loop.cancel(t) }
            timers[timer] = loop.schedule(after: after) { [unowned self] in
                self.timers[timer] = nil
                self.perform(self.core.timerFired(timer))
            }
        case .cancelTimer(let timer):
            if let t = timers.removeValue(forKey: timer) { loop.cancel(t) }
        case .trace(let record):
            switch trace.write(record) {
            case .written: break
            case .recovered(let loss): perform(core.traceWriteRecovered(loss))
            case .failed(let error, let first): perform(core.traceWriteFailed(error: error, first: first))
            }
        case .network(let n):
            n.perform(on: network)
        case .station(let request, let replyTo):
            var failure: String?
            if let station {
                do { try request.perform(on: station) } catch { failure = "\(error)" }
            } else {
                failure = "no station driver"
            }
            perform(core.stationRequestFinished(replyTo, error: failure))
        case .log(let line):
            logError(line)
        case .launchProvider(let launch):
            spawnProvider(launch)
        case .killProcess(let pid):
            if let child = children[pid] { try? child.signal(SIGKILL) }
        }
    }

    // MARK: provider processes

    /// Spawns a provider with hotspotd's environment plus the launch's; a task reaps it and reports its exit.
    private func spawnProvider(_ launch: ProviderLaunch) {
        guard let executable = launch.argv.first else {
            perform(core.providerSpawnFailed(launch.key, reason: "spawn \(launch.key): empty command"))
            return
        }
        var environment: [String: String] = [:]
        var e = environ
        while let p = e.pointee {
            let entry = String(cString: p)
            if let eq = entry.firstIndex(of: "=") { environment[String(entry[..<eq])] = String(entry[entry.index(after: eq)...]) }
            e += 1
        }
        environment.merge(launch.environment) { _, new in new }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(ProcessConfiguration(executable, Array(launch.argv.dropFirst()), environment: environment))
        } catch {
            perform(core.providerSpawnFailed(launch.key, reason: "spawn \(launch.argv.joined(separator: " ")): \(error)"))
            return
        }
        let pid = child.pid
        children[pid] = child
        perform(core.providerSpawned(launch.key, pid: pid))
        Task.detached { [weak self] in
            let status = try? await child.waitAsync()
            self?.loop.post { [weak self] in
                guard let self else { return }
                self.children[pid] = nil
                var code: Int32?
                var signal: Int32?
                switch status {
                case .exited(let c): code = c
                case .signaled(let s): signal = s
                case nil: break
                }
                // Causal order: what the provider wrote before it exited (its `stopped` answer) comes before its exit.
                // Reaped first, its connection was closed unread and the answer lost (in-VM certify of the reference
                // provider pair, CI run 48: start-stop failed with "no stopped answer first" for a provider that had
                // answered and exited 0).
                if let id = self.core.providerConnectionID(pid: pid) { self.readFrom(id) }
                self.perform(self.core.providerExited(pid: pid, status: code, signal: signal))
            }
        }
    }

    // MARK: sockets

    /// Open connections per socket, and the most each may have (`connectionLimits`).
    private var open: [ConnectionKind: Int] = [:]
    private lazy var limits = Self.connectionLimits(descriptorLimit: UnixSocket.descriptorLimit())
    /// A listener not watched while accept(2) fails for want of descriptors (EMFILE, ENFILE): the next try, and
    /// the wait before it (doubling up to a second).
    private var acceptBackoff: [ConnectionKind: Duration] = [:]
    /// The pending retry of a listener that is backing off.
    private var acceptRetry: [ConnectionKind: EventLoop.TimerID] = [:]
    /// The control socket's reserve descriptor (`takeReserve`), -1 while it is lent out.
    private var reserveFD: Int32 = -1

    /// The most connections each socket keeps open (docs/RELIABILITY.md): 1,024 together, fewer when the
    /// descriptor limit is low (64 descriptors stay for the trace, the state file, providers and hooks); a
    /// quarter of them, at least 1, is the control socket's, so a flood of helpers never locks out `ctl status`.
    public static func connectionLimits(descriptorLimit: Int) -> [ConnectionKind: Int] {
        let total = max(2, min(maximumConnections, descriptorLimit - 64))
        let control = max(1, total / 4)
        return [.helper: total - control, .control: control]
    }
    public static let maximumConnections = 1024

    private func acceptAll(_ listener: UnixSocket, kind: ConnectionKind) {
        while true {
            let s: UnixSocket?
            do {
                s = try listener.accept()
            } catch {
                if error.errno == EMFILE || error.errno == ENFILE || error.errno == ENOBUFS || error.errno == ENOMEM {
                    core.acceptFailed(kind: kind)
                    // The control socket's reserve descriptor is given up for this one client (`ctl status` at the limit).
                    if kind == .control, error.errno == EMFILE || error.errno == ENFILE, reserveFD >= 0 {
                        _ = Glibc.close(reserveFD)
                        reserveFD = -1
                        continue
                    }
                    backOff(listener, kind: kind, error)
                } else {
                    record(.error(.init(message: error.description)))
                }
                return
            }
            guard let s else { return }
            if acceptBackoff[kind] != nil {
                acceptBackoff[kind] = nil
                record(.connectionLimit(.init(socket: kind.rawValue, action: "resume", open: open[kind] ?? 0)))
            }
            let limit = limits[kind] ?? 1
            if open[kind, default: 0] >= limit {
                // Past the cap the peer is told and closed at once: the backlog drains, nothing is kept for it.
                perform(core.connectionRefused(kind: kind, limit: limit))
                let e = ProtocolError(.requestFailed, "hotspotd has \(limit) \(kind.rawValue) connections open, its limit; try again later")
                _ = try? frame((kind == .control ? ControlReply.error(e, requestID: nil) : DaemonMessage.error(e, offending: nil).json).bytes)
                    .withUnsafeBytes { try s.write($0) }
                s.close()
                continue
            }
            open[kind, default: 0] += 1
            let (id, actions) = core.connectionOpened(kind: kind, peer: try? s.peerCredentials())
            links[id] = Link(socket: s, kind: kind)
            loop.watch(s.fd) { [unowned self] readable, writable, hangup in
                if writable { self.flush(id) }
                if readable || hangup { self.readFrom(id) }
            }
            perform(actions)
        }
    }

    /// accept(2) has no descriptor to give: the listener is not watched for a while (it would be readable at
    /// once again: a busy loop), said once per run of failures.
    private func backOff(_ listener: UnixSocket, kind: ConnectionKind, _ error: SystemError) {
        let wait: Duration
        if let previous = acceptBackoff[kind] {
            wait = min(previous * 2, .seconds(1))
        } else {
            wait = .milliseconds(10)
            record(.connectionLimit(.init(socket: kind.rawValue, action: "backOff", error: error.description, open: open[kind] ?? 0)))
            logError("hotspotd: \(error); not accepting \(kind.rawValue) connections for a while (retrying, up to every second)")
        }
        acceptBackoff[kind] = wait
        loop.unwatch(listener.fd)
        retryAccept(listener, kind: kind, after: wait)
    }

    /// Watches the listener again `after` from now and accepts what waits (one retry per listener at a time).
    private func retryAccept(_ listener: UnixSocket, kind: ConnectionKind, after: Duration) {
        if let t = acceptRetry.removeValue(forKey: kind) { loop.cancel(t) }
        acceptRetry[kind] = loop.schedule(after: after) { [unowned self] in
            self.acceptRetry[kind] = nil
            self.loop.watch(listener.fd) { [unowned self] _, _, _ in self.acceptAll(listener, kind: kind) }
            self.acceptAll(listener, kind: kind)
        }
    }

    /// A connection closed: its descriptor is free. The control socket's reserve is taken back first, then a
    /// listener that is backing off tries again at once (recovery does not wait for the back-off's second).
    private func descriptorFreed() {
        takeReserve()
        for kind in Array(acceptBackoff.keys) {
            guard let listener = kind == .helper ? helperListener : controlListener else { continue }
            retryAccept(listener, kind: kind, after: .zero)
        }
    }

    /// One descriptor (/dev/null) held for the control socket: when accept(2) on it finds no descriptor, this one
    /// is closed and the control client accepted in its place, so a new `ctl status` is answered even with every
    /// other descriptor taken (docs/RELIABILITY.md). Taken again when a connection closes.
    private func takeReserve() {
        guard reserveFD < 0 else { return }
        reserveFD = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    private func readFrom(_ id: ConnectionID) {
        while let link = links[id] {
            let outcome: ReadOutcome
            do {
                outcome = try readBuffer.withUnsafeMutableBytes { p in try link.socket.read(into: p) }
            } catch {
                perform(core.transportFailed(id, reason: "\(error)"))
                return
            }
            switch outcome {
            case .wouldBlock:
                return
            case .endOfFile:
                perform(core.endOfFile(id))
                return
            case .bytes(let n):
                perform(core.received(id, readBuffer[0..<n]))
            }
        }
    }

    private func flush(_ id: ConnectionID) {
        guard let link = links[id] else { return }
        while link.hasOutput {
            let n: Int
            do {
                n = try link.frames[link.head].withUnsafeBytes { p in
                    try link.socket.write(UnsafeRawBufferPointer(rebasing: p[link.offset...]))
                }
            } catch {
                perform(core.transportFailed(id, reason: "\(error)"))
                return
            }
            if n == 0 { break }
            link.offset += n
            if link.offset == link.frames[link.head].count {
                link.frames[link.head] = []
                link.head += 1
                link.offset = 0
            }
            core.wrote(id, n)
        }
        loop.setInterest(link.socket.fd, read: true, write: link.hasOutput)
    }
}
