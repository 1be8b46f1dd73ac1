import HotspotCore
import HotspotProtocol
import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// The trace format (docs/TRACE.md) this daemon writes; in every `start` record. A replay refuses a newer one.
public let traceFormatVersion = 1

/// hotspotd's configuration.
public struct DaemonOptions: Sendable {
    /// Holds the sockets (mode 0700), the state file and the trace unless given elsewhere.
    public var runDirectory: String
    public var helperSocket: String
    public var controlSocket: String
    public var stateFile: String
    /// nil: no trace file (subscribers still get every record).
    public var traceFile: String?
    /// The one Wi-Fi interface this daemon manages.
    public var interface: String
    public var timing: Timing
    /// See `HookNetworkControl`.
    public var hook: String?
    /// Copy every trace record to stderr.
    public var echoTrace: Bool
    /// How long a started frame may stay incomplete before the connection is closed (not scaled).
    public var partialFrameTimeout: Duration = .seconds(10)

    public init(runDirectory: String, interface: String = "wlan0", timing: Timing = .standard, hook: String? = nil,
                echoTrace: Bool = false)
    {
        self.runDirectory = runDirectory
        helperSocket = runDirectory + "/helper.sock"
        controlSocket = runDirectory + "/control.sock"
        stateFile = runDirectory + "/state.json"
        traceFile = runDirectory + "/trace.jsonl"
        self.interface = interface
        self.timing = timing
        self.hook = hook
        self.echoTrace = echoTrace
    }
}

/// One accepted connection (helper or control).
final class Connection {
    enum Kind: String { case helper, control }
    let id: Int
    let kind: Kind
    let socket: UnixSocket
    let peer: PeerCredentials?
    var decoder = FrameDecoder()
    var out: [UInt8] = []
    var outStart = 0
    var helperID: HelperID?
    var subscribed = false
    var closed = false
    var partialTimer: EventLoop.TimerID?

    init(id: Int, kind: Kind, socket: UnixSocket, peer: PeerCredentials?) {
        self.id = id
        self.kind = kind
        self.socket = socket
        self.peer = peer
    }

    var peerFields: [String: JSON] {
        guard let peer else { return ["connection": .number(Double(id))] }
        return ["connection": .number(Double(id)), "pid": .number(Double(peer.pid)), "uid": .number(Double(peer.uid)),
                "gid": .number(Double(peer.gid))]
    }
}

/// hotspotd: drives `HotspotMachine` for one interface from helper and control sockets, timers and persistence.
/// Single-threaded: everything runs on the event loop's thread.
public final class Daemon: @unchecked Sendable {
    public let options: DaemonOptions
    public let loop: EventLoop
    public let trace: TraceWriter
    public private(set) var machine: HotspotMachine
    let network: any NetworkControl
    let store: StateStore

    private var helperListener: UnixSocket?
    private var controlListener: UnixSocket?
    private var connections: [Int32: Connection] = [:]
    private var helperConnections: [HelperID: Connection] = [:]
    private var nextConnection = 1

    private struct Outstanding {
        var timer: EventLoop.TimerID?
        var sentAt: Duration
        var command: Command
    }
    private var outstanding: [CommandID: Outstanding] = [:]
    private var maintainTimer: EventLoop.TimerID?
    private var scanRefresh: EventLoop.TimerID?
    private var shownScanList: [HotspotNetwork]?
    private var lastScanList: [AnnotatedNetwork]?
    private var notifications: [JSON] = []
    private var effects: [Effect] = []
    /// Where the answer of the `logoffRequested` being handled goes.
    private var logoffReply: ((Bool) -> Void)?
    private var persistDirty = false

    /// Output queued for a peer that does not read; past it the connection is closed.
    public static let maximumQueuedOutput = 4 << 20

    /// The device side (wpa_supplicant, DHCP) when hotspotd runs a real station; nil when association and
    /// IP come over the control socket.
    let station: (any StationDriver)?

    public init(options: DaemonOptions, network: (any NetworkControl)? = nil, station: (any StationDriver)? = nil,
                clock: any MonotonicClock = SystemMonotonicClock())
        throws(SystemError)
    {
        self.station = station
        self.options = options
        try UnixSocket.makeDirectory(options.runDirectory, mode: 0o700)
        loop = try EventLoop(clock: clock)
        trace = try TraceWriter(path: options.traceFile, clock: clock)
        trace.echo = options.echoTrace
        store = StateStore(path: options.stateFile)
        machine = HotspotMachine(timing: options.timing)
        effects.reserveCapacity(32)
        if let network {
            self.network = network
        } else {
            let hook = HookNetworkControl(hook: options.hook)
            self.network = hook
            let loop = self.loop
            let trace = self.trace
            hook.onFinish = { argv, status, error in
                loop.post {
                    var o: [String: JSON] = ["argv": .array(argv.map(JSON.string))]
                    if let status { o["status"] = .number(Double(status)) }
                    if let error { o["error"] = .string(error) }
                    trace.record("hook", o)
                }
            }
        }
    }

    // MARK: lifecycle

    /// Loads the persisted state and listens on both sockets. Throws only for socket errors (never for a bad state file).
    public func start() throws(SystemError) {
        var startFields: [String: JSON] = [
            "pid": .number(Double(getpid())), "interface": .string(options.interface),
            "helperSocket": .string(options.helperSocket), "controlSocket": .string(options.controlSocket),
            "stateFile": .string(options.stateFile), "timeScale": .number(options.timing.scale),
            "protocolVersion": .number(Double(protocolVersion)), "traceVersion": .number(Double(traceFormatVersion)),
            "maintainInterval_ms": .number(options.timing.scaledMaintainInterval.milliseconds),
        ]
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        startFields["wallclock_s"] = .number(Double(ts.tv_sec))
        let stale = store.removeStaleTemporaries()
        if !stale.isEmpty { startFields["removedTemporaries"] = .array(stale.map(JSON.string)) }
        switch store.load() {
        case .missing:
            startFields["state"] = "none"
        case .loaded(let s):
            machine = HotspotMachine(timing: options.timing, cache: s.cache, autoJoinDisabled: s.autoJoinDisabled)
            startFields["state"] = "loaded"
        case .corrupt(let reason, let movedTo):
            startFields["state"] = "corrupt"
            let message = "warning: state file \(options.stateFile) is corrupt (\(reason)); "
                + (movedTo.map { "moved to \($0); " } ?? "") + "starting clean"
            logError("hotspotd: \(message)")
            trace.record("warning", ["message": .string(message), "movedTo": movedTo.map(JSON.string) ?? .null])
        }
        startFields["persisted"] = persistentState.json
        trace.record("start", startFields)

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
    public func submit(_ event: Event, via: String) {
        handle(event, source: ["via": .string(via)])
    }

    /// Thread-safe: runs `body` on the loop thread.
    public func post(_ body: @escaping () -> Void) { loop.post(body) }

    /// Records a trace line of kind `kind` (loop thread only): the station driver's own evidence.
    public func record(_ kind: String, _ fields: [String: JSON]) { trace.record(kind, fields) }

    /// The current association (loop thread only).
    public var association: HotspotNetwork? { machine.association }

    /// The last annotated scan list (loop thread only): the passwords helpers set for the networks they claim.
    public var annotatedScanList: [AnnotatedNetwork]? { lastScanList }

    /// Runs the event loop until `stop()`.
    public func run() {
        loop.run()
        station?.detach()
        trace.record("stop", [:])
        for conn in Array(connections.values) { close(conn, reason: "daemon stopping", notifyMachine: false) }
        helperListener?.close()
        controlListener?.close()
        unlink(options.helperSocket)
        unlink(options.controlSocket)
    }

    /// Thread-safe.
    public func stop() { loop.stop() }

    var persistentState: PersistentState {
        PersistentState(cache: machine.cache, autoJoinDisabled: machine.autoJoinDisabled)
    }

    // MARK: connections

    private func acceptAll(_ listener: UnixSocket, kind: Connection.Kind) {
        while true {
            let s: UnixSocket?
            do {
                s = try listener.accept()
            } catch {
                trace.record("error", ["message": .string(error.description)])
                return
            }
            guard let s else { return }
            let peer = try? s.peerCredentials()
            let conn = Connection(id: nextConnection, kind: kind, socket: s, peer: peer)
            nextConnection += 1
            connections[s.fd] = conn
            var f = conn.peerFields
            f["socket"] = .string(kind.rawValue)
            trace.record("connect", f)
            // The watch holds the connection; `close` unwatches it, which releases it.
            loop.watch(s.fd) { [unowned self, conn] readable, writable, hangup in
                if writable { self.flush(conn) }
                if (readable || hangup) && !conn.closed { self.readFrom(conn) }
            }
        }
    }

    private var readBuffer = [UInt8](repeating: 0, count: 65_536)

    private func readFrom(_ conn: Connection) {
        while !conn.closed {
            let outcome: ReadOutcome
            do {
                outcome = try readBuffer.withUnsafeMutableBytes { p in try conn.socket.read(into: p) }
            } catch {
                close(conn, reason: "\(error)")
                return
            }
            switch outcome {
            case .wouldBlock:
                return
            case .endOfFile:
                let partial = conn.decoder.bufferedCount
                close(conn, reason: partial > 0 ? "end of file inside a frame (\(partial) bytes buffered)" : "end of file")
                return
            case .bytes(let n):
                readBuffer.withUnsafeBytes { p in conn.decoder.append(UnsafeRawBufferPointer(rebasing: p[0..<n])) }
                while !conn.closed {
                    let payload: [UInt8]?
                    do {
                        payload = try conn.decoder.nextFrame()
                    } catch {
                        protocolError(conn, error, offending: nil)
                        close(conn, reason: "protocol error: \(error.description)")
                        return
                    }
                    guard let payload else { break }
                    switch conn.kind {
                    case .helper: helperFrame(conn, payload)
                    case .control: controlFrame(conn, payload)
                    }
                }
                watchPartialFrame(conn)
            }
        }
    }

    /// A frame left incomplete for `partialFrameTimeout` ends the connection (its sender is stuck or hostile).
    private func watchPartialFrame(_ conn: Connection) {
        guard !conn.closed else { return }
        if conn.decoder.bufferedCount == 0 {
            if let t = conn.partialTimer { loop.cancel(t); conn.partialTimer = nil }
            return
        }
        guard conn.partialTimer == nil else { return }
        conn.partialTimer = loop.schedule(after: options.partialFrameTimeout) { [unowned self, conn] in
            conn.partialTimer = nil
            guard !conn.closed, conn.decoder.bufferedCount > 0 else { return }
            let e = ProtocolError(.incompleteFrame, "a frame stayed incomplete for \(self.options.partialFrameTimeout) (\(conn.decoder.bufferedCount) bytes buffered)")
            self.protocolError(conn, e, offending: nil)
            self.close(conn, reason: "protocol error: \(e.description)")
        }
    }

    func send(_ conn: Connection, _ bytes: [UInt8]) {
        guard !conn.closed else { return }
        if conn.outStart == conn.out.count {
            conn.out.removeAll(keepingCapacity: true)
            conn.outStart = 0
        }
        conn.out.append(contentsOf: bytes)
        flush(conn)
        if !conn.closed, conn.out.count - conn.outStart > Self.maximumQueuedOutput {
            var f = conn.peerFields
            f["queued"] = .number(Double(conn.out.count - conn.outStart))
            trace.record("overloaded", f)
            close(conn, reason: "peer does not read (more than \(Self.maximumQueuedOutput) bytes queued)")
        }
    }

    private func flush(_ conn: Connection) {
        guard !conn.closed else { return }
        while conn.outStart < conn.out.count {
            let n: Int
            do {
                n = try conn.out.withUnsafeBytes { p in try conn.socket.write(UnsafeRawBufferPointer(rebasing: p[conn.outStart...])) }
            } catch {
                close(conn, reason: "\(error)")
                return
            }
            if n == 0 { break }
            conn.outStart += n
        }
        loop.setInterest(conn.socket.fd, read: true, write: conn.outStart < conn.out.count)
    }

    private func close(_ conn: Connection, reason: String, notifyMachine: Bool = true) {
        guard !conn.closed else { return }
        conn.closed = true
        if let t = conn.partialTimer { loop.cancel(t); conn.partialTimer = nil }
        loop.unwatch(conn.socket.fd)
        connections[conn.socket.fd] = nil
        var f = conn.peerFields
        f["socket"] = .string(conn.kind.rawValue)
        f["reason"] = .string(reason)
        if let h = conn.helperID { f["helper"] = .string(h) }
        trace.record("disconnect", f)
        conn.socket.close()
        if let h = conn.helperID, helperConnections[h] === conn {
            helperConnections[h] = nil
            if notifyMachine { handle(.helperGone(h), source: ["helper": .string(h)]) }
        }
        if conn.subscribed { rebuildSubscribers() }
    }

    private func protocolError(_ conn: Connection, _ e: ProtocolError, offending: [UInt8]?) {
        var f = conn.peerFields
        f["socket"] = .string(conn.kind.rawValue)
        f["code"] = .string(e.code.rawValue)
        f["message"] = .string(e.message)
        if let h = conn.helperID { f["helper"] = .string(h) }
        var excerpt: String?
        if let offending {
            let cut = Array(offending.prefix(200))
            excerpt = String(decoding: cut, as: UTF8.self)
            f["offending"] = .string(excerpt!)
            f["offendingBytes"] = .number(Double(offending.count))
        }
        trace.record("protocolError", f)
        switch conn.kind {
        case .helper: send(conn, DaemonMessage.error(e, offending: excerpt).framed)
        case .control: send(conn, frame(ControlReply.error(e, requestID: nil).bytes))
        }
    }

    // MARK: helper messages

    private func helperFrame(_ conn: Connection, _ payload: [UInt8]) {
        let message: HelperMessage
        do {
            message = try HelperMessage(bytes: payload)
        } catch {
            protocolError(conn, error, offending: payload)
            return
        }
        if case .register(let identifier, let displayName, let version) = message {
            register(conn, identifier, displayName, version, payload)
            return
        }
        guard let helper = conn.helperID else {
            protocolError(conn, ProtocolError(.notRegistered, "send \"register\" before any other message"), offending: payload)
            return
        }
        switch message {
        case .register:
            break
        case .response(let id, let result, let network, let list):
            let now = loop.clock.now()
            var f: [String: JSON] = [
                "helper": .string(helper), "command": .number(Double(id)), "result": .string(result.description),
                "resultCode": .number(Double(result.rawValue)),
            ]
            if let o = outstanding[id] {
                f["commandType"] = .string(o.command.type.description)
                f["latency_us"] = .number(((now - o.sentAt).milliseconds * 1000).rounded())
            }
            if let network { f["network"] = network.wire }
            if let list { f["networkList"] = .array(list.map(\.wire)) }
            trace.record("response", f)
            let response = Response(helper: helper, command: id, result: result, network: network, networkList: list)
            handle(.response(response), source: ["helper": .string(helper)])
        case .logoff(let rid, let net):
            trace.record("logoffRequest", ["helper": .string(helper), "network": net.wire, "via": "helper"])
            logoffReply = { [unowned self, conn] accepted in
                self.send(conn, DaemonMessage.logoffResult(requestID: rid, accepted: accepted).framed)
            }
            handle(.logoffRequested(helper, network: net.identity), source: ["helper": .string(helper)])
            logoffReply = nil
        case .supportedNetworkInterfaces(let rid):
            send(conn, DaemonMessage.interfaces(requestID: rid, networks: machine.supportedNetworkInterfaces(for: helper)).framed)
        case .notify(let title, let body):
            let n: JSON = ["helper": .string(helper), "title": .string(title), "body": .string(body)]
            notifications.append(n)
            if notifications.count > 16 { notifications.removeFirst() }
            trace.record("notification", n.objectValue!)
        }
    }

    private func register(_ conn: Connection, _ identifier: String, _ displayName: String, _ version: Int, _ payload: [UInt8]) {
        guard version == protocolVersion else {
            protocolError(conn, ProtocolError(.unsupportedVersion, "protocol version \(version) is not supported (this daemon speaks \(protocolVersion))"), offending: payload)
            return
        }
        if let already = conn.helperID {
            protocolError(conn, ProtocolError(.alreadyRegistered, "this connection already registered as \"\(already)\""), offending: payload)
            trace.record("rejected", Rejection.duplicateRegistration(already).traceFields)
            return
        }
        guard !identifier.isEmpty, identifier.utf8.count <= 255 else {
            protocolError(conn, ProtocolError(.invalidField, "identifier: expected 1 to 255 bytes"), offending: payload)
            return
        }
        if helperConnections[identifier] != nil {
            protocolError(conn, ProtocolError(.alreadyRegistered, "helper \"\(identifier)\" is already registered by another connection"), offending: payload)
            trace.record("rejected", Rejection.duplicateRegistration(identifier).traceFields)
            return
        }
        var f = conn.peerFields
        f["helper"] = .string(identifier)
        f["displayName"] = .string(displayName)
        handle(.helperRegistered(identifier, displayName: displayName), source: f)
        guard machine.isRegistered(identifier) else {
            protocolError(conn, ProtocolError(.invalidDisplayName, "display name \"\(displayName)\" must be 1 to \(maximumDisplayNameLength) characters"), offending: payload)
            return
        }
        conn.helperID = identifier
        helperConnections[identifier] = conn
        send(conn, DaemonMessage.registered(identifier: identifier, version: protocolVersion).framed)
    }

    // MARK: control messages

    private func controlFrame(_ conn: Connection, _ payload: [UInt8]) {
        let json: JSON
        let request: ControlRequest
        do {
            json = try JSON.parse(payload)
            request = try ControlRequest(json: json)
        } catch {
            protocolError(conn, error, offending: payload)
            return
        }
        let rid = json["requestID"]
        func reply(_ j: JSON) { send(conn, frame(j.bytes)) }
        var source = conn.peerFields
        source["via"] = "control"
        switch request {
        case .associate(let n):
            handle(.associated(n), source: source)
            reply(ControlReply.ok(requestID: rid))
        case .disassociate:
            handle(.disassociated, source: source)
            reply(ControlReply.ok(requestID: rid))
        case .signal(let strength):
            handle(.signalChanged(strength), source: source)
            reply(ControlReply.ok(requestID: rid))
        case .ipUp:
            handle(.ipUp, source: source)
            reply(ControlReply.ok(requestID: rid))
        case .ipDown:
            handle(.ipDown, source: source)
            reply(ControlReply.ok(requestID: rid))
        case .showScanList(let list, let repeating):
            if let t = scanRefresh { loop.cancel(t); scanRefresh = nil }
            shownScanList = repeating ? list : nil
            handle(.scanListShown(list), source: source)
            if repeating { armScanRefresh() }
            reply(ControlReply.ok(requestID: rid))
        case .hideScanList:
            if let t = scanRefresh { loop.cancel(t); scanRefresh = nil }
            shownScanList = nil
            trace.record("event", ["event": "scanListHidden", "source": .object(source)])
            reply(ControlReply.ok(requestID: rid))
        case .logoff(let helper, let identity):
            guard let identity = identity ?? machine.association?.identity else {
                trace.record("logoffRequest", ["helper": .string(helper), "network": .null, "via": "control"])
                reply(ControlReply.with(["type": "logoffResult", "accepted": false, "reason": "not associated"], rid))
                return
            }
            trace.record("logoffRequest", ["helper": .string(helper), "network": identity.wire, "via": "control"])
            var answered: Bool?
            logoffReply = { answered = $0 }
            handle(.logoffRequested(helper, network: identity), source: source)
            logoffReply = nil
            reply(ControlReply.with(["type": "logoffResult", "accepted": .bool(answered ?? false)], rid))
        case .foreground(let helper):
            handle(.foreground(helper), source: source)
            reply(ControlReply.ok(requestID: rid))
        case .status:
            reply(ControlReply.with(status.objectValue!, rid))
        case .subscribeTrace:
            conn.subscribed = true
            rebuildSubscribers()
            reply(ControlReply.ok(requestID: rid))
        case .join, .leave, .autoJoin:
            stationRequest(request, source: source, reply: reply, requestID: rid)
        case .record(let what):
            var f = source
            f["action"] = what
            trace.record("labAction", f)
            reply(ControlReply.ok(requestID: rid))
        }
    }

    private func stationRequest(_ request: ControlRequest, source: [String: JSON], reply: (JSON) -> Void, requestID rid: JSON?) {
        guard let station else {
            let e = ProtocolError(.requestFailed, "\(request.json["type"]?.stringValue ?? "?"): this hotspotd drives no station "
                                  + "(start it with --wpa-supplicant CTRL-PATH); report association with associate/ipUp instead")
            reply(ControlReply.error(e, requestID: rid))
            return
        }
        var f = source
        f["request"] = request.json
        trace.record("userAction", f)
        do {
            switch request {
            case .join(let ssid, let password): try station.join(ssid: ssid, password: password)
            case .leave: try station.leave()
            case .autoJoin: try station.autoJoin(except: machine.autoJoinDisabled)
            default: break
            }
            reply(ControlReply.ok(requestID: rid))
        } catch {
            trace.record("error", ["message": .string("\(error)"), "request": request.json])
            reply(ControlReply.error(ProtocolError(.requestFailed, "\(error)"), requestID: rid))
        }
    }

    private func armScanRefresh() {
        scanRefresh = loop.schedule(after: options.timing.scaledScanListRefresh) { [unowned self] in
            self.scanRefresh = nil
            guard let list = self.shownScanList else { return }
            self.trace.record("timer", ["timer": "scanListRefresh"])
            self.handle(.scanListShown(list), source: ["via": "timer"])
            self.armScanRefresh()
        }
    }

    private func rebuildSubscribers() {
        let subs = connections.values.filter { $0.subscribed && !$0.closed }
        trace.subscribers = subs.map { conn in
            { [unowned self, conn] record in
                var o = record.objectValue!
                o = ["type": "trace", "record": .object(o)]
                self.send(conn, frame(JSON.object(o).bytes))
            }
        }
    }

    /// The control API's `status` answer.
    public var status: JSON {
        var o: [String: JSON] = [
            "type": "status",
            "state": .string(machine.state.rawValue),
            "interface": .string(options.interface),
            "association": machine.association.map(\.wire) ?? .null,
            "hasIP": .bool(machine.hasIP),
            "ipReleased": .bool(machine.ipReleased),
            "bestHelper": machine.bestHelper.map(JSON.string) ?? .null,
            "excludeList": .array(machine.excludeList.map(JSON.string)),
            "foreground": machine.foregroundHelper.map(JSON.string) ?? .null,
            "maintainTimerArmed": .bool(machine.maintainTimerArmed),
            "pid": .number(Double(getpid())),
        ]
        let p = persistentState.json
        o["cache"] = p["cache"]!
        o["autoJoinDisabled"] = p["autoJoinDisabled"]!
        o["helpers"] = .array(machine.helpers.map { h in
            var e: [String: JSON] = ["identifier": .string(h.id), "displayName": .string(h.displayName)]
            if let peer = helperConnections[h.id]?.peer {
                e["pid"] = .number(Double(peer.pid))
                e["uid"] = .number(Double(peer.uid))
            }
            return .object(e)
        })
        o["pending"] = .array(machine.pending.map { c in
            ["id": .number(Double(c.id)), "commandType": .string(c.type.description), "helper": .string(c.helper)]
        })
        o["scanList"] = lastScanList.map { .array($0.map(\.wire)) } ?? .null
        o["notifications"] = .array(notifications)
        return .object(o)
    }

    // MARK: the machine

    /// Feeds one event to the machine, traces it and carries out its effects in order.
    func handle(_ event: Event, source: [String: JSON]) {
        var f = source
        f["event"] = event.traceName
        if let extra = event.traceDetail { f["detail"] = extra }
        trace.record("event", f)
        effects.removeAll(keepingCapacity: true)
        machine.handle(event, into: &effects)
        let batch = effects
        var rejectedResponse = false
        for effect in batch {
            if case .rejected = effect { rejectedResponse = true }
            perform(effect)
        }
        if case .response(let r) = event, !rejectedResponse, let o = outstanding.removeValue(forKey: r.command) {
            if let t = o.timer { loop.cancel(t) }
        }
        if persistDirty {
            persistDirty = false
            do {
                try store.save(persistentState)
                trace.record("persist", ["file": .string(options.stateFile), "state": persistentState.json])
            } catch {
                trace.record("error", ["message": .string(error.description)])
                logError("hotspotd: \(error)")
            }
        }
    }

    private func perform(_ effect: Effect) {
        let iface = options.interface
        switch effect {
        case .transition(let from, let to):
            trace.record("transition", ["from": .string(from.rawValue), "to": .string(to.rawValue),
                                        "bestHelper": machine.bestHelper.map(JSON.string) ?? .null])
        case .send(let command):
            var timer: EventLoop.TimerID?
            if let d = command.deadline {
                let id = command.id
                timer = loop.schedule(after: d) { [unowned self] in
                    guard self.outstanding.removeValue(forKey: id) != nil else { return }
                    self.trace.record("timer", ["timer": "deadline", "command": .number(Double(id))])
                    self.handle(.deadlinePassed(id), source: ["via": "timer"])
                }
            }
            outstanding[command.id] = Outstanding(timer: timer, sentAt: loop.clock.now(), command: command)
            trace.record("command", command.traceFields)
            if let conn = helperConnections[command.helper] {
                send(conn, DaemonMessage.command(command).framed)
            }
        case .cancel(let id, let helper):
            if let o = outstanding.removeValue(forKey: id), let t = o.timer { loop.cancel(t) }
            trace.record("cancel", ["command": .number(Double(id)), "helper": .string(helper)])
            if let conn = helperConnections[helper] { send(conn, DaemonMessage.cancel(id).framed) }
        case .armMaintainTimer(let d):
            if let t = maintainTimer { loop.cancel(t) }
            trace.record("maintainTimer", ["action": "arm", "after_ms": .number(d.milliseconds)])
            maintainTimer = loop.schedule(after: d) { [unowned self] in
                self.maintainTimer = nil
                self.trace.record("timer", ["timer": "maintain"])
                self.handle(.maintainTimerFired, source: ["via": "timer"])
            }
        case .cancelMaintainTimer:
            if let t = maintainTimer { loop.cancel(t); maintainTimer = nil }
            trace.record("maintainTimer", ["action": "cancel"])
        case .suppressIP:
            trace.record("network", ["action": "suppressIP", "interface": .string(iface)])
            network.suppressIP(interface: iface, network: machine.association?.identity)
        case .releaseIP:
            trace.record("network", ["action": "releaseIP", "interface": .string(iface)])
            network.releaseIP(interface: iface, network: machine.association?.identity)
        case .disassociate:
            trace.record("network", ["action": "disassociate", "interface": .string(iface)])
            network.disassociate(interface: iface, network: nil)
        case .disableAutoJoin(let n):
            persistDirty = true
            trace.record("autoJoin", ["action": "disable", "network": n.wire])
            network.setAutoJoin(false, network: n, interface: iface)
        case .enableAutoJoin(let n):
            persistDirty = true
            trace.record("autoJoin", ["action": "enable", "network": n.wire])
            network.setAutoJoin(true, network: n, interface: iface)
        case .cache(let n, let entry):
            persistDirty = true
            var f: [String: JSON] = ["action": "set", "network": n.wire]
            switch entry {
            case .helper(let h): f["helper"] = .string(h)
            case .notCaptive: f["notCaptive"] = true
            }
            trace.record("cache", f)
        case .uncache(let n):
            persistDirty = true
            trace.record("cache", ["action": "remove", "network": n.wire])
        case .rejected(let r):
            trace.record("rejected", r.traceFields.merging(["message": .string(r.description)]) { a, _ in a })
            if let conn = helperConnections[r.helper] {
                let code: ProtocolError.Code
                switch r {
                case .duplicateRegistration: code = .alreadyRegistered
                case .invalidDisplayName: code = .invalidDisplayName
                case .notRegistered: code = .notRegistered
                default: code = .rejectedResponse
                }
                send(conn, DaemonMessage.error(ProtocolError(code, r.description), offending: nil).framed)
            }
        case .irregular(let i):
            if case .noAnswer(let id, _, _) = i, let o = outstanding.removeValue(forKey: id), let t = o.timer { loop.cancel(t) }
            trace.record("irregular", i.traceFields.merging(["message": .string(i.description)]) { a, _ in a })
        case .logoffAnswer(let helper, let accepted):
            trace.record("logoffAnswer", ["helper": .string(helper), "accepted": .bool(accepted)])
            logoffReply?(accepted)
        case .scanListAnnotated(let list):
            lastScanList = list
            trace.record("scanList", ["networks": .array(list.map(\.wire))])
        }
    }
}

extension Event {
    var traceName: JSON {
        switch self {
        case .associated: "associated"
        case .disassociated: "disassociated"
        case .signalChanged: "signalChanged"
        case .ipUp: "ipUp"
        case .ipDown: "ipDown"
        case .helperRegistered: "helperRegistered"
        case .helperGone: "helperGone"
        case .response: "response"
        case .deadlinePassed: "deadlinePassed"
        case .maintainTimerFired: "maintainTimerFired"
        case .logoffRequested: "logoffRequested"
        case .foreground: "foreground"
        case .scanListShown: "scanListShown"
        }
    }

    var traceDetail: JSON? {
        switch self {
        case .associated(let n): ["network": n.wire]
        case .signalChanged(let s): ["signalStrength": .number(s)]
        case .helperRegistered(let h, let name): ["helper": .string(h), "displayName": .string(name)]
        case .helperGone(let h): ["helper": .string(h)]
        case .response(let r): ["helper": .string(r.helper), "command": .number(Double(r.command)), "result": .string(r.result.description)]
        case .deadlinePassed(let id): ["command": .number(Double(id))]
        case .logoffRequested(let h, let n): ["helper": .string(h), "network": n.wire]
        case .foreground(let h): ["helper": h.map(JSON.string) ?? .null]
        case .scanListShown(let l): ["networks": .array(l.map(\.wire))]
        default: nil
        }
    }
}
