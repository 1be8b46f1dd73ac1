#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The credentials of the process at the other end of a Unix socket (SO_PEERCRED), taken at connect time.
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
    public var description: String { "pid \(pid) uid \(uid) gid \(gid)" }
}

/// The outcome of a nonblocking read.
public enum ReadOutcome: Sendable, Equatable {
    case bytes(Int)
    case wouldBlock
    case endOfFile
}

/// A stream Unix domain socket (listening or connected). Closes its descriptor on `close()` or deinit.
public final class UnixSocket: @unchecked Sendable {  // @unchecked: one reader and one writer at a time by its users' design; `fd` changes only in `close()`
    public private(set) var fd: Int32
    /// The path it listens on or connected to.
    public let path: String

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close() }

    public func close() {
        if fd >= 0 {
            _ = Glibc.close(fd)
            fd = -1
        }
    }

    static func address(_ path: String, _ op: String) throws(SystemError) -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else {
            throw SystemError(op, path, reason: "socket path is \(bytes.count) bytes, the limit is \(capacity - 1)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in bytes.enumerated() { p[i] = b }
            p[bytes.count] = 0
        }
        return addr
    }

    /// Listens on `path`: the directory is created (or tightened) to mode 0700, a stale socket file is replaced,
    /// the socket file gets mode 0600. The listening socket is nonblocking.
    public static func listen(path: String, backlog: Int32 = 128, directoryMode: mode_t = 0o700, socketMode: mode_t = 0o600)
        throws(SystemError) -> UnixSocket
    {
        let dir = AtomicFile.directory(of: path)
        try makeDirectory(dir, mode: directoryMode)
        var addr = try address(path, "bind")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SystemError.current("create socket for", path) }
        let sock = UnixSocket(fd: fd, path: path)
        // A socket file left by a process that died: nobody listens, replace it.
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFSOCK else {
                throw SystemError("bind", path, reason: "a file that is not a socket is in the way")
            }
            if let probe = try? UnixSocket.connect(path: path) {
                probe.close()
                throw SystemError("bind", path, errno: EADDRINUSE, detail: "another process is listening there")
            }
            unlink(path)
        }
        // The socket file is created by bind with the socket's own mode less the umask (Linux: unix_bind), so the
        // socket is given `socketMode` first: no moment with a wider mode, and no change to the process's umask. (It
        // once set umask(0177) around bind and back: umask is process-wide, and two threads binding at once could
        // leave it 0177 for good. Every process started afterwards inherited it: hotspotd wrote its DHCP script
        // 0755 & ~0177 = 0600, udhcpc could not run it, and no IPv4 lease was ever read; issue 27.)
        guard fchmod(fd, socketMode) == 0 else { throw SystemError.current("chmod 0\(String(socketMode, radix: 8)) the socket for", path) }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else { throw SystemError.current("bind", path) }
        guard chmod(path, socketMode) == 0 else { throw SystemError.current("chmod 0\(String(socketMode, radix: 8))", path) }
        guard Glibc.listen(fd, backlog) == 0 else { throw SystemError.current("listen", path) }
        return sock
    }

    /// Creates `dir` (and parents) with `mode`; an existing directory is chmod'ed to `mode`.
    public static func makeDirectory(_ dir: String, mode: mode_t) throws(SystemError) {
        var st = stat()
        if stat(dir, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR else { throw SystemError("create directory", dir, errno: ENOTDIR) }
            guard chmod(dir, mode) == 0 else { throw SystemError.current("chmod 0\(String(mode, radix: 8))", dir) }
            return
        }
        let parent = AtomicFile.directory(of: dir)
        if parent != dir, parent != "/", parent != "." {
            var pst = stat()
            if stat(parent, &pst) != 0 { try makeDirectory(parent, mode: 0o755) }
        }
        if mkdir(dir, mode) != 0, errno != EEXIST { throw SystemError.current("create directory", dir) }
        guard chmod(dir, mode) == 0 else { throw SystemError.current("chmod 0\(String(mode, radix: 8))", dir) }
    }

    /// Accepts one connection (nonblocking, close-on-exec), nil when none is waiting.
    public func accept() throws(SystemError) -> UnixSocket? {
        while true {
            let c = Glibc.accept(fd, nil, nil)
            if c >= 0 {
                _ = fcntl(c, F_SETFD, FD_CLOEXEC)
                _ = fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK)
                return UnixSocket(fd: c, path: path)
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK, ECONNABORTED: return nil
            default: throw SystemError.current("accept on", path)
            }
        }
    }

    /// Connects to a listening socket (the descriptor is blocking; see `setNonBlocking`).
    public static func connect(path: String) throws(SystemError) -> UnixSocket {
        var addr = try address(path, "connect to")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError.current("create socket for", path) }
        let sock = UnixSocket(fd: fd, path: path)
        while true {
            let r = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if r == 0 { return sock }
            if errno == EINTR { continue }
            throw SystemError.current("connect to", path)
        }
    }

    /// SO_PEERCRED: who is at the other end.
    public func peerCredentials() throws(SystemError) -> PeerCredentials {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc hides it behind _GNU_SOURCE).
        var cred: (Int32, UInt32, UInt32) = (0, 0, 0)
        var len = socklen_t(12)
        let soPeerCred: Int32 = 17  // SO_PEERCRED on Linux
        guard getsockopt(fd, SOL_SOCKET, soPeerCred, &cred, &len) == 0 else {
            throw SystemError.current("read SO_PEERCRED of", path)
        }
        return PeerCredentials(pid: cred.0, uid: cred.1, gid: cred.2)
    }

    public func setNonBlocking(_ on: Bool = true) throws(SystemError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) == 0 else {
            throw SystemError.current("set O_NONBLOCK on", path)
        }
    }

    /// Reads what is available into `buffer` (nonblocking sockets return `.wouldBlock` when there is nothing).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> ReadOutcome {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfFile }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET: return .endOfFile
            default: throw SystemError.current("read from", path)
            }
        }
    }

    /// Writes as much as the socket takes now; returns the byte count (0 when it would block).
    public func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        while true {
            let n = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return n }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return 0
            default: throw SystemError.current("write to", path)
            }
        }
    }

    /// Writes everything, waiting (poll) while the socket is full.
    public func writeAll(_ bytes: [UInt8]) throws(SystemError) {
        var off = 0
        while off < bytes.count {
            let n: Int
            do {
                n = try bytes.withUnsafeBytes { p in try write(UnsafeRawBufferPointer(rebasing: p[off...])) }
            } catch let e as SystemError {
                throw e
            } catch {
                throw SystemError("write to", path, reason: "\(error)")
            }
            if n == 0 {
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&pfd, 1, 1000)
            }
            off += n
        }
    }

    /// Waits up to `timeout` (nil: forever) for the socket to be readable. True when readable (or closed).
    public func waitReadable(timeout: Duration?) -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ms: Int32 = timeout.map { $0.pollMilliseconds } ?? -1
        while true {
            let r = poll(&pfd, 1, ms)
            if r < 0, errno == EINTR { continue }
            return r > 0
        }
    }

    /// Whether the peer has closed or shut down its writing half (poll(2) with no wait: POLLRDHUP, POLLHUP,
    /// POLLERR), whatever is still unread.
    public var peerHasClosed: Bool {
        guard fd >= 0 else { return true }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN) | 0x2000, revents: 0)
        while true {
            let r = poll(&pfd, 1, 0)
            if r < 0, errno == EINTR { continue }
            return r > 0 && pfd.revents & (0x2000 | Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)) != 0
        }
    }

    /// Half-closes the write side (the peer reads end of file).
    public func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }
}

extension UnixSocket {
    /// This process's soft limit on open descriptors (RLIMIT_NOFILE); `Int.max` when unlimited or unknown.
    public static func descriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return .max }
        return Int(clamping: limit.rlim_cur)
    }
}
