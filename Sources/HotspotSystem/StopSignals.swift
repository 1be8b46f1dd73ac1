#if canImport(Glibc)
import Glibc
#endif
import CSystemShims

/// SIGINT, SIGTERM, SIGHUP and SIGPIPE as a request to stop, for commands that must clean up whatever the
/// moment: `install` replaces the default actions (which end the process at once) by a handler that records
/// the first signal and wakes `wait`. SIGPIPE is there because its usual cause, the reader of our output
/// going away (`up … | head -1`), asks us to stop too; the write that raised it fails with EPIPE instead.
/// Children started with `ChildProcess.spawn` get the default actions back.
public enum StopSignals {
    public static let handled: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGPIPE]

    nonisolated(unsafe) static var first: Int32 = 0
    nonisolated(unsafe) static var readFD: Int32 = -1
    nonisolated(unsafe) static var writeFD: Int32 = -1
    private static let installLock = Mutex()

    /// Installs the handlers (once per process).
    public static func install() throws {
        try installLock.withLock {
            if writeFD >= 0 { return }
            var ends: [Int32] = [-1, -1]
            if hsl_pipe_cloexec(&ends) != 0 { throw SystemError.current("create pipe for", "stop signals") }
            for fd in ends { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
            first = 0
            readFD = ends[0]
            writeFD = ends[1]
            for sig in handled {
                var action = sigaction()
                action.__sigaction_handler.sa_handler = stopSignalHandler
                sigemptyset(&action.sa_mask)
                action.sa_flags = SA_RESTART
                if sigaction(sig, &action, nil) != 0 { throw SystemError.current("install handler for signal \(sig) in", "stop signals") }
            }
        }
    }

    /// The first stop signal received (or requested), nil if none.
    public static var requested: Int32? {
        let sig = first
        return sig == 0 ? nil : sig
    }

    /// Records a stop request as if `signal` had arrived (e.g. EPIPE on stdout without SIGPIPE).
    public static func request(_ signal: Int32) {
        stopSignalHandler(signal)
    }

    /// Waits until a stop signal arrives or `timeout` passes (nil: forever); returns the signal, nil on timeout.
    public static func wait(timeout: Duration? = nil) -> Int32? {
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now + $0 }
        while requested == nil {
            var ms: Int32 = -1
            if let deadline {
                let left = deadline - clock.now
                if left <= .zero { return nil }
                ms = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
            }
            var pfd = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
            if readFD < 0 {
                sleepFor(.milliseconds(50))
                continue
            }
            if Glibc.poll(&pfd, 1, ms) > 0 {
                var byte: UInt8 = 0
                while read(readFD, &byte, 1) > 0 {}
            }
        }
        return requested
    }
}

/// Async-signal-safe: a store and a write to a non-blocking pipe.
private func stopSignalHandler(_ sig: Int32) {
    if StopSignals.first == 0 { StopSignals.first = sig }
    var byte = UInt8(truncatingIfNeeded: sig)
    let saved = errno
    _ = write(StopSignals.writeFD, &byte, 1)
    errno = saved
}
