// Apple's in-provider networking for a command: `command.createTCPConnection(_:)` and `createUDPSession(_:)`
// with `NWHostEndpoint`, `NWTCPConnection` and `NWUDPSession`, over the SDK's marked sockets (SO_MARK 0x4853,
// which the station's IP suppression lets through; see docs/HELPERS.md "What is bound to a command").
//
// Like Apple's, both start on their own at once and queue reads and writes until connected. Apple's callers
// watch `state` through KVO (`addObserver(_:forKeyPath:options:context:)` and an override of
// `observeValue(forKeyPath:of:change:context:)`), which Linux Foundation does not have: NSObject there declares
// neither, so such code does not compile. Here reads and writes wait for the connection instead; `state`,
// `error` and `isViable` can be read at any time, and `stateUpdateHandler` (not Apple's) is called on every change.
@_spi(Compat) import HotspotHelper
// Only these of HotspotSystem (which HotspotHelper depends on): its `Mutex` would shadow Synchronization's here.
import struct HotspotSystem.SystemError
import class HotspotSystem.SystemThread
import struct HotspotSystem.UncheckedBox
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `NWEndpoint`: where a connection goes. The one kind the lab uses is `NWHostEndpoint`.
open class NWEndpoint: NSObject, @unchecked Sendable {}  // @unchecked: an open class (the compiler checks only final ones); no stored state

/// `NWHostEndpoint`: a host name or IPv4 literal and a port, as strings (Apple's spelling).
open class NWHostEndpoint: NWEndpoint, @unchecked Sendable {  // @unchecked: an open class (not checkable); `let` Strings only
    public let hostname: String
    public let port: String

    public init(hostname: String, port: String) {
        self.hostname = hostname
        self.port = port
    }

    open override var description: String { "\(hostname):\(port)" }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NWHostEndpoint else { return false }
        return other.hostname == hostname && other.port == port
    }

    open override var hash: Int { description.hashValue }
}

/// `NWTCPConnectionState`, Apple's raw values.
public enum NWTCPConnectionState: Int, Sendable {
    case invalid = 0
    case connecting = 1
    case waiting = 2
    case connected = 3
    case disconnected = 4
    case cancelled = 5
}

/// `NWPathStatus`, Apple's raw values.
public enum NWPathStatus: Int, Sendable {
    case invalid = 0
    case satisfied = 1
    case unsatisfied = 2
    case satisfiable = 3
}

/// `NWPath`: the path a connection uses. A command's traffic goes over the station's Wi-Fi interface, which is
/// neither expensive nor constrained; `status` is satisfied while the connection is connected (ready).
open class NWPath: NSObject, @unchecked Sendable {  // @unchecked: an open class (not checkable); `let`s of Sendable values only
    public let status: NWPathStatus
    public let isExpensive: Bool
    public let isConstrained: Bool

    init(status: NWPathStatus) {
        self.status = status
        isExpensive = false
        isConstrained = false
    }

    open func isEqual(to path: NWPath) -> Bool {
        status == path.status && isExpensive == path.isExpensive && isConstrained == path.isConstrained
    }

    open override var description: String { "NWPath(status: \(status))" }
}

/// The local address of a connected socket as an endpoint (IPv4), nil when it cannot be read.
func localEndpoint(_ fd: Int32) -> NWHostEndpoint? {
    guard fd >= 0 else { return nil }
    var sa = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let rc = withUnsafeMutablePointer(to: &sa) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard rc == 0, sa.sin_family == sa_family_t(AF_INET) else { return nil }
    let b = withUnsafeBytes(of: sa.sin_addr.s_addr) { Array($0) }
    return NWHostEndpoint(hostname: "\(b[0]).\(b[1]).\(b[2]).\(b[3])", port: String(UInt16(bigEndian: sa.sin_port)))
}

/// `NWUDPSessionState`, Apple's raw values.
public enum NWUDPSessionState: Int, Sendable {
    case invalid = 0
    case waiting = 1
    case preparing = 2
    case ready = 3
    case failed = 4
    case cancelled = 5
}

/// An error of command-bound traffic as Apple reports it (POSIX domain, the errno as code), with the
/// operation, the target and the cause in its description.
func trafficNSError(_ e: HotspotTrafficError) -> NSError {
    NSError(domain: NSPOSIXErrorDomain, code: Int(e.errno != 0 ? e.errno : EIO),
            userInfo: [NSLocalizedDescriptionKey: e.description])
}

func trafficNSError(_ error: any Error) -> NSError {
    if let e = error as? HotspotTrafficError { return trafficNSError(e) }
    return error as NSError
}

func trafficNSError(_ operation: String, _ target: String, _ code: Int32, _ detail: String? = nil) -> NSError {
    trafficNSError(HotspotTrafficError(operation, target, errno: code, detail: detail))
}

/// Parses an endpoint for a command: a host endpoint with a numeric port.
func hostAndPort(_ endpoint: NWEndpoint) -> (host: String, port: UInt16)? {
    guard let host = endpoint as? NWHostEndpoint, let port = UInt16(host.port), !host.hostname.isEmpty else { return nil }
    return (host.hostname, port)
}

/// How long a read may wait: what is left of the command's deadline, else 60 s (presentUI has no deadline).
func commandBudget(_ command: HotspotHelperCommand?) -> Duration {
    if let left = command?.timeLeft { return max(left, .milliseconds(1)) }
    return .seconds(60)
}

/// `NWTCPConnection`: a TCP connection over a marked socket, started at once.
open class NWTCPConnection: NSObject, @unchecked Sendable {  // @unchecked: an open class (not checkable); what changes is in the `status` Mutex, the rest is set in init
    public let endpoint: NWEndpoint
    /// What changes as the connection goes (the state, its error, the socket once connected) and the handler.
    private struct Status {
        var state: NWTCPConnectionState = .connecting
        var error: (any Error)?
        var socket: HotspotTCPConnection?
        var stateUpdateHandler: (@Sendable (NWTCPConnectionState) -> Void)?
    }

    private let status = Mutex(Status())
    private let connected = DispatchGroup()
    private let readQueue = DispatchQueue(label: "NWTCPConnection.read")
    private let writeQueue = DispatchQueue(label: "NWTCPConnection.write")
    private weak var command: HotspotHelperCommand?

    init(endpoint: NWEndpoint, command: HotspotHelperCommand) {
        self.endpoint = endpoint
        self.command = command
        super.init()
        connected.enter()
        let box = UncheckedBox(command)
        DispatchQueue.global().async { [self] in
            defer { connected.leave() }
            guard let (host, port) = hostAndPort(endpoint) else {
                finish(.disconnected, trafficNSError("connect to", endpoint.description, EINVAL,
                                                     "the endpoint must be an NWHostEndpoint with a numeric port"))
                return
            }
            do {
                let s = try box.value.createTCPConnection(host: host, port: port, timeout: .seconds(30))
                let changed = status.withLock { status -> Bool in
                    if status.state == .cancelled { return false }
                    status.socket = s
                    status.state = .connected
                    return true
                }
                if changed { notify(.connected) }
            } catch {
                finish(.disconnected, trafficNSError(error))
            }
        }
    }

    private func finish(_ state: NWTCPConnectionState, _ error: (any Error)?) {
        let changed = status.withLock { status -> Bool in
            if status.state == .cancelled || status.state == state { return false }
            status.state = state
            if status.error == nil { status.error = error }
            return true
        }
        if changed { notify(state) }
    }

    /// Called with the new state on every change (connected, disconnected, cancelled), on a global queue. Not
    /// Apple's: Apple's callers observe `state` with KVO, which Linux Foundation does not have.
    open var stateUpdateHandler: (@Sendable (NWTCPConnectionState) -> Void)? {
        get { status.withLock { $0.stateUpdateHandler } }
        set { status.withLock { $0.stateUpdateHandler = newValue } }
    }

    private func notify(_ state: NWTCPConnectionState) {
        guard let handler = stateUpdateHandler else { return }
        DispatchQueue.global().async { handler(state) }
    }

    /// The local address and port of the connection; nil before connected.
    open var localAddress: NWEndpoint? { status.withLock { $0.socket.flatMap { localEndpoint($0.fd) } } }

    /// The path the connection uses: satisfied while connected, else unsatisfied (nil while connecting).
    open var connectedPath: NWPath? {
        switch state {
        case .connecting, .invalid, .waiting: return nil
        case .connected: return NWPath(status: .satisfied)
        case .disconnected, .cancelled: return NWPath(status: .unsatisfied)
        }
    }

    /// connecting, then connected, or disconnected (with `error`); cancelled after `cancel()`.
    open var state: NWTCPConnectionState { status.withLock { $0.state } }
    open var isViable: Bool { state == .connected }
    open var hasBetterPath: Bool { false }
    /// Why the connection failed or closed (POSIX domain, the errno as code).
    open var error: (any Error)? { status.withLock { $0.error } }
    open var remoteAddress: NWEndpoint? {
        status.withLock { $0.socket.map { NWHostEndpoint(hostname: $0.address, port: String($0.port)) } }
    }
    /// The SO_MARK of the socket (0x4853 for command traffic); nil before connected. Not Apple's.
    open var socketMark: UInt32? { status.withLock { $0.socket?.mark } }

    /// Waits for the connection; the socket, or the error to report.
    private func ready(_ operation: String) -> Result<HotspotTCPConnection, NSError> {
        connected.wait()
        return status.withLock { status -> Result<HotspotTCPConnection, NSError> in
            if let socket = status.socket, status.state == .connected { return .success(socket) }
            if let e = status.error as? NSError { return .failure(e) }
            return .failure(trafficNSError(operation, endpoint.description, status.state == .cancelled ? ECANCELED : ENOTCONN))
        }
    }

    /// Reads exactly `length` bytes (less only at end of stream).
    open func readLength(_ length: Int, completionHandler: @escaping (Data?, (any Error)?) -> Void) {
        readMinimumLength(length, maximumLength: length, completionHandler: completionHandler)
    }

    /// Reads at least `minimum` and at most `maximum` bytes (less only at end of stream: then what was read,
    /// or nil and no error when nothing was).
    open func readMinimumLength(_ minimum: Int, maximumLength maximum: Int,
                                completionHandler: @escaping (Data?, (any Error)?) -> Void)
    {
        let handler = UncheckedBox(completionHandler)
        readQueue.async { [self] in
            switch ready("read from") {
            case .failure(let e): handler.value(nil, e)
            case .success(let s):
                var got: [UInt8] = []
                let budget = commandBudget(command)
                do {
                    while got.count < max(minimum, 1) {
                        let chunk = try s.read(maximum: maximum - got.count, timeout: budget)
                        if chunk.isEmpty { break }
                        got += chunk
                    }
                    handler.value(got.isEmpty ? nil : Data(got), nil)
                } catch {
                    let e = trafficNSError(error)
                    finish(.disconnected, e)
                    handler.value(got.isEmpty ? nil : Data(got), e)
                }
            }
        }
    }

    /// Writes all of `data`.
    open func write(_ data: Data, completionHandler: @escaping ((any Error)?) -> Void) {
        let handler = UncheckedBox(completionHandler)
        writeQueue.async { [self] in
            switch ready("write to") {
            case .failure(let e): handler.value(e)
            case .success(let s):
                do {
                    try s.write(Array(data), timeout: commandBudget(command))
                    handler.value(nil)
                } catch {
                    let e = trafficNSError(error)
                    finish(.disconnected, e)
                    handler.value(e)
                }
            }
        }
    }

    /// Closes the sending side once the queued writes are done.
    open func writeClose() {
        writeQueue.async { [self] in
            if case .success(let s) = ready("close") { s.shutdown(writingOnly: true) }
        }
    }

    /// Closes the connection; pending reads and writes fail with ECANCELED.
    open func cancel() {
        let (s, changed) = status.withLock { status -> (HotspotTCPConnection?, Bool) in
            let changed = status.state != .cancelled
            status.state = .cancelled
            if status.error == nil {
                status.error = trafficNSError("use", endpoint.description, ECANCELED, "the connection was cancelled")
            }
            return (status.socket, changed)
        }
        s?.shutdown()
        if changed { notify(.cancelled) }
    }
}

/// `NWUDPSession`: a UDP socket over a marked socket, started at once.
open class NWUDPSession: NSObject, @unchecked Sendable {  // @unchecked: an open class (not checkable); what changes is in the `status` Mutex, the rest is set in init
    public let endpoint: NWEndpoint
    /// What changes as the session goes (the state, its error, the socket once ready), and whether it is read.
    private struct Status {
        var state: NWUDPSessionState = .preparing
        var error: (any Error)?
        var socket: HotspotUDPSocket?
        var reading = false
    }

    private let status = Mutex(Status())
    private let prepared = DispatchGroup()
    private let writeQueue = DispatchQueue(label: "NWUDPSession.write")

    init(endpoint: NWEndpoint, command: HotspotHelperCommand) {
        self.endpoint = endpoint
        super.init()
        prepared.enter()
        let box = UncheckedBox(command)
        DispatchQueue.global().async { [self] in
            defer { prepared.leave() }
            guard let (host, port) = hostAndPort(endpoint) else {
                fail(trafficNSError("connect a UDP session to", endpoint.description, EINVAL,
                                    "the endpoint must be an NWHostEndpoint with a numeric port"))
                return
            }
            do {
                let s = try box.value.createUDPSocket(host: host, port: port)
                status.withLock { status in
                    if status.state == .cancelled { return }
                    status.socket = s
                    status.state = .ready
                }
            } catch {
                fail(trafficNSError(error))
            }
        }
    }

    private func fail(_ error: any Error) {
        status.withLock { status in
            if status.state == .cancelled { return }
            status.state = .failed
            if status.error == nil { status.error = error }
        }
    }

    /// preparing, then ready, or failed (with `error`); cancelled after `cancel()`.
    open var state: NWUDPSessionState { status.withLock { $0.state } }
    open var isViable: Bool { state == .ready }
    open var hasBetterPath: Bool { false }
    open var error: (any Error)? { status.withLock { $0.error } }
    open var resolvedEndpoint: NWEndpoint? {
        status.withLock { $0.socket.map { NWHostEndpoint(hostname: $0.address, port: String($0.port)) } }
    }
    open var maximumDatagramLength: Int { 65_507 }
    /// The local address and port of the session's socket; nil before ready. (Apple's NWUDPSession has no
    /// `localAddress`; this mirrors NWTCPConnection's. Not Apple's.)
    open var localAddress: NWEndpoint? { status.withLock { $0.socket.flatMap { localEndpoint($0.fd) } } }
    /// The path the session uses: satisfied while ready, else unsatisfied (nil while preparing).
    open var currentPath: NWPath? {
        switch state {
        case .preparing, .invalid, .waiting: return nil
        case .ready: return NWPath(status: .satisfied)
        case .failed, .cancelled: return NWPath(status: .unsatisfied)
        }
    }
    /// The SO_MARK of the socket (0x4853 for command traffic); nil before ready. Not Apple's.
    open var socketMark: UInt32? { status.withLock { $0.socket?.mark } }

    open func tryNextResolvedEndpoint() {}

    private func ready(_ operation: String) -> Result<HotspotUDPSocket, NSError> {
        prepared.wait()
        return status.withLock { status -> Result<HotspotUDPSocket, NSError> in
            if let socket = status.socket, status.state == .ready { return .success(socket) }
            if let e = status.error as? NSError { return .failure(e) }
            return .failure(trafficNSError(operation, endpoint.description, status.state == .cancelled ? ECANCELED : ENOTCONN))
        }
    }

    /// Calls `handler` with the datagrams as they arrive (at most `maxDatagrams` per call; here one), until
    /// cancelled; with an error (and then no more) when the session fails. One handler per session.
    open func setReadHandler(_ handler: @escaping ([Data]?, (any Error)?) -> Void, maxDatagrams: Int) {
        let first = status.withLock { status -> Bool in
            defer { status.reading = true }
            return !status.reading
        }
        guard first else { return }
        let box = UncheckedBox(handler)
        do {
            try SystemThread.detach("read a UDP session's datagrams") { [self] in readDatagrams(box) }
        } catch {
            // No thread to read on: the session fails, and the handler hears why (once, as for any failure).
            let e = trafficNSError("receive from", endpoint.description, error.errno,
                                   "cannot start the thread that reads the session: \(error)")
            fail(e)
            DispatchQueue.global().async { box.value(nil, e) }
        }
    }

    /// The read handler's loop, on a thread of its own.
    private func readDatagrams(_ box: UncheckedBox<([Data]?, (any Error)?) -> Void>) {
        switch ready("receive from") {
        case .failure(let e): box.value(nil, e)
        case .success(let s):
            while state == .ready {
                do {
                    guard let datagram = try s.receive(timeout: .seconds(3600)) else { break }
                    box.value([Data(datagram)], nil)
                } catch {
                    if state == .ready {
                        let e = trafficNSError(error)
                        fail(e)
                        box.value(nil, e)
                    }
                    break
                }
            }
        }
    }

    open func writeDatagram(_ datagram: Data, completionHandler: @escaping ((any Error)?) -> Void) {
        writeMultipleDatagrams([datagram], completionHandler: completionHandler)
    }

    open func writeMultipleDatagrams(_ datagramArray: [Data], completionHandler: @escaping ((any Error)?) -> Void) {
        let handler = UncheckedBox(completionHandler)
        writeQueue.async { [self] in
            switch ready("send a datagram to") {
            case .failure(let e): handler.value(e)
            case .success(let s):
                do {
                    for d in datagramArray { try s.send(Array(d)) }
                    handler.value(nil)
                } catch {
                    handler.value(trafficNSError(error))
                }
            }
        }
    }

    open func cancel() {
        let s = status.withLock { status -> HotspotUDPSocket? in
            status.state = .cancelled
            return status.socket
        }
        s?.shutdown()
    }
}

extension HotspotHelperCommand {
    /// `createTCPConnection(_:)`: a TCP connection for this command over a marked socket (it passes the
    /// station's IP suppression), connecting at once; reads and writes wait for it.
    public func createTCPConnection(_ endpoint: NWEndpoint) -> NWTCPConnection {
        NWTCPConnection(endpoint: endpoint, command: self)
    }

    /// `createUDPSession(_:)`: a UDP session for this command over a marked socket.
    public func createUDPSession(_ endpoint: NWEndpoint) -> NWUDPSession {
        NWUDPSession(endpoint: endpoint, command: self)
    }
}
