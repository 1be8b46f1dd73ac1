#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem

/// A socket descriptor one thread may close while others read or write it (`HotspotTCPConnection`,
/// `HotspotUDPSocket`).
///
/// A call borrows the descriptor for one system call or one wait (`use`); the call runs outside the lock, so it may
/// block. `close()` marks the socket closed at once and, while calls are in flight, shuts it down (SHUT_RDWR), which
/// wakes a `poll` or `recv` blocked on it (a plain close(2) from another thread does not, on Linux). The descriptor
/// itself is closed by whoever gives it back last. So no call ever runs on a closed descriptor, or on its number
/// after another open has reused it.
final class SharedSocket: Sendable {
    private struct State {
        /// -1 once released to the kernel.
        var fd: Int32
        /// Calls holding the descriptor now.
        var users = 0
        var closed = false
        /// `shutdown` stopped reading (SHUT_RD or SHUT_RDWR).
        var readShutDown = false

        /// The descriptor to release (-1 left behind), nil when already released.
        mutating func take() -> Int32? {
            guard fd >= 0 else { return nil }
            defer { fd = -1 }
            return fd
        }
    }

    /// What became of a call.
    enum Use<T> {
        case done(T)
        /// Closed before the call: nothing ran.
        case closed
        /// `close()` came while the call ran: what it returned is dropped (it may have been woken by the shutdown).
        case closedDuring
    }

    private let state: Locked<State>

    init(_ fd: Int32) { state = Locked(State(fd: fd)) }

    deinit { close() }

    /// The descriptor, -1 once closed. For the one owner (e.g. TLS set on top of it), not a license to use it
    /// from another thread while someone may close it.
    var descriptor: Int32 { state.withLock { $0.closed ? -1 : $0.fd } }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Runs `body` with the descriptor, which stays open until `body` returns. `body` must not close it.
    func use<T>(_ body: (Int32) -> T) -> Use<T> {
        let fd = state.withLock { s -> Int32? in
            guard !s.closed else { return nil }
            s.users += 1
            return s.fd
        }
        guard let fd else { return .closed }
        let result = body(fd)
        let (closedDuring, release) = state.withLock { s -> (Bool, Int32?) in
            s.users -= 1
            guard s.closed else { return (false, nil) }
            return (true, s.users == 0 ? s.take() : nil)
        }
        if let release { _ = Glibc.close(release) }
        return closedDuring ? .closedDuring : .done(result)
    }

    /// Shuts the socket down (`how`: SHUT_RD, SHUT_WR or SHUT_RDWR); nothing once closed.
    func shutdown(_ how: Int32) {
        // Noted first, so that a reader the shutdown wakes finds it (see `isReadShutDown`).
        if how != Int32(SHUT_WR) { state.withLock { $0.readShutDown = true } }
        _ = use { Glibc.shutdown($0, how) }
    }

    /// Whether `shutdown` stopped reading. A nonblocking UDP socket needs it: after SHUT_RD poll(2) reports it
    /// readable while recv(2) still fails with EAGAIN, so a reader must stop by this flag, not by recv's answer.
    var isReadShutDown: Bool { state.withLock { $0.readShutDown } }

    /// Marks the socket closed (once; later calls do nothing). Calls in flight are woken and end with
    /// `.closedDuring`; the descriptor is closed now, or by the last of them.
    func close() {
        let release = state.withLock { s -> Int32? in
            guard !s.closed else { return nil }
            s.closed = true
            if s.users == 0 { return s.take() }
            // Under the lock, so the descriptor cannot be released meanwhile (users > 0 holds it open anyway).
            _ = Glibc.shutdown(s.fd, Int32(SHUT_RDWR))
            return nil
        }
        if let release { _ = Glibc.close(release) }
    }
}

extension SharedSocket {
    /// `body` on the descriptor (capture errno inside it). A closed socket throws for `operation` on `target`:
    /// EBADF when it was closed before the call, ECANCELED when `close()` came during it.
    func call<T>(_ operation: String, _ target: String, _ body: (Int32) -> T) throws(HotspotTrafficError) -> T {
        switch use(body) {
        case .done(let value): return value
        case .closed: throw HotspotTrafficError(operation, target, errno: EBADF, detail: "the socket is closed")
        case .closedDuring: throw HotspotTrafficError(operation, target, errno: ECANCELED, detail: "the socket was closed meanwhile")
        }
    }

    /// The socket's SO_MARK (0: unmarked), nil when closed or unreadable.
    var mark: UInt32? {
        if case .done(let mark) = use({ CommandTrafficMark.read($0) }) { return mark }
        return nil
    }
}
