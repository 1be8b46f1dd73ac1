import COpenSSL
import PortalKinds
import CTLSShim
import Foundation
#if canImport(Glibc)
import Glibc
import Synchronization
#endif

// The https-only portal: TLS terminated in this process (the system OpenSSL), so the portal still sees the
// client's own address as the TCP peer and the gate can let that client (IP and MAC) through.

public struct TLSServerError: Error, CustomStringConvertible {
    public var operation: String
    public var object: String
    public var cause: String
    public var description: String { "\(operation) \(object): \(cause)" }
}

/// A plain HTTP/1.1 request read off a TLS connection (one request per connection).
public struct RawHTTPRequest: Sendable, Equatable {
    public var method: String
    /// The path without the query.
    public var path: String
    /// The raw query (without `?`), empty when none.
    public var query: String
    public var headers: [(String, String)]
    public var body: [UInt8]

    public static func == (a: RawHTTPRequest, b: RawHTTPRequest) -> Bool {
        a.method == b.method && a.path == b.path && a.query == b.query && a.body == b.body
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

    /// Parses a request head (up to and without the empty line): `GET /p?q HTTP/1.1` and header lines.
    public static func parseHead(_ text: String) -> RawHTTPRequest? {
        // "\r\n" is one Character in Swift: split on both spellings of a line end.
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map(String.init)
        guard let first = lines.first else { return nil }
        let parts = first.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1."), parts[1].hasPrefix("/") else { return nil }
        let target = String(parts[1])
        let (path, query) = target.firstIndex(of: "?").map { (String(target[..<$0]), String(target[target.index(after: $0)...])) } ?? (target, "")
        var headers: [(String, String)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return RawHTTPRequest(method: String(parts[0]), path: path, query: query, headers: headers, body: [])
    }
}

/// A TLS server context: the certificate chain and key (PEM files), TLS 1.2 or later.
public final class TLSServerContext: @unchecked Sendable {  // @unchecked: an SSL_CTX is shared between connections as OpenSSL allows once it is set up (here, in init)
    let context: OpaquePointer

    public init(certificateFile: String, keyFile: String) throws {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw TLSServerError(operation: "create", object: "a TLS server context", cause: Self.errors())
        }
        _ = hsl_SSL_CTX_set_min_proto_version(ctx, hsl_TLS1_2_VERSION())
        hsl_SSL_CTX_ignore_unexpected_eof(ctx)
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else {
            SSL_CTX_free(ctx)
            throw TLSServerError(operation: "load the TLS certificate", object: certificateFile, cause: Self.errors())
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, hsl_SSL_FILETYPE_PEM()) == 1 else {
            SSL_CTX_free(ctx)
            throw TLSServerError(operation: "load the TLS private key", object: keyFile, cause: Self.errors())
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            SSL_CTX_free(ctx)
            throw TLSServerError(operation: "match the TLS private key \(keyFile) with", object: certificateFile, cause: Self.errors())
        }
        context = ctx
    }

    /// A context without a certificate of its own: every handshake takes the one `selectCertificate` chooses
    /// (the lab internet issues them on first use, so nothing is issued before the server listens).
    public init() throws {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw TLSServerError(operation: "create", object: "a TLS server context", cause: Self.errors())
        }
        _ = hsl_SSL_CTX_set_min_proto_version(ctx, hsl_TLS1_2_VERSION())
        hsl_SSL_CTX_ignore_unexpected_eof(ctx)
        context = ctx
    }

    deinit {
        SSL_CTX_free(context)
        selector?.release()
    }

    /// SNI: the client's server name picks the certificate. `choose` gives the context for a name (nil: a client
    /// that sent none), or nil to refuse the handshake with `unrecognized_name`. `choose` must keep the contexts
    /// it returns alive (a cache) while connections use them.
    private var selector: Unmanaged<ServerNameSelector>?

    public func selectCertificate(byServerName choose: @escaping @Sendable (String?) -> TLSServerContext?) {
        let box = Unmanaged.passRetained(ServerNameSelector(choose))
        selector?.release()
        selector = box
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_TLSEXT_SERVERNAME_ARG, 0, box.toOpaque())
        _ = SSL_CTX_callback_ctrl(context, SSL_CTRL_SET_TLSEXT_SERVERNAME_CB,
                                  unsafeBitCast(serverNameCallback, to: (@convention(c) () -> Void).self))
    }

    static func errors() -> String {
        var buffer = [CChar](repeating: 0, count: 1024)
        guard hsl_drain_errors(&buffer, buffer.count) > 0 else { return "no OpenSSL error (errno: \(String(cString: strerror(errno))))" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Serves HTTPS: accepts on `ip:port`, one thread per connection (blocking I/O with a 30 s timeout), one request
/// per connection (`Connection: close`). The handler gets the request and the TCP peer's IPv4 address.
public final class TLSHTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (RawHTTPRequest, _ peer: String) async -> PortalResponse
    let context: TLSServerContext
    let handler: Handler
    let ioTimeoutSeconds: Int

    public init(context: TLSServerContext, ioTimeoutSeconds: Int = 30, handler: @escaping Handler) {
        self.context = context
        self.handler = handler
        self.ioTimeoutSeconds = ioTimeoutSeconds
    }

    /// Binds and listens on `ip:port` (SO_REUSEADDR); returns the listening socket and its port.
    /// A listening TCP socket on `ip` (IPv4, or IPv6 such as `2001:db8:ffff::1`, IPv6 only) and `port` (0: any).
    public static func listen(ip: String, port: UInt16) throws -> (fd: Int32, port: UInt16) {
        let v6 = ip.contains(":")
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
                    return inet_pton(AF_INET6, ip, &sa.pointee.sin6_addr) == 1
                }
            }
        } else {
            size = socklen_t(MemoryLayout<sockaddr_in>.size)
            parsed = withUnsafeMutablePointer(to: &storage) { raw in
                raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sa in
                    sa.pointee.sin_family = sa_family_t(AF_INET)
                    sa.pointee.sin_port = port.bigEndian
                    return inet_pton(AF_INET, ip, &sa.pointee.sin_addr) == 1
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
            throw TLSServerError(operation: "listen on", object: v6 ? "[\(ip)]:\(port) (TLS)" : "\(ip):\(port) (TLS)", cause: cause)
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
        thread.name = "tls-accept"
        thread.start()
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
            let fd = withUnsafeMutablePointer(to: &peer) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) } }
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE {
                    if errno == EMFILE || errno == ENFILE { usleep(100_000) }
                    continue
                }
                let cause = String(cString: strerror(errno))
                if !lifecycle.withLock({ $0.stopping }) { logLine("[tls] accept stopped: \(cause)") }
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let peerIP = Self.address(of: &peer).ip
            let thread = Thread { [self] in self.serve(fd, peer: peerIP) }
            thread.start()
        }
    }

    func serve(_ fd: Int32, peer: String) {
        defer { close(fd) }
        var timeout = timeval(tv_sec: ioTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { return }
        defer {
            ERR_clear_error()
            SSL_free(ssl)
        }
        SSL_set_fd(ssl, fd)
        guard hsl_SSL_accept(ssl) == 1 else {
            logLine("[tls] handshake with \(peer) failed: \(TLSServerContext.errors())")
            return
        }
        let request: RawHTTPRequest
        do { request = try readRequest(ssl) } catch {
            logLine("[tls] \(peer): \(error)")
            return
        }
        let box = ResponseBox()
        let semaphore = DispatchSemaphore(value: 0)
        let handler = self.handler
        Task {
            box.value = await handler(request, peer)
            semaphore.signal()
        }
        semaphore.wait()
        let response = box.value ?? PortalResponse(status: 500)
        logLine("[tls] \(peer) \(request.method) \(request.path) -> \(response.status)")
        var head = "HTTP/1.1 \(response.status) \(phrase(response.status))\r\n"
        for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) where name.lowercased() != "content-length" && name.lowercased() != "connection" {
            head += "\(name): \(value)\r\n"
        }
        let body = Array(response.body.utf8)
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Array(head.utf8) + (request.method == "HEAD" ? [] : body)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { hsl_SSL_write(ssl, $0.baseAddress! + offset, Int32($0.count - offset)) }
            guard n > 0 else { return }
            offset += Int(n)
        }
        _ = hsl_SSL_shutdown(ssl)
    }

    func readFailure(_ ssl: OpaquePointer, _ n: Int32, _ got: Int) -> TLSServerError {
        let code = SSL_get_error(ssl, n)
        let cause: String
        switch code {
        case SSL_ERROR_ZERO_RETURN: cause = "the client closed the connection"
        case SSL_ERROR_SYSCALL: cause = errno == 0 ? "the client closed the connection" : String(cString: strerror(errno))
        default: cause = "SSL error \(code): \(TLSServerContext.errors())"
        }
        return TLSServerError(operation: "read an HTTP request", object: "(\(got) bytes so far)", cause: cause)
    }

    /// The head up to the empty line (at most 64 KiB), then a Content-Length body (at most 1 MiB).
    func readRequest(_ ssl: OpaquePointer) throws -> RawHTTPRequest {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            let n = chunk.withUnsafeMutableBytes { hsl_SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            guard n > 0 else { throw readFailure(ssl, n, data.count) }
            data += chunk[0..<Int(n)]
            if data.count > 65_536 + 16_384 {
                throw TLSServerError(operation: "read an HTTP request", object: "head", cause: "longer than 64 KiB")
            }
            if data.count >= 4 {
                for i in 0...(data.count - 4) where data[i] == 13 && Array(data[i..<(i + 4)]) == separator {
                    headEnd = i
                    break
                }
            }
        }
        let head = String(decoding: data[0..<headEnd!], as: UTF8.self)
        guard var request = RawHTTPRequest.parseHead(head) else {
            throw TLSServerError(operation: "parse", object: "the HTTP request head", cause: "not `METHOD /path HTTP/1.x` and header lines: \(head.prefix(80))")
        }
        var body = Array(data[(headEnd! + 4)...])
        let length = request.header("Content-Length").flatMap { Int($0) } ?? 0
        guard length >= 0, length <= 1 << 20 else {
            throw TLSServerError(operation: "read", object: "the HTTP request body", cause: "Content-Length \(length) not in 0...1 MiB")
        }
        while body.count < length {
            let n = chunk.withUnsafeMutableBytes { hsl_SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            guard n > 0 else { throw readFailure(ssl, n, data.count) }
            body += chunk[0..<Int(n)]
        }
        request.body = Array(body.prefix(length))
        return request
    }
}

final class ServerNameSelector: @unchecked Sendable {  // @unchecked: lets only (a Sendable closure)
    let choose: @Sendable (String?) -> TLSServerContext?
    init(_ choose: @escaping @Sendable (String?) -> TLSServerContext?) { self.choose = choose }
}

/// OpenSSL's servername callback (`SSL_CTX_set_tlsext_servername_callback`): switches the connection to the
/// context chosen for the SNI name.
private let serverNameCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { ssl, alert, arg in
    guard let ssl, let arg else { return SSL_TLSEXT_ERR_OK }
    let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
    let selector = Unmanaged<ServerNameSelector>.fromOpaque(arg).takeUnretainedValue()
    guard let chosen = selector.choose(name) else {
        alert?.pointee = SSL_AD_UNRECOGNIZED_NAME
        return SSL_TLSEXT_ERR_ALERT_FATAL
    }
    guard SSL_set_SSL_CTX(ssl, chosen.context) != nil else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    return SSL_TLSEXT_ERR_OK
}

private final class ResponseBox: @unchecked Sendable {  // @unchecked: written by the handler task, read after its semaphore is signalled
    var value: PortalResponse?
}
