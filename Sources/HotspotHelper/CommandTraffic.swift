#if canImport(Glibc)
import Glibc
#endif
import HotspotProtocol
import HotspotSystem

// Traffic a helper sends for the command it handles (Apple's `NEHotspotHelperCommand.createTCPConnection`).
//
// While the station suppresses general IP traffic (every state but Authenticated), its policy routing makes
// every packet unreachable EXCEPT packets whose socket carries SO_MARK == `HotspotHelper.commandTrafficMark`.
// Sockets made here get that mark before they connect, so a helper can probe, read the portal page and
// log in while everything else on the device is held back.

extension HotspotHelper {
    /// The SO_MARK of the sockets a helper uses for its commands ("HS"). The station's suppression lets
    /// exactly these through.
    public static let commandTrafficMark: UInt32 = HotspotProtocol.commandTrafficMark
}

/// A failed network operation of a helper: `OPERATION TARGET: CAUSE (ENAME)`, e.g.
/// `connect to 198.51.100.1:8080: Connection refused (ECONNREFUSED)`.
public struct HotspotTrafficError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was attempted: `connect to`, `resolve`, `send request to`, `read response from`, `parse URL`...
    public var operation: String
    /// The host, `host:port` or URL it was attempted on.
    public var target: String
    /// The errno value (ETIMEDOUT for timeouts), 0 when the cause is not an errno (see `detail`).
    public var errno: Int32
    /// The cause in words when there is no errno, or extra text after the errno text.
    public var detail: String?

    public init(_ operation: String, _ target: String, errno: Int32 = 0, detail: String? = nil) {
        self.operation = operation
        self.target = target
        self.errno = errno
        self.detail = detail
    }

    /// The operation did not finish in time.
    public var isTimeout: Bool { errno == ETIMEDOUT }
    /// Nobody listens (TCP reset on connect, or ICMP port unreachable for DNS).
    public var isConnectionRefused: Bool { errno == ECONNREFUSED }
    /// The TLS handshake failed because the server's certificate did not verify (or was rejected by a
    /// `HotspotHTTPClient.serverTrust` decision).
    public var isCertificateFailure: Bool {
        operation == "TLS handshake with"
            && (detail?.hasPrefix("certificate verify failed") == true || detail == "the server's certificate was rejected")
    }

    public var description: String {
        var cause = errno != 0 ? Errno.text(errno) : (detail ?? "unknown error")
        if errno != 0, let detail, !detail.isEmpty { cause += ", " + detail }
        return "\(operation) \(target): \(cause)"
    }
}

/// A point in time by which an operation must be done (CLOCK_MONOTONIC).
struct TrafficDeadline {
    let end: Duration
    let total: Duration

    init(_ timeout: Duration) {
        total = timeout
        end = SystemMonotonicClock.read() + timeout
    }

    var remaining: Duration { end - SystemMonotonicClock.read() }
    var passed: Bool { remaining <= .zero }

    /// ETIMEDOUT with the timeout in words.
    func timedOut(_ operation: String, _ target: String) -> HotspotTrafficError {
        HotspotTrafficError(operation, target, errno: ETIMEDOUT, detail: "no answer within \(Self.words(total))")
    }

    static func words(_ d: Duration) -> String {
        let ms = Int64(d.components.seconds) * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
    }

    /// Waits for `events` on `fd`; false when the deadline passes first.
    func wait(_ fd: Int32, _ events: Int16) -> Bool {
        while true {
            let left = remaining
            if left <= .zero { return false }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let n = poll(&p, 1, left.pollMilliseconds)
            if n > 0 { return true }
            if n < 0, Errno.current != EINTR { return true } // let the following call report the error
        }
    }
}

/// Applying SO_MARK, and the one report when it cannot be applied (not root: EPERM).
enum CommandTrafficMark {
    /// Whether the failure was reported (the lock's state).
    private static let reported = Locked(false)

    /// Sets SO_MARK on `fd`. On failure the socket stays unmarked (its traffic then only passes while IP is not
    /// suppressed) and the failure is reported once per process, through the SDK's report (stderr and
    /// `HotspotHelper.lastError`).
    @discardableResult
    static func apply(_ mark: UInt32, to fd: Int32) -> Bool {
        var value = mark
        if setsockopt(fd, SOL_SOCKET, SO_MARK, &value, socklen_t(MemoryLayout<UInt32>.size)) == 0 { return true }
        let code = Errno.current
        let first = reported.withLock { reported -> Bool in
            defer { reported = true }
            return !reported
        }
        if first {
            let why = code == EPERM ? " (setting SO_MARK needs CAP_NET_ADMIN: run the helper as root)" : ""
            reportSDKError(HotspotHelperError(
                "set SO_MARK 0x\(String(mark, radix: 16)) on a command socket: \(Errno.text(code))\(why); "
                    + "continuing unmarked: this helper's traffic passes only while the station does not suppress IP"))
        }
        return false
    }

    /// The SO_MARK of `fd` (0: none), nil when it cannot be read.
    static func read(_ fd: Int32) -> UInt32? {
        var value: UInt32 = 0
        var length = socklen_t(MemoryLayout<UInt32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_MARK, &value, &length) == 0 else { return nil }
        return value
    }
}

/// Reports through the registered connection when there is one, else to stderr and `lastError`.
func reportSDKError(_ error: HotspotHelperError) {
    if let client = HelperClient.shared {
        client.report(error)
    } else {
        HelperClient.setError(error.description)
        logLine("HotspotHelper: \(error.description)")
    }
}

/// Parses a dotted IPv4 literal (`198.51.100.1`); nil for anything else.
func parseIPv4(_ text: String) -> in_addr? {
    var address = in_addr()
    let ok = text.withCString { inet_pton(AF_INET, $0, &address) }
    return ok == 1 ? address : nil
}

func ipv4Text(_ address: in_addr) -> String {
    let b = withUnsafeBytes(of: address.s_addr) { Array($0) }
    return "\(b[0]).\(b[1]).\(b[2]).\(b[3])"
}

func socketAddress(_ address: in_addr, port: UInt16) -> sockaddr_in {
    var sa = sockaddr_in()
    sa.sin_family = sa_family_t(AF_INET)
    sa.sin_port = port.bigEndian
    sa.sin_addr = address
    return sa
}

/// An IPv4 or IPv6 address literal (`198.51.100.1`, `2001:db8::1`, `[2001:db8::1]`) as a socket address.
struct IPLiteral: Sendable, Equatable {
    /// 4 or 16 bytes, network order.
    let bytes: [UInt8]

    init?(_ text: String) {
        if let v4 = parseIPv4(text) {
            bytes = withUnsafeBytes(of: v4) { Array($0) }
        } else if let v6 = IPLiteral.ipv6(text) {
            var address = in6_addr()
            _ = v6.withCString { inet_pton(AF_INET6, $0, &address) }
            bytes = withUnsafeBytes(of: address) { Array($0) }
        } else {
            return nil
        }
    }

    init(bytes: [UInt8]) { self.bytes = bytes }

    var isIPv6: Bool { bytes.count == 16 }
    var family: Int32 { isIPv6 ? AF_INET6 : AF_INET }
    var text: String { isIPv6 ? HotspotDNS.ipv6Text(bytes) : bytes.map(String.init).joined(separator: ".") }

    /// `text` without brackets when it is an IPv6 literal; nil otherwise.
    static func ipv6(_ text: String) -> String? {
        var inner = Substring(text)
        if inner.hasPrefix("["), inner.hasSuffix("]") { inner = inner.dropFirst().dropLast() }
        var address = in6_addr()
        guard inner.contains(":"), String(inner).withCString({ inet_pton(AF_INET6, $0, &address) }) == 1 else { return nil }
        return String(inner)
    }

    /// Calls `body` with this address and `port` as a `sockaddr` and its length.
    func withSocketAddress<T>(port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        if isIPv6 {
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sa.sin6_addr) { $0.copyBytes(from: bytes) }
            return withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = port.bigEndian
        withUnsafeMutableBytes(of: &sa.sin_addr) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }
}

/// NAT64 address synthesis for IPv4 literals, as iOS does on an IPv6-only network (Apple, "Supporting IPv6
/// DNS64/NAT64 Networks": an IPv4 literal handed to the system's APIs is synthesized into the network's NAT64
/// prefix). The prefix is discovered as RFC 7050 says: the AAAA records of `ipv4only.arpa` are the well-known
/// addresses 192.0.0.170 and 192.0.0.171 synthesized; what precedes them is the prefix (here /96 only, the
/// length DNS64 servers use in practice; RFC 6052's other lengths put the IPv4 bits elsewhere).
enum NAT64Synthesis {
    static let wellKnown: [[UInt8]] = [[192, 0, 0, 170], [192, 0, 0, 171]]

    /// The /96 prefix (12 bytes) from `ipv4only.arpa`'s AAAA answers; nil when none is a synthesized well-known address.
    static func prefix(fromIPv4OnlyAnswers answers: [String]) -> [UInt8]? {
        for answer in answers {
            guard let literal = IPLiteral(answer), literal.isIPv6, wellKnown.contains(Array(literal.bytes.suffix(4))) else { continue }
            return Array(literal.bytes.prefix(12))
        }
        return nil
    }

    static func synthesize(_ ipv4: IPLiteral, prefix: [UInt8]) -> IPLiteral {
        IPLiteral(bytes: prefix + ipv4.bytes)
    }
}

/// The addresses to try for `host`: a literal as it is; a name resolved by `resolver`, by default the one the
/// environment names, over sockets marked with `mark` (IPv6 first when the station has IPv6). Shared by the TCP
/// and UDP sockets below.
func resolveAddresses(_ host: String, deadline: TrafficDeadline, mark: UInt32?,
                      resolver: HotspotResolver?) throws(HotspotTrafficError) -> [IPLiteral]
{
    if let literal = IPLiteral(host) { return [literal] }
    let texts = try (resolver ?? HotspotResolver.fromEnvironment(mark: mark)).resolveAll(host, deadline: deadline)
    let parsed = texts.compactMap { IPLiteral($0) }
    guard !parsed.isEmpty else { throw HotspotTrafficError("resolve", host, detail: "bad address \(texts.joined(separator: ", "))") }
    return parsed
}

/// `host:port` for messages, with the address when `host` is a name.
func targetText(host: String, port: UInt16, address: String) -> String {
    host == address ? "\(host):\(port)" : "\(host):\(port) (\(address))"
}

/// A socket of `type` (`SOCK_STREAM`, `SOCK_DGRAM`; `kind` names it in errors: "TCP", "UDP") to `host` (resolved as
/// `resolveAddresses` does; its addresses tried in order while connect fails at once for want of a route),
/// nonblocking, marked with `mark` (when given) BEFORE connecting, and its connect started: `connectError` is
/// connect(2)'s errno, nil when it connected at once. An IPv4 literal the station has no IPv4 route for (an
/// IPv6-only network) is tried again synthesized into the NAT64 prefix (`NAT64Synthesis`). The caller owns `fd`.
private func startConnecting(_ type: __socket_type, _ kind: String, host: String, port: UInt16, deadline: TrafficDeadline,
                             mark: UInt32?, resolver: HotspotResolver?)
    throws(HotspotTrafficError) -> (fd: Int32, address: String, target: String, connectError: Int32?)
{
    var candidates = try resolveAddresses(host, deadline: deadline, mark: mark, resolver: resolver)
    var synthesized = false
    var index = 0
    while true {
        let address = candidates[index]
        let target = targetText(host: host, port: port, address: address.text)
        let fd = socket(address.family, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw HotspotTrafficError("create a \(kind) socket for", target, errno: Errno.current) }
        if let mark { CommandTrafficMark.apply(mark, to: fd) }
        let rc = address.withSocketAddress(port: port) { Glibc.connect(fd, $0, $1) }
        let code = rc == 0 ? nil : Errno.current
        let noRoute = code == ENETUNREACH || code == EHOSTUNREACH || code == EADDRNOTAVAIL || code == EAFNOSUPPORT
        if noRoute, index + 1 < candidates.count {
            _ = Glibc.close(fd)
            index += 1
            continue
        }
        // ENETUNREACH: no IPv4 route at all; EHOSTUNREACH: the same while the station suppresses IP (a marked socket
        // finds no IPv4 route in `main` and falls through to the suppression table's unreachable default), which is
        // when a helper signs in: synthesis must work then too.
        if code == ENETUNREACH || code == EHOSTUNREACH, !synthesized, !address.isIPv6, IPLiteral(host) != nil,
           let answers = try? (resolver ?? HotspotResolver.fromEnvironment(mark: mark)).resolveAll("ipv4only.arpa", type: HotspotDNS.typeAAAA, deadline: deadline),
           let prefix = NAT64Synthesis.prefix(fromIPv4OnlyAnswers: answers) {
            _ = Glibc.close(fd)
            synthesized = true
            candidates.append(NAT64Synthesis.synthesize(address, prefix: prefix))
            index += 1
            continue
        }
        return (fd, address.text, target, code)
    }
}

/// A connected TCP socket (IPv4), marked for command traffic when asked (`HotspotHelperCommand.createTCPConnection`).
/// Nonblocking underneath; every read and write takes a timeout. Closed by `close()` or deinit. One thread may
/// close it while another reads or writes: that call then fails with ECANCELED (see `SharedSocket`).
public final class HotspotTCPConnection: Sendable {
    private let socket: SharedSocket
    /// The descriptor (-1 once closed). For its owner (options, TLS on top): do not use the number on one thread
    /// while another may close the connection; `read`, `write`, `shutdown` and `close` are safe to mix.
    public var fd: Int32 { socket.descriptor }
    /// The host as given (a name or an IPv4 literal) and the port.
    public let host: String
    public let port: UInt16
    /// The IPv4 address connected to.
    public let address: String

    init(fd: Int32, host: String, port: UInt16, address: String) {
        socket = SharedSocket(fd)
        self.host = host
        self.port = port
        self.address = address
    }

    deinit { close() }

    /// `host:port` for messages (with the address when `host` is a name).
    public var target: String { targetText(host: host, port: port, address: address) }

    /// Resolves `host` (an IPv4 literal skips DNS; else `resolver`, by default the one the environment names),
    /// creates the socket, sets SO_MARK to `mark` (when given) BEFORE connecting, and connects within `timeout`.
    public static func connect(host: String, port: UInt16, timeout: Duration = .seconds(10), mark: UInt32? = nil,
                               resolver: HotspotResolver? = nil) throws(HotspotTrafficError) -> HotspotTCPConnection
    {
        let deadline = TrafficDeadline(timeout)
        return try connect(host: host, port: port, deadline: deadline, mark: mark, resolver: resolver)
    }

    static func connect(host: String, port: UInt16, deadline: TrafficDeadline, mark: UInt32?,
                        resolver: HotspotResolver?) throws(HotspotTrafficError) -> HotspotTCPConnection
    {
        let started = try startConnecting(SOCK_STREAM, "TCP", host: host, port: port, deadline: deadline, mark: mark, resolver: resolver)
        let (fd, target) = (started.fd, started.target)
        let connection = HotspotTCPConnection(fd: fd, host: host, port: port, address: started.address)
        if let code = started.connectError {
            guard code == EINPROGRESS || code == EINTR else { throw HotspotTrafficError("connect to", target, errno: code) }
            guard deadline.wait(fd, Int16(POLLOUT)) else { throw deadline.timedOut("connect to", target) }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = Errno.current }
            if error != 0 { throw HotspotTrafficError("connect to", target, errno: error) }
        }
        return connection
    }

    /// The socket's SO_MARK (0: unmarked), nil when closed or unreadable.
    public var mark: UInt32? { socket.mark }

    /// Closes the connection (once). A read or write waiting on another thread is woken and fails with ECANCELED.
    public func close() { socket.close() }

    /// Shuts the connection down without closing it: `writingOnly` sends FIN after what was written (reads go on);
    /// otherwise both ways, and a pending read returns end of stream. Nothing once closed.
    public func shutdown(writingOnly: Bool = false) {
        socket.shutdown(Int32(writingOnly ? SHUT_WR : SHUT_RDWR))
    }

    /// Writes all of `bytes` within `timeout`.
    public func write(_ bytes: [UInt8], timeout: Duration = .seconds(10)) throws(HotspotTrafficError) {
        try write(bytes, deadline: TrafficDeadline(timeout))
    }

    func write(_ bytes: [UInt8], deadline: TrafficDeadline) throws(HotspotTrafficError) {
        var offset = 0
        while offset < bytes.count {
            let (n, code) = try socket.call("send to", target) { fd in
                let n = bytes.withUnsafeBytes { p in
                    Glibc.send(fd, p.baseAddress! + offset, p.count - offset, Int32(MSG_NOSIGNAL))
                }
                return (n, n > 0 ? 0 : Errno.current)
            }
            if n > 0 {
                offset += n
                continue
            }
            if n < 0, code == EINTR { continue }
            guard n < 0, code == EAGAIN || code == EWOULDBLOCK else { throw HotspotTrafficError("send to", target, errno: code) }
            guard try socket.call("send to", target, { deadline.wait($0, Int16(POLLOUT)) }) else {
                throw deadline.timedOut("send to", target)
            }
        }
    }

    /// Reads what is available (up to `maximum` bytes), waiting up to `timeout` for something; empty at end of stream.
    public func read(maximum: Int = 65_536, timeout: Duration = .seconds(10)) throws(HotspotTrafficError) -> [UInt8] {
        try read(maximum: maximum, deadline: TrafficDeadline(timeout))
    }

    func read(maximum: Int, deadline: TrafficDeadline) throws(HotspotTrafficError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max(1, maximum))
        while true {
            let (n, code) = try socket.call("read from", target) { fd in
                let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
                return (n, n < 0 ? Errno.current : 0)
            }
            if n >= 0 { return Array(buffer[0..<n]) }
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else { throw HotspotTrafficError("read from", target, errno: code) }
            guard try socket.call("read from", target, { deadline.wait($0, Int16(POLLIN)) }) else {
                throw deadline.timedOut("read from", target)
            }
        }
    }
}

extension HotspotHelperCommand {
    /// A TCP connection for this command: its socket carries `HotspotHelper.commandTrafficMark` (set before
    /// connecting), so it works while the station suppresses general traffic. Host names are resolved over a
    /// marked UDP socket (see `HotspotResolver.fromEnvironment`). The timeout is cut short so that the
    /// command can still be answered before its deadline (see `timeLeft`).
    public func createTCPConnection(host: String, port: UInt16, timeout: Duration = .seconds(10))
        throws(HotspotTrafficError) -> HotspotTCPConnection
    {
        let t = try boundedTimeout(timeout, "connect to", "\(host):\(port)")
        return try HotspotTCPConnection.connect(host: host, port: port, timeout: t, mark: HotspotHelper.commandTrafficMark)
    }

    /// Sends one HTTP/1.1 request for this command over a marked connection and returns the answer as it is
    /// (redirects are NOT followed: a helper must see the portal's 302). The timeout is `request.timeout`
    /// (default 10 s), cut short so that the command can still be answered before its deadline.
    public func http(_ request: HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse {
        var bounded = request
        bounded.timeout = try boundedTimeout(request.timeout ?? HotspotHTTPClient.defaultTimeout, request.method, request.url)
        return try HotspotHTTPClient(mark: HotspotHelper.commandTrafficMark).send(bounded)
    }

    /// `http(_:)` over `client` (its `serverTrust`, resolver...), with the command's mark and deadline.
    @_spi(Compat) public func http(_ request: HotspotHTTPRequest, using client: HotspotHTTPClient) throws(HotspotTrafficError) -> HotspotHTTPResponse {
        var bounded = request
        bounded.timeout = try boundedTimeout(request.timeout ?? client.timeout, request.method, request.url)
        var marked = client
        marked.mark = HotspotHelper.commandTrafficMark
        return try marked.send(bounded)
    }

    /// Time left until 80% of the command's deadline has passed (the margin is for answering); nil for
    /// presentUI (no deadline).
    public var timeLeft: Duration? {
        guard let ms = deadlineMilliseconds else { return nil }
        let budget = Duration.milliseconds(Int64(ms * 0.8))
        return budget - (SystemMonotonicClock.read() - receivedAt)
    }

    func boundedTimeout(_ requested: Duration, _ operation: String, _ target: String) throws(HotspotTrafficError) -> Duration {
        // An evaluation provider has no network: its attempt is reported to hotspotd (docs/PROVIDERS.md).
        client.deliveryGate?.noteTraffic(self, operation, target)
        guard let left = timeLeft else { return requested }
        guard left > .milliseconds(1) else {
            throw HotspotTrafficError(operation, target, errno: ETIMEDOUT,
                                      detail: "no time left before the \(commandType) command's deadline")
        }
        return min(requested, left)
    }
}

/// A connected UDP socket (IPv4), marked for command traffic when asked (`HotspotHelperCommand.createUDPSocket`,
/// under the compat module's `NWUDPSession`). Nonblocking underneath; every receive takes a timeout. One thread may
/// close it while another sends or receives: that call then fails with ECANCELED (see `SharedSocket`).
public final class HotspotUDPSocket: Sendable {
    private let socket: SharedSocket
    /// The descriptor (-1 once closed). For its owner: do not use the number on one thread while another may close
    /// the socket; `send`, `receive`, `shutdown` and `close` are safe to mix.
    public var fd: Int32 { socket.descriptor }
    public let host: String
    public let port: UInt16
    /// The IPv4 address the socket is connected to.
    public let address: String

    init(fd: Int32, host: String, port: UInt16, address: String) {
        socket = SharedSocket(fd)
        self.host = host
        self.port = port
        self.address = address
    }

    deinit { close() }

    public var target: String { targetText(host: host, port: port, address: address) }

    /// Resolves `host` (over a socket marked like this one), creates the socket, sets SO_MARK to `mark` (when
    /// given) before connecting, and connects it (UDP: fixes the peer; nothing is sent).
    public static func connect(host: String, port: UInt16, timeout: Duration = .seconds(10), mark: UInt32? = nil,
                               resolver: HotspotResolver? = nil) throws(HotspotTrafficError) -> HotspotUDPSocket
    {
        let started = try startConnecting(SOCK_DGRAM, "UDP", host: host, port: port, deadline: TrafficDeadline(timeout),
                                          mark: mark, resolver: resolver)
        let udp = HotspotUDPSocket(fd: started.fd, host: host, port: port, address: started.address)
        if let code = started.connectError { throw HotspotTrafficError("connect a UDP socket to", started.target, errno: code) }
        return udp
    }

    /// The socket's SO_MARK (0: unmarked), nil when closed or unreadable.
    public var mark: UInt32? { socket.mark }

    /// Wakes a pending `receive` (it then returns end of stream) and stops further sends.
    public func shutdown() { socket.shutdown(Int32(SHUT_RDWR)) }

    /// Closes the socket (once). A `receive` waiting on another thread is woken and fails with ECANCELED.
    public func close() { socket.close() }

    /// Sends one datagram (the kernel refuses at once what policy routing makes unreachable: EHOSTUNREACH).
    public func send(_ datagram: [UInt8]) throws(HotspotTrafficError) {
        while true {
            let (n, code) = try socket.call("send a datagram to", target) { fd in
                let n = datagram.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                return (n, n < 0 ? Errno.current : 0)
            }
            if n >= 0 { return }
            if code == EINTR { continue }
            throw HotspotTrafficError("send a datagram to", target, errno: code)
        }
    }

    /// Receives one datagram (at most `maximum` bytes), waiting up to `timeout`; nil once the socket is shut down.
    public func receive(maximum: Int = 65_535, timeout: Duration = .seconds(10)) throws(HotspotTrafficError) -> [UInt8]? {
        let deadline = TrafficDeadline(timeout)
        var buffer = [UInt8](repeating: 0, count: max(1, maximum))
        let operation = "receive a datagram from"
        while true {
            // code: errno when n < 0; when n == 0 (an empty datagram, or the socket was shut down), SO_ERROR.
            let (n, code) = try socket.call(operation, target) { fd -> (Int, Int32) in
                let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
                if n < 0 { return (n, Errno.current) }
                var error = Int32(0)
                var length = socklen_t(MemoryLayout<Int32>.size)
                if n == 0, getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = 0 }
                return (n, error)
            }
            if n > 0 { return Array(buffer[0..<n]) }
            if n == 0 {
                if code != 0 { throw HotspotTrafficError(operation, target, errno: code) }
                return nil
            }
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else { throw HotspotTrafficError(operation, target, errno: code) }
            // Shut down: nothing more will come (recv keeps answering EAGAIN, and poll at once: no busy loop).
            if socket.isReadShutDown { return nil }
            guard try socket.call(operation, target, { deadline.wait($0, Int16(POLLIN)) }) else {
                throw deadline.timedOut(operation, target)
            }
        }
    }
}

extension HotspotHelperCommand {
    /// A UDP socket for this command, marked like `createTCPConnection`'s (host names resolved over a marked socket).
    public func createUDPSocket(host: String, port: UInt16, timeout: Duration = .seconds(10))
        throws(HotspotTrafficError) -> HotspotUDPSocket
    {
        let t = try boundedTimeout(timeout, "connect a UDP socket to", "\(host):\(port)")
        return try HotspotUDPSocket.connect(host: host, port: port, timeout: t, mark: HotspotHelper.commandTrafficMark)
    }
}
