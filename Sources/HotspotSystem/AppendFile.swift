#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file written by appending whole records: each `append` lands entirely or not at all. A write cut short
/// (ENOSPC, EFBIG, EDQUOT, EIO) is undone with ftruncate(2) back to where the record began, so a full disk
/// never leaves half a line that the next record would be glued to (issue 27).
public final class AppendFile: @unchecked Sendable {  // @unchecked: its descriptor and size are used by one writer at a time (the daemon's loop thread)
    public let path: String
    private var fd: Int32
    /// The file's length: the end of the last whole record.
    public private(set) var size: Int

    /// Opens (creating with `mode`) `path` for appending.
    public init(path: String, mode: mode_t = 0o600) throws(SystemError) {
        self.path = path
        let f = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, mode)
        guard f >= 0 else { throw SystemError.current("open", path) }
        fd = f
        var info = stat()
        size = fstat(f, &info) == 0 ? Int(info.st_size) : 0
    }

    deinit { close() }

    public func close() {
        if fd >= 0 {
            _ = Glibc.close(fd)
            fd = -1
        }
    }

    /// Appends `bytes` whole. On failure the file is cut back to its length before the call and the error
    /// (naming the file and the errno) is thrown: nothing of `bytes` stays.
    public func append(_ bytes: [UInt8]) throws(SystemError) {
        guard fd >= 0 else { throw SystemError("append to", path, errno: EBADF) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { p in Glibc.write(fd, p.baseAddress! + written, p.count - written) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 {
                let e = n < 0 ? SystemError.current("append to", path) : SystemError("append to", path, errno: ENOSPC)
                if written > 0 { rollBack() }
                throw e
            }
            written += n
        }
        size += written
    }

    /// Cuts the file back to the end of the last whole record; if even that fails, the partial record is ended
    /// with a newline so the next record starts on a line of its own (the one bad line is then the only damage).
    private func rollBack() {
        if ftruncate(fd, off_t(size)) == 0 { return }
        var newline: UInt8 = 0x0A
        if Glibc.write(fd, &newline, 1) == 1 {
            var info = stat()
            if fstat(fd, &info) == 0 { size = Int(info.st_size) }
        }
    }
}
