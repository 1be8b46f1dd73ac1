#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whole-file reads and crash-safe writes.
public enum AtomicFile {
    /// Writes `bytes` to `path` so that after a crash (even `kill -9` or power loss) the file holds either the old
    /// or the new contents: write a temp file in the same directory, fsync it, rename it over `path`, fsync the directory.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(SystemError) {
        let dir = directory(of: path)
        let tmp = "\(path).tmp.\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemError.current("create temp file", tmp) }
        // Exactly `mode`, whatever the process's umask (a script must stay executable: udhcpc runs it).
        if fchmod(fd, mode) != 0 {
            let e = SystemError.current("chmod 0\(String(mode, radix: 8))", tmp)
            close(fd); unlink(tmp)
            throw e
        }
        do {
            try writeAll(bytes, to: fd, path: tmp)
        } catch {
            close(fd); unlink(tmp)
            throw error
        }
        if fsync(fd) != 0 {
            let e = SystemError.current("fsync", tmp)
            close(fd); unlink(tmp)
            throw e
        }
        close(fd)
        if rename(tmp, path) != 0 {
            let e = SystemError.current("rename \(tmp) to", path)
            unlink(tmp)
            throw e
        }
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw SystemError.current("open directory", dir) }
        defer { close(dfd) }
        if fsync(dfd) != 0 { throw SystemError.current("fsync directory", dir) }
    }

    /// Writes `bytes` to a temp file beside `path`, fsyncs and removes it: throws what `write` would throw now
    /// (ENOSPC, EROFS, EACCES), leaving `path` as it is.
    public static func checkWritable(_ bytes: [UInt8], besides path: String, mode: mode_t = 0o600) throws(SystemError) {
        let tmp = "\(path).tmp.\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemError.current("create temp file", tmp) }
        defer { close(fd); unlink(tmp) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { p in Glibc.write(fd, p.baseAddress! + written, p.count - written) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw n < 0 ? SystemError.current("write", tmp) : SystemError("write", tmp, errno: ENOSPC) }
            written += n
        }
        if fsync(fd) != 0 { throw SystemError.current("fsync", tmp) }
    }

    /// The whole file, or nil when it does not exist. A file over `maximumBytes` (or not a regular file) is
    /// refused without reading it.
    public static func read(_ path: String, maximumBytes: Int = .max) throws(SystemError) -> [UInt8]? {
        // With a limit, a FIFO is refused instead of blocking in open(2).
        let fd = open(path, O_RDONLY | O_CLOEXEC | (maximumBytes != .max ? O_NONBLOCK : 0))
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw SystemError.current("open", path)
        }
        defer { close(fd) }
        if maximumBytes != .max {
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw SystemError.current("stat", path) }
            guard (info.st_mode & S_IFMT) == S_IFREG else { throw SystemError("read", path, reason: "not a regular file") }
            guard Int(info.st_size) <= maximumBytes else {
                throw SystemError("read", path, reason: "the file is \(info.st_size) bytes; the limit is \(maximumBytes)")
            }
        }
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError.current("read", path)
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let d = String(path[..<slash])
        return d.isEmpty ? "/" : d
    }
}

extension AtomicFile {
    /// Replaces the contents of `path` in place (truncate and write, same inode; created when missing): for a file
    /// the lab bind-mounts elsewhere (a station's resolv.conf), which a rename would detach from its mount.
    public static func overwriteInPlace(_ bytes: [UInt8], at path: String, mode: mode_t = 0o644) throws(SystemError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemError.current("open for writing", path) }
        defer { close(fd) }
        try writeAll(bytes, to: fd, path: path)
    }

    /// Writes all of `bytes` to `fd` (short writes continued, EINTR retried); an error names `path`.
    static func writeAll(_ bytes: [UInt8], to fd: Int32, path: String) throws(SystemError) {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { p in
                Glibc.write(fd, p.baseAddress! + written, p.count - written)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError.current("write", path)
            }
            written += n
        }
    }
}
