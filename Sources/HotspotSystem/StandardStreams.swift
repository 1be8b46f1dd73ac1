#if canImport(Glibc)
import Glibc
#endif

/// Unbuffered writes to standard output and standard error that never end the process. Foundation's
/// `FileHandle.write(_:)` is `try!`: where SIGPIPE does not kill the process (the signal service's handler in
/// `hotspot-lab`, SIG_IGN in hotspotd and the in-VM test process), a write to a stream whose reader is gone fails
/// with EPIPE, and Foundation then traps, skipping the labs' teardown. These report the failure instead.
public enum StandardStreams {
    /// Every byte of `text` to `fd`, retrying on EINTR and short writes; false when the descriptor refuses (EPIPE,
    /// EBADF, ...), with errno as the write left it.
    @discardableResult
    public static func write(_ text: String, to fd: Int32) -> Bool {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            if count == 0 { return false }
            offset += count
        }
        return true
    }

    /// `text` to standard error as it is (add the newline); a broken standard error is ignored.
    public static func error(_ text: String) {
        write(text, to: STDERR_FILENO)
    }
}
