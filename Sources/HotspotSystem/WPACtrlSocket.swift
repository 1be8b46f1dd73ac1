#if canImport(Glibc)
import Glibc
#endif

/// A client of the hostapd / wpa_supplicant control interface ("wpa_ctrl", a Unix datagram socket): requests
/// on one socket, unsolicited events (`AP-ENABLED`, `AP-STA-CONNECTED`, `CTRL-EVENT-CONNECTED` ...) on a
/// second, attached one. Waiting on events replaces sleep-and-hope. (Not hotspotd's control socket: that
/// one's client is `HotspotClient.ControlClient`.)
public final class WPACtrlSocket: @unchecked Sendable {  // @unchecked: both sockets are touched only with `lock` held
    public let serverPath: String
    private let lock = Mutex()
    private var requestSocket: (fd: Int32, local: String)?
    private var eventSocket: (fd: Int32, local: String)?
    /// Numbers the local socket paths of this process (the count so far is the lock's state).
    private static let counter = Locked(0)

    public init(serverPath: String) throws {
        self.serverPath = serverPath
        requestSocket = try Self.open(serverPath)
    }

    deinit { close() }

    public func close() {
        lock.lock()
        defer { lock.unlock() }
        for socket in [eventSocket, requestSocket].compactMap({ $0 }) {
            Glibc.close(socket.fd)
            unlink(socket.local)
        }
        eventSocket = nil
        requestSocket = nil
    }

    /// Waits for the control socket to appear and answer PING.
    public static func connect(serverPath: String, timeout: Duration = .seconds(10)) throws -> WPACtrlSocket {
        let deadline = ContinuousClock.now + timeout
        var last = "the control socket did not appear within \(timeout)"
        while ContinuousClock.now < deadline {
            if access(serverPath, F_OK) == 0 {
                do {
                    let control = try WPACtrlSocket(serverPath: serverPath)
                    if try control.request("PING", timeout: .seconds(1)) == "PONG" { return control }
                } catch {
                    last = "\(error)"
                }
            }
            usleep(10_000)
        }
        throw SystemError("connect to control socket", serverPath, reason: last)
    }

    /// `timeout` (30 s by default) is for a wpa_supplicant that never answers: a reply ends the wait at once, and a
    /// starved machine must not turn a slow reply into a lost association (it was 5 s).
    public func request(_ command: String, timeout: Duration = .seconds(30)) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        guard let socket = requestSocket else { throw SystemError(command, serverPath, reason: "control connection closed") }
        // A reply that came after an earlier request gave up is still queued: dropped, so that it is not taken for this
        // request's.
        Self.discardQueued(socket.fd)
        try Self.send(socket.fd, command, serverPath)
        let deadline = ContinuousClock.now + timeout
        while true {
            guard let reply = try Self.receive(socket.fd, until: deadline, serverPath) else {
                throw SystemError(command, serverPath, reason: "no reply within \(timeout)")
            }
            if reply.hasPrefix("<") { continue }
            return reply.hasSuffix("\n") ? String(reply.dropLast()) : reply
        }
    }

    /// Opens the event socket (ATTACH).
    public func attach() throws {
        lock.lock()
        defer { lock.unlock() }
        guard eventSocket == nil else { return }
        let socket = try Self.open(serverPath)
        try Self.send(socket.fd, "ATTACH", serverPath)
        guard let reply = try Self.receive(socket.fd, until: .now + .seconds(5), serverPath), reply.hasPrefix("OK") else {
            Glibc.close(socket.fd)
            unlink(socket.local)
            throw SystemError("ATTACH", serverPath, reason: "no OK")
        }
        eventSocket = socket
    }

    /// Waits for an event starting with one of `prefixes` and returns it (without its `<level>`).
    public func waitForEvent(_ prefixes: [String], timeout: Duration, other: (String) -> Void = { _ in }) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while let event = try nextEvent(until: deadline) {
            if prefixes.contains(where: { event.hasPrefix($0) }) { return event }
            other(event)
        }
        throw SystemError("wait for \(prefixes.joined(separator: " or ")) on", serverPath, reason: "no such event within \(timeout)")
    }

    /// The next unsolicited event (without its `<level>` prefix), or nil when none came by `deadline`. It polls and
    /// reads the event socket's descriptor outside the lock, until the deadline: call `close()` only once the thread
    /// reading events has ended (joined), as every caller does, or the number, reused by another lab's socket in the
    /// same process, would be read from.
    public func nextEvent(until deadline: ContinuousClock.Instant) throws -> String? {
        guard let socket = lock.withLock({ eventSocket }) else { throw SystemError("wait for events on", serverPath, reason: "not attached") }
        while let message = try Self.receive(socket.fd, until: deadline, serverPath) {
            guard message.hasPrefix("<"), let end = message.firstIndex(of: ">") else { continue }
            var event = message[message.index(after: end)...]
            while event.last == "\n" || event.last == "\r" { event = event.dropLast() }
            return String(event)
        }
        return nil
    }

    /// `KEY=value` lines (STATUS and friends) as a dictionary.
    public static func keyValues(_ reply: String) -> [String: String] {
        var result: [String: String] = [:]
        for line in reply.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            result[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        return result
    }

    private static func open(_ serverPath: String) throws -> (fd: Int32, local: String) {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError.current("open a control socket for", serverPath) }
        let number = counter.withLock { count in count += 1; return count }
        let local = "/tmp/hsl-ctrl-\(getpid())-\(number)"
        unlink(local)
        do {
            try withAddress(local) { addr, len in
                if bind(fd, addr, len) != 0 { throw SystemError.current("bind control socket", local) }
            }
            try withAddress(serverPath) { addr, len in
                if Glibc.connect(fd, addr, len) != 0 { throw SystemError.current("connect control socket", serverPath) }
            }
        } catch {
            Glibc.close(fd)
            unlink(local)
            throw error
        }
        return (fd, local)
    }

    private static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Void) throws {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else {
            throw SystemError("address", path, reason: "longer than \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        try withUnsafePointer(to: &addr) {
            try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    private static func send(_ fd: Int32, _ text: String, _ path: String) throws {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if sent != bytes.count { throw SystemError.current("send \(text.split(separator: " ").first ?? "") to", path) }
    }

    /// Drops every datagram already queued on `fd` (without waiting). One byte is room enough: a datagram socket drops
    /// the rest of a datagram that does not fit, so no buffer is allocated per request.
    private static func discardQueued(_ fd: Int32) {
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) >= 0 {}
    }

    private static func receive(_ fd: Int32, until deadline: ContinuousClock.Instant, _ path: String) throws -> String? {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            // Past the deadline one more look without waiting: a thread starved past it must not miss a reply that is
            // already queued.
            let remaining = deadline - ContinuousClock.now
            let (seconds, attoseconds) = remaining.components
            let ms = remaining <= .zero ? 0 : Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, ms)
            if ready < 0 {
                if errno == EINTR { continue }
                throw SystemError.current("poll control socket", path)
            }
            if ready == 0 {
                if remaining <= .zero { return nil }
                continue
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw SystemError.current("receive from control socket", path)
            }
            return String(decoding: buffer[0..<n], as: UTF8.self)
        }
    }
}
