#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A single-threaded poll(2) event loop with timers on a `MonotonicClock`.
///
/// Everything runs on the thread that calls `run()`; the only thread-safe entry points are `post(_:)` and `stop()`.
/// With a `ManualClock`, timers fire only when the clock has been advanced and `runOnce` / `fireDueTimers` is called.
public final class EventLoop: @unchecked Sendable {  // @unchecked: all state is the loop thread's; `post` and `stop` reach it only through their lock and the wake pipe
    public struct TimerID: Hashable, Sendable {
        let raw: UInt64
    }

    public let clock: any MonotonicClock

    private struct Watch {
        var wantRead: Bool
        var wantWrite: Bool
        var handler: (_ readable: Bool, _ writable: Bool, _ hangup: Bool) -> Void
    }

    private var watches: [Int32: Watch] = [:]
    private var heap: [(deadline: Duration, id: UInt64)] = []
    private var timers: [UInt64: () -> Void] = [:]
    private var nextTimer: UInt64 = 1
    private var running = false
    private var stopRequested = false

    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let postLock = Mutex()
    private var posted: [() -> Void] = []
    private var pollFDs: [pollfd] = []

    public init(clock: any MonotonicClock = SystemMonotonicClock()) throws(SystemError) {
        self.clock = clock
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SystemError.current("create wakeup pipe for", "event loop") }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    // MARK: descriptors

    /// Calls `handler(readable, writable, hangup)` when `fd` is ready. Replaces an earlier watch of `fd`.
    public func watch(_ fd: Int32, read: Bool = true, write: Bool = false,
                      handler: @escaping (_ readable: Bool, _ writable: Bool, _ hangup: Bool) -> Void)
    {
        watches[fd] = Watch(wantRead: read, wantWrite: write, handler: handler)
    }

    public func setInterest(_ fd: Int32, read: Bool, write: Bool) {
        watches[fd]?.wantRead = read
        watches[fd]?.wantWrite = write
    }

    public func unwatch(_ fd: Int32) { watches[fd] = nil }

    public var watchCount: Int { watches.count }

    // MARK: timers

    /// Runs `body` once, `delay` from now on the loop's clock.
    @discardableResult
    public func schedule(after delay: Duration, _ body: @escaping () -> Void) -> TimerID {
        let id = nextTimer
        nextTimer += 1
        timers[id] = body
        push((clock.now() + delay, id))
        return TimerID(raw: id)
    }

    public func cancel(_ timer: TimerID) { timers[timer.raw] = nil }

    public var pendingTimerCount: Int { timers.count }

    private func push(_ e: (deadline: Duration, id: UInt64)) {
        heap.append(e)
        var i = heap.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            if less(heap[i], heap[p]) { heap.swapAt(i, p); i = p } else { break }
        }
    }

    private func less(_ a: (deadline: Duration, id: UInt64), _ b: (deadline: Duration, id: UInt64)) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
    }

    private func popMin() -> (deadline: Duration, id: UInt64) {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < heap.count, less(heap[l], heap[m]) { m = l }
                if r < heap.count, less(heap[r], heap[m]) { m = r }
                if m == i { break }
                heap.swapAt(i, m)
                i = m
            }
        }
        return top
    }

    /// The next live timer's deadline.
    private func nextDeadline() -> Duration? {
        while let top = heap.first {
            if timers[top.id] != nil { return top.deadline }
            _ = popMin()
        }
        return nil
    }

    /// Fires every timer whose deadline is at or before now, in deadline order.
    public func fireDueTimers() {
        let now = clock.now()
        while let d = nextDeadline(), d <= now {
            let e = popMin()
            if let body = timers.removeValue(forKey: e.id) { body() }
        }
    }

    // MARK: cross-thread

    /// Runs `body` on the loop's thread soon. Safe from any thread.
    public func post(_ body: @escaping () -> Void) {
        postLock.withLock { posted.append(body) }
        wake()
    }

    /// Makes `run()` return after the current iteration. Safe from any thread.
    public func stop() {
        post { [weak self] in self?.stopRequested = true }
    }

    private func wake() {
        var b: UInt8 = 1
        _ = Glibc.write(wakeWrite, &b, 1)
    }

    private func drainPosted() {
        var buf = [UInt8](repeating: 0, count: 64)
        while buf.withUnsafeMutableBytes({ Glibc.read(wakeRead, $0.baseAddress, 64) }) > 0 {}
        let work = postLock.withLock { () -> [() -> Void] in
            let w = posted
            posted.removeAll()
            return w
        }
        for w in work { w() }
    }

    // MARK: running

    /// POLLRDHUP (Linux): the peer closed or shut down its writing half.
    static let pollRDHUP: Int16 = 0x2000

    /// Runs until `stop()`.
    public func run() {
        stopRequested = false
        while !stopRequested { runOnce(maxWait: nil) }
    }

    /// One iteration: wait for descriptors (at most until the next timer, or `maxWait`), handle them, fire due timers.
    public func runOnce(maxWait: Duration?) {
        var wait: Duration? = maxWait
        if let d = nextDeadline() {
            let untilTimer = max(.zero, d - clock.now())
            wait = wait.map { min($0, untilTimer) } ?? untilTimer
        }
        pollFDs.removeAll(keepingCapacity: true)
        pollFDs.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
        for (fd, w) in watches {
            var ev: Int16 = 0
            if w.wantRead { ev |= Int16(POLLIN) | Self.pollRDHUP }
            if w.wantWrite { ev |= Int16(POLLOUT) }
            pollFDs.append(pollfd(fd: fd, events: ev, revents: 0))
        }
        let timeout: Int32 = wait.map { $0.pollMilliseconds } ?? -1
        let n = poll(&pollFDs, nfds_t(pollFDs.count), timeout)
        if n > 0 {
            if pollFDs[0].revents != 0 { drainPosted() }
            // Peers that hung up first, then the others: a peer that closed before another one's request
            // arrived is handled first (a helper that died and its successor registering the same identifier
            // in one poll: issue 27), whatever order the descriptors are in.
            let ended = Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL) | Self.pollRDHUP
            for pass in 0..<2 {
                for k in 1..<pollFDs.count {
                    let p = pollFDs[k]
                    guard p.revents != 0, (p.revents & ended != 0) == (pass == 0), let w = watches[p.fd] else { continue }
                    let readable = p.revents & (Int16(POLLIN) | Self.pollRDHUP) != 0
                    let writable = p.revents & Int16(POLLOUT) != 0
                    let hangup = p.revents & (Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)) != 0
                    w.handler(readable, writable, hangup)
                }
            }
        }
        fireDueTimers()
    }
}
