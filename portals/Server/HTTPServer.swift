import COpenSSL
import CTLSShim
import Foundation
import PortalKinds
#if canImport(Glibc)
import Glibc
import Synchronization
#endif

// The portals' and the lab internet's HTTP/1.1 server, plain or over TLS: one thread per connection, blocking I/O.
// Its own code, not a framework's: under the VM's emulation a server process's start and first request were most of
// a portal's cost (a framework pulled in FoundationNetworking, libcurl and 55 shared libraries; bench/README.md).

/// An HTTP/1.1 request as the server read it.
public struct RawHTTPRequest: Sendable, Equatable {
    public var method: String
    /// The path without the query, percent-decoded (`/a%20b` is `/a b`).
    public var path: String
    /// The raw query (without `?`), empty when none.
    public var query: String
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String

    public init(method: String, path: String, query: String, headers: [(String, String)], body: [UInt8], version: String = "HTTP/1.1") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.version = version
    }

    public static func == (a: RawHTTPRequest, b: RawHTTPRequest) -> Bool {
        a.method == b.method && a.path == b.path && a.query == b.query && a.body == b.body && a.version == b.version
            && a.headers.map { $0.0 + ":" + $0.1 } == b.headers.map { $0.0 + ":" + $0.1 }
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The Host header without its port.
    public var host: String? {
        header("Host").map { h in
            if let colon = h.lastIndex(of: ":"), !h.hasSuffix("]") { return String(h[..<colon]) }
            return h
        }
    }

    /// The `Connection` header's tokens, lowercased.
    var connectionTokens: [String] {
        (header("Connection") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }

    /// Whether the connection stays open after the answer (RFC 9112 §9.3): HTTP/1.1 unless `Connection: close`,
    /// HTTP/1.0 only with `Connection: keep-alive`.
    public var keepsConnectionOpen: Bool {
        version == "HTTP/1.0" ? connectionTokens.contains("keep-alive") : !connectionTokens.contains("close")
    }

    /// Parses a request head (up to and without the empty line): `GET /p?q HTTP/1.1` and header lines.
    public static func parseHead(_ text: String) -> RawHTTPRequest? {
        // "\r\n" is one Character in Swift: split on both spellings of a line end.
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map(String.init)
        guard let first = lines.first else { return nil }
        let parts = first.split(separator: " ")
        guard parts.count == 3, parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0", parts[1].hasPrefix("/") else { return nil }
        let target = String(parts[1])
        let (rawPath, query) = target.firstIndex(of: "?").map { (String(target[..<$0]), String(target[target.index(after: $0)...])) } ?? (target, "")
        var headers: [(String, String)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return RawHTTPRequest(method: String(parts[0]), path: rawPath.removingPercentEncoding ?? rawPath, query: query,
                              headers: headers, body: [], version: String(parts[2]))
    }
}

/// What the server could not read. `status` is the answer it sends before it closes (nil: none, the peer is gone).
public struct HTTPReadError: Error, CustomStringConvertible {
    public var what: String
    public var cause: String
    public var status: Int?
    public var description: String { "read \(what): \(cause)" }
}

/// One connection's bytes: a TCP socket, or a TLS session over one.
protocol HTTPTransport {
    /// Reads into `buffer`; 0 when the peer closed (or the read timed out). Throws on a failure worth logging.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// Writes all of `bytes`; false when the peer is gone.
    func write(_ bytes: [UInt8]) -> Bool
    /// Ends the session (TLS: close_notify); the socket is closed by the server.
    func finish()
}

struct PlainTransport: HTTPTransport {
    let fd: Int32

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNRESET { return 0 }
            throw HTTPReadError(what: "from the connection", cause: String(cString: strerror(errno)), status: nil)
        }
    }

    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    func finish() {}
}

/// Reads requests off a connection: the head up to the empty line (at most 64 KiB), then the body by
/// Content-Length or chunked (at most 1 MiB). Bytes past one request are kept for the next (pipelining).
struct HTTPRequestReader {
    let transport: any HTTPTransport
    var buffer: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 16_384)
    static let headLimit = 65_536
    static let bodyLimit = 1 << 20

    init(transport: any HTTPTransport) {
        self.transport = transport
    }

    /// Reads more bytes; false when the peer closed.
    private mutating func fill() throws -> Bool {
        let transport = self.transport
        var chunk = self.chunk
        self.chunk = []  // `chunk` is the only reference: the read does not copy it
        defer { self.chunk = chunk }
        let n = try chunk.withUnsafeMutableBytes { try transport.read(into: $0) }
        guard n > 0 else { return false }
        buffer += chunk[0..<n]
        return true
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        for i in 0...(bytes.count - needle.count) where bytes[i] == needle[0] && Array(bytes[i..<(i + needle.count)]) == needle {
            return i
        }
        return nil
    }

    /// Reads until `buffer` holds a CRLF-ended line; returns it without the CRLF and drops it from `buffer`.
    private mutating func line(_ what: String) throws -> String {
        while true {
            if let end = Self.find([13, 10], in: buffer) {
                let text = String(decoding: buffer[0..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                return text
            }
            guard buffer.count <= 4096 else { throw HTTPReadError(what: what, cause: "a line longer than 4 KiB", status: 400) }
            guard try fill() else { throw HTTPReadError(what: what, cause: "the client closed the connection", status: nil) }
        }
    }

    private mutating func bytes(_ count: Int, _ what: String) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw HTTPReadError(what: what, cause: "the client closed the connection after \(buffer.count) of \(count) bytes", status: nil) }
        }
        let taken = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return taken
    }

    /// The next request; nil when the peer closed (or went idle past the read timeout) between requests.
    /// `continueAnswer` is called for `Expect: 100-continue` before the body is read.
    mutating func next(continueAnswer: () -> Void) throws -> RawHTTPRequest? {
        let headEnd: Int
        while true {
            // Empty lines ahead of a request line are ignored (RFC 9112 §2.2).
            while buffer.starts(with: [13, 10]) { buffer.removeFirst(2) }
            if let end = Self.find([13, 10, 13, 10], in: buffer) {
                headEnd = end
                break
            }
            guard buffer.count <= Self.headLimit else {
                throw HTTPReadError(what: "an HTTP request head", cause: "longer than 64 KiB", status: 431)
            }
            guard try fill() else {
                if buffer.isEmpty { return nil }
                throw HTTPReadError(what: "an HTTP request head", cause: "the client closed the connection after \(buffer.count) bytes", status: nil)
            }
        }
        let head = String(decoding: buffer[0..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        guard var request = RawHTTPRequest.parseHead(head) else {
            throw HTTPReadError(what: "an HTTP request head", cause: "not `METHOD /path HTTP/1.x` and header lines: \(head.prefix(80))", status: 400)
        }
        let length = request.header("Content-Length")
        let encoding = request.header("Transfer-Encoding")
        if length != nil, encoding != nil {
            throw HTTPReadError(what: "an HTTP request", cause: "both Content-Length and Transfer-Encoding", status: 400)
        }
        if (request.header("Expect") ?? "").lowercased() == "100-continue", length != nil || encoding != nil {
            continueAnswer()
        }
        if let encoding {
            guard encoding.split(separator: ",").last?.trimmingCharacters(in: .whitespaces).lowercased() == "chunked" else {
                throw HTTPReadError(what: "the HTTP request body", cause: "Transfer-Encoding `\(encoding)`: only chunked is understood", status: 501)
            }
            var body: [UInt8] = []
            while true {
                let sizeLine = try line("a chunk's size")
                let hex = sizeLine.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                guard let size = Int(hex, radix: 16), size >= 0 else {
                    throw HTTPReadError(what: "the HTTP request body", cause: "chunk size `\(sizeLine.prefix(20))` is not hexadecimal", status: 400)
                }
                if size == 0 {
                    while try !line("the chunked body's trailer").isEmpty {}
                    break
                }
                guard body.count + size <= Self.bodyLimit else {
                    throw HTTPReadError(what: "the HTTP request body", cause: "longer than 1 MiB", status: 413)
                }
                body += try bytes(size, "a chunk of the HTTP request body")
                guard try line("the end of a chunk").isEmpty else {
                    throw HTTPReadError(what: "the HTTP request body", cause: "a chunk longer than its size", status: 400)
                }
            }
            request.body = body
        } else if let length {
            guard let count = Int(length.trimmingCharacters(in: .whitespaces)), count >= 0 else {
                throw HTTPReadError(what: "the HTTP request", cause: "Content-Length `\(length)` is not a number", status: 400)
            }
            guard count <= Self.bodyLimit else {
                throw HTTPReadError(what: "the HTTP request body", cause: "Content-Length \(count) over 1 MiB", status: 413)
            }
            request.body = try bytes(count, "the HTTP request body")
        }
        return request
    }
}

/// Serves HTTP/1.1, plain or (with a `TLSServerContext`) over TLS: accepts on a listening socket, one thread per
/// connection, persistent connections as RFC 9112 has them (HTTP/1.1 unless `Connection: close`), blocking I/O
/// with a read timeout that also ends an idle connection. The handler gets each request and the TCP peer's address.
public final class LabHTTPServer: @unchecked Sendable {  // @unchecked: lets, and `lifecycle` (a Mutex)
    public typealias Handler = @Sendable (RawHTTPRequest, _ peer: String) async -> PortalResponse
    let tls: TLSServerContext?
    let handler: Handler
    let ioTimeoutSeconds: Int
    /// The log lines' prefix: `[tls]` or `[http]` unless given.
    let logTag: String
    /// Whether each request gets a line (`[tls] PEER METHOD PATH -> STATUS`; never the readiness request).
    let logRequests: Bool
    /// Where its lines go (the process's standard output unless given).
    let log: PortalLog

    public init(tls: TLSServerContext? = nil, ioTimeoutSeconds: Int = 30, logTag: String? = nil, logRequests: Bool = true,
                log: PortalLog = .standardOutput, handler: @escaping Handler) {
        self.tls = tls
        self.handler = handler
        self.ioTimeoutSeconds = ioTimeoutSeconds
        self.logTag = logTag ?? (tls == nil ? "[http]" : "[tls]")
        self.logRequests = logRequests
        self.log = log
    }

    /// A server listening on `ip:port` (`listen`) and accepting there (`start`): the server and the port it got.
    public static func serving(ip: String, port: UInt16, tls: TLSServerContext? = nil, ioTimeoutSeconds: Int = 30,
                               logTag: String? = nil, logRequests: Bool = true, log: PortalLog = .standardOutput,
                               handler: @escaping Handler) throws -> (server: LabHTTPServer, port: UInt16) {
        let listener = try listen(ip: ip, port: port)
        let server = LabHTTPServer(tls: tls, ioTimeoutSeconds: ioTimeoutSeconds, logTag: logTag, logRequests: logRequests, log: log,
                                   handler: handler)
        server.start(listener: listener.fd)
        return (server, listener.port)
    }

    /// A listening TCP socket on `ip` (IPv4, or IPv6 such as `2001:db8:ffff::1`, IPv6 only) and `port` (0: any),
    /// SO_REUSEADDR; returns it and its port.
    public static func listen(ip: String, port: UInt16) throws -> (fd: Int32, port: UInt16) {
        let bare = ip.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let v6 = bare.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TLSServerError(operation: "create", object: "a TCP socket", cause: String(cString: strerror(errno))) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var storage = sockaddr_storage()
        let size: socklen_t
        let parsed: Bool
        if v6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
            size = socklen_t(MemoryLayout<sockaddr_in6>.size)
            parsed = withUnsafeMutablePointer(to: &storage) { raw in
                raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sa in
                    sa.pointee.sin6_family = sa_family_t(AF_INET6)
                    sa.pointee.sin6_port = port.bigEndian
                    return inet_pton(AF_INET6, bare, &sa.pointee.sin6_addr) == 1
                }
            }
        } else {
            size = socklen_t(MemoryLayout<sockaddr_in>.size)
            parsed = withUnsafeMutablePointer(to: &storage) { raw in
                raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sa in
                    sa.pointee.sin_family = sa_family_t(AF_INET)
                    sa.pointee.sin_port = port.bigEndian
                    return inet_pton(AF_INET, bare, &sa.pointee.sin_addr) == 1
                }
            }
        }
        guard parsed else {
            close(fd)
            throw TLSServerError(operation: "parse", object: "listen address `\(ip)`", cause: v6 ? "expected an IPv6 address" : "expected an IPv4 address")
        }
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
        guard bound == 0, Glibc.listen(fd, 64) == 0 else {
            let cause = String(cString: strerror(errno))
            close(fd)
            throw TLSServerError(operation: "listen on", object: v6 ? "[\(bare)]:\(port)" : "\(bare):\(port)", cause: cause)
        }
        var actual = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, Self.address(of: &actual).port)
    }

    /// The address and port of an IPv4 or IPv6 socket address.
    static func address(of storage: inout sockaddr_storage) -> (ip: String, port: UInt16) {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var port: UInt16 = 0
        withUnsafeMutablePointer(to: &storage) { raw in
            if raw.pointee.ss_family == sa_family_t(AF_INET6) {
                raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sa in
                    inet_ntop(AF_INET6, &sa.pointee.sin6_addr, &text, socklen_t(text.count))
                    port = UInt16(bigEndian: sa.pointee.sin6_port)
                }
            } else {
                raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sa in
                    inet_ntop(AF_INET, &sa.pointee.sin_addr, &text, socklen_t(text.count))
                    port = UInt16(bigEndian: sa.pointee.sin_port)
                }
            }
        }
        return (String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), port)
    }

    /// The listening socket and whether `stop()` ran.
    private let lifecycle = Synchronization.Mutex<(listener: Int32, stopping: Bool)>((-1, false))
    private let loopEnded = DispatchSemaphore(value: 0)

    /// Accepts on `listener` on a thread of its own until `stop()`. The server owns the listening socket from
    /// here on: only its accept loop closes it, when it ends. (A caller that closed it itself could see the fd
    /// number reused by its next socket while the loop was between two `accept` calls, and the loop would then
    /// accept, and answer, on that other socket.)
    public func start(listener: Int32) {
        lifecycle.withLock { $0.listener = listener }
        let thread = Thread { [self] in self.acceptLoop(listener) }
        thread.name = tls == nil ? "http-accept" : "tls-accept"
        thread.start()
    }

    /// The open connections (each one's socket, and its handler's task while it runs), ended by
    /// `stop(endingConnections: true)`. A connection leaves it before its socket is closed, so a shutdown never reaches
    /// a reused descriptor.
    private let connections = Synchronization.Mutex<(sockets: Set<Int32>, handlers: [Int32: Task<Void, Never>], ended: Bool)>(([], [:], false))

    /// How many connections are open (accepted, not yet closed).
    public var openConnections: Int { connections.withLock { $0.sockets.count } }

    /// The connections' threads (entered before each starts, left when it has closed its socket).
    private let connectionThreads = DispatchGroup()

    /// How long `stop(endingConnections: true)` waits for the connections' threads to end once their sockets are shut
    /// down and their handlers cancelled (each then ends at once; a bound, not a pace).
    static let connectionsEndBoundSeconds = 10

    /// Stops accepting, as `stop()`, and ends every open connection: its socket shut down (a read or write in progress
    /// returns), its handler's task cancelled (a `hang` route's wait ends). Returns once every connection's thread has
    /// ended, its last log line written (a handshake that failed, a read cut short): the caller may then close the log.
    /// For servers in a process that goes on after them (the lab internet in the lab runner's process): otherwise a
    /// connection kept open, or a request that never gets an answer, would keep its thread to the process's end.
    public func stop(endingConnections: Bool) {
        if endingConnections {
            connections.withLock { state in
                state.ended = true
                for fd in state.sockets { shutdown(fd, Int32(SHUT_RDWR)) }
                for task in state.handlers.values { task.cancel() }
            }
        }
        stop()
        if endingConnections, connectionThreads.wait(timeout: .now() + .seconds(Self.connectionsEndBoundSeconds)) == .timedOut {
            log.line("\(logTag) stopped with \(openConnections) connection(s) still ending after \(Self.connectionsEndBoundSeconds) s")
        }
    }

    /// Stops accepting: shuts the listening socket down, then waits until the accept loop has ended and closed
    /// it. Connections already accepted finish on their own threads. Calling it again does nothing.
    public func stop() {
        let fd: Int32? = lifecycle.withLock { state in
            guard !state.stopping, state.listener >= 0 else { return nil }
            state.stopping = true
            return state.listener
        }
        guard let fd else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        loopEnded.wait()
    }

    func acceptLoop(_ listener: Int32) {
        defer {
            close(listener)
            loopEnded.signal()
        }
        while true {
            var peer = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            // Close-on-exec from the start (accept4, `hsl_accept_cloexec`): in the lab runner's process, which serves the lab internet, other
            // threads spawn the lab's daemons at any moment, and a connection must not live on in one of them.
            let fd = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { hsl_accept_cloexec(listener, $0, &length) }
            }
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE {
                    if errno == EMFILE || errno == ENFILE { usleep(100_000) }
                    continue
                }
                let cause = String(cString: strerror(errno))
                if !lifecycle.withLock({ $0.stopping }) { log.line("\(logTag) accept stopped: \(cause)") }
                return
            }
            let peerIP = Self.address(of: &peer).ip
            connectionThreads.enter()
            let thread = Thread { [self] in
                self.serve(fd, peer: peerIP)
                self.connectionThreads.leave()
            }
            thread.start()
        }
    }

    func serve(_ fd: Int32, peer: String) {
        let ended = connections.withLock { state -> Bool in
            state.sockets.insert(fd)
            return state.ended
        }
        defer {
            connections.withLock { _ = $0.sockets.remove(fd) }
            close(fd)
        }
        guard !ended else { return }
        var timeout = timeval(tv_sec: ioTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let transport: any HTTPTransport
        if let tls {
            guard let session = TLSTransport(fd: fd, context: tls, peer: peer, logTag: logTag, log: log) else { return }
            transport = session
        } else {
            transport = PlainTransport(fd: fd)
        }
        defer { transport.finish() }
        var reader = HTTPRequestReader(transport: transport)
        while true {
            let request: RawHTTPRequest
            do {
                guard let next = try reader.next(continueAnswer: { _ = transport.write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }) else { return }
                request = next
            } catch let error as HTTPReadError {
                log.line("\(logTag) \(peer): \(error)")
                if let status = error.status {
                    _ = transport.write(Self.encode(PortalResponse(status: status, headers: [:], body: "\(error)\n"), head: false, keepOpen: false, version: "HTTP/1.1"))
                }
                return
            } catch {
                log.line("\(logTag) \(peer): \(error)")
                return
            }
            let response = run(request, peer, connection: fd)
            if logRequests, request.path != PortalServer.readinessPath {
                log.line("\(logTag) \(peer) \(request.method) \(request.path) -> \(response.status)")
            }
            let keepOpen = request.keepsConnectionOpen
            guard transport.write(Self.encode(response, head: request.method == "HEAD", keepOpen: keepOpen, version: request.version)), keepOpen else { return }
        }
    }

    /// Runs the async handler to its answer on this connection's thread (`ConnectionExecutor`): a portal's answer
    /// never waits for a free thread of Swift's cooperative pool (two on two cores; a test process's synchronous
    /// tests can hold both while they wait for this very answer).
    func run(_ request: RawHTTPRequest, _ peer: String, connection fd: Int32) -> PortalResponse {
        let executor = ConnectionExecutor()
        let box = ResponseBox()
        let handler = handler, log = log
        let task = Task(executorPreference: executor) {
            box.value = await PortalLog.$current.withValue(log) { await handler(request, peer) }
            executor.finish()
        }
        let ended = connections.withLock { state -> Bool in
            state.handlers[fd] = task
            return state.ended
        }
        if ended { task.cancel() }
        executor.runUntilFinished()
        connections.withLock { _ = $0.handlers.removeValue(forKey: fd) }
        return box.value ?? PortalResponse(status: 500)
    }

    /// The status line, the response's headers (sorted by name; Content-Length and Connection are the server's),
    /// and the body (none for HEAD, whose Content-Length is still the body's).
    static func encode(_ response: PortalResponse, head: Bool, keepOpen: Bool, version: String) -> [UInt8] {
        var text = "HTTP/1.1 \(response.status) \(phrase(response.status))\r\n"
        for (name, value) in response.headers.sorted(by: { $0.key < $1.key })
        where name.lowercased() != "content-length" && name.lowercased() != "connection" && name.lowercased() != "transfer-encoding" {
            text += "\(name): \(value)\r\n"
        }
        let body = Array(response.body.utf8)
        text += "Content-Length: \(body.count)\r\n"
        if !keepOpen {
            text += "Connection: close\r\n"
        } else if version == "HTTP/1.0" {
            text += "Connection: keep-alive\r\n"
        }
        text += "\r\n"
        return Array(text.utf8) + (head ? [] : body)
    }
}

/// The reason phrase of the statuses the lab's servers send.
func phrase(_ status: Int) -> String {
    switch status {
    case 200: return "OK"
    case 204: return "No Content"
    case 302: return "Found"
    case 400: return "Bad Request"
    case 401: return "Unauthorized"
    case 403: return "Forbidden"
    case 404: return "Not Found"
    case 413: return "Content Too Large"
    case 431: return "Request Header Fields Too Large"
    case 500: return "Internal Server Error"
    case 501: return "Not Implemented"
    case 511: return "Network Authentication Required"
    default: return "Status"
    }
}

private final class ResponseBox: @unchecked Sendable {  // @unchecked: written by the handler task, read after its semaphore is signalled
    var value: PortalResponse?
}

/// A task executor that is the thread calling `runUntilFinished`: the jobs of a task that prefers it (and of the
/// default actors it calls, SE-0417) run there, in order, until `finish()`.
final class ConnectionExecutor: TaskExecutor, @unchecked Sendable {  // @unchecked: `state` is a Mutex
    private let state = Mutex<(jobs: [UnownedJob], finished: Bool)>(([], false))
    private let wake = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        state.withLock { $0.jobs.append(job) }
        wake.signal()
    }

    func finish() {
        state.withLock { $0.finished = true }
        wake.signal()
    }

    func runUntilFinished() {
        while true {
            let (jobs, finished) = state.withLock { state -> ([UnownedJob], Bool) in
                defer { state.jobs.removeAll() }
                return (state.jobs, state.finished)
            }
            for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
            if finished && jobs.isEmpty { return }
            if jobs.isEmpty { wake.wait() }
        }
    }
}
