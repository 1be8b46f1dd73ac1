#if canImport(Glibc)
import Glibc
#endif
import CSystemShims
import Synchronization

/// Why a process was asked to stop: a signal it received, the reader of its output gone (a write failed with
/// EPIPE, or its standard output reported POLLERR/POLLHUP), or code that asked. `signal` is the signal the
/// stop counts as (SIGPIPE for a reader gone); a command that ends on it exits with `exitStatus`.
public struct StopRequest: Sendable, Equatable, CustomStringConvertible {
    public enum Cause: UInt8, Sendable, Equatable {
        /// The signal arrived.
        case received = 1
        /// The output's reader went away (EPIPE on a write, POLLERR/POLLHUP on standard output).
        case outputClosed = 2
        /// Code asked (`SignalService.request`).
        case requested = 3
    }

    public var signal: Int32
    public var cause: Cause

    public init(signal: Int32, cause: Cause) {
        self.signal = signal
        self.cause = cause
    }

    /// 128 + the signal: what a shell reports for a command that ended on it (130 for SIGINT, 143 for SIGTERM).
    public var exitStatus: Int32 { 128 + signal }

    /// `SIGTERM`, or `SIGPIPE (output closed)`.
    public var description: String {
        cause == .outputClosed ? "\(SignalService.name(signal)) (output closed)" : SignalService.name(signal)
    }

    /// One Int32 for the atomic the signal handler writes: signal | cause << 8 (0: none).
    var packed: Int32 { signal | Int32(cause.rawValue) << 8 }
    init?(packed: Int32) {
        guard packed != 0, let cause = Cause(rawValue: UInt8(truncatingIfNeeded: packed >> 8)) else { return nil }
        self.init(signal: packed & 0xff, cause: cause)
    }
}

/// The one owner of signal dispositions in a process (in the style of swift-service-lifecycle's
/// ServiceGroup): hotspotd, hotspot-lab and whatever else needs them install it first thing, before anything is
/// created; nothing else calls sigaction, signal or sigwait.
///
/// - **Inherited SIG_IGN is kept for SIGHUP and SIGPIPE** (`inheritedIgnoreKept`), as `nohup` documents: a command
///   started by `nohup` goes on ignoring SIGHUP, and its children inherit that (`childDefaultSignals` leaves it
///   out). **SIGINT and SIGTERM are always handled** (docs/DECISIONS.md): an ignored SIGINT is inherited only from
///   a shell's job control (a non-interactive shell starts its background jobs with SIGINT and SIGQUIT ignored,
///   POSIX 2.11), and `kill -INT` of such a job must still stop the lab it made. The kernel drops a SIGINT sent
///   before the handler is in place while the shell's SIG_IGN holds; every one after it is honoured.
/// - **A signal pending from before** (blocked in the mask the process inherited and sent before it started)
///   is delivered at `install`: the stop signals are unblocked once their handlers are in place.
/// - **Until someone takes over shutdown** (`onStop`), a stop signal ends the process as its default action
///   would (killed by the signal; nothing was created yet). Once taken over, every stop signal is recorded
///   (`stopRequest` is the first) and delivered, as a `StopRequest`, to the registered handlers on the
///   service's own thread; `wait` returns at the first. The handler itself only stores and writes one byte.
/// - **SIGPIPE is a stop only when it is the output's**: raised by this process's own write while the reader of its
///   standard output or error is gone, or sent by another process (`signalServicePipeHandler`). A SIGPIPE of a write
///   to any other pipe or socket is dropped (`strayPipeSignals`); that write fails with EPIPE.
/// - **Owned ignores**: `ignore` sets SIG_IGN (hotspotd's SIGPIPE: a write to a closed socket fails with
///   EPIPE instead).
public enum SignalService {
    /// The signals that ask a command to stop: Ctrl-C, `kill`/`hotspot-lab down`, the terminal closed, the
    /// reader of the output gone.
    public static let stopSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGPIPE]

    /// One registration of `onStop`; `cancel` gives shutdown back (when the last is cancelled, stop signals end
    /// the process again).
    public final class Registration: Sendable {
        let id: Int
        init(id: Int) { self.id = id }
        public func cancel() { SignalService.unregister(id) }
    }

    /// The stop signals whose inherited SIG_IGN is kept: SIGHUP (`nohup`) and SIGPIPE. SIGINT and SIGTERM are
    /// taken over whatever the process inherited.
    public static let inheritedIgnoreKept: Set<Int32> = [SIGHUP, SIGPIPE]

    /// The signals of `install(stop:)` that were ignored when the process started and are left ignored
    /// (`inheritedIgnoreKept` only).
    public static var inheritedIgnored: Set<Int32> { state.withLock { $0.inheritedIgnored } }

    /// The signals this process handles as stop requests (installed, not inherited-ignored).
    public static var handled: Set<Int32> { state.withLock { $0.handled } }

    /// The first stop request (a signal received, the output closed, or `request`), nil if none.
    public static var stopRequest: StopRequest? { StopRequest(packed: first.load(ordering: .acquiring)) }

    /// The signal of the first stop request, nil if none.
    public static var requested: Int32? { stopRequest?.signal }

    /// Installs the handlers for `stop` and sets `ignore` to SIG_IGN; once per process (later calls add
    /// signals). Throws when a pipe, a thread or a handler cannot be set up.
    public static func install(stop: [Int32] = stopSignals, ignore: [Int32] = []) throws {
        try state.withLock { state in
            if state.readFD < 0 {
                var ends: [Int32] = [-1, -1]
                if hsl_pipe_cloexec(&ends) != 0 { throw SystemError.current("create pipe for", "the signal service") }
                var latch: [Int32] = [-1, -1]
                if hsl_pipe_cloexec(&latch) != 0 {
                    ends.forEach { close($0) }
                    throw SystemError.current("create pipe for", "the signal service")
                }
                for fd in ends + latch { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
                state.readFD = ends[0]
                writeFD.store(ends[1], ordering: .releasing)
                state.latchRead = latch[0]
                state.latchWrite = latch[1]
            }
            // Block the signals while their handlers change, so that one pending from before (or arriving now)
            // is delivered to the new handler when they are unblocked below, not lost in between.
            var set = sigset_t()
            sigemptyset(&set)
            for sig in stop + ignore { sigaddset(&set, sig) }
            pthread_sigmask(SIG_BLOCK, &set, nil)
            // Afterwards the asynchronous stop signals (all but SIGPIPE) stay blocked in this thread, and so in every
            // thread it starts from now on: the kernel hands them to the service's thread, the one that takes them,
            // and no other thread sees EINTR for them. SIGPIPE is the writing thread's own (synchronous): unblocked.
            defer {
                var unblock = sigset_t()
                sigemptyset(&unblock)
                for sig in stop + ignore where !state.handled.contains(sig) || !isRouted(sig) { sigaddset(&unblock, sig) }
                pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
            }
            for sig in stop where !state.handled.contains(sig) && !state.inheritedIgnored.contains(sig) {
                var current = sigaction()
                if sigaction(sig, nil, &current) != 0 { throw SystemError.current("read the action of signal \(name(sig)) in", "the signal service") }
                // SIG_IGN is the handler value 1 (SIG_DFL 0); function pointers do not compare in Swift.
                let raw = current.__sigaction_handler.sa_handler.map { unsafeBitCast($0, to: Int.self) } ?? 0
                if raw == 1 && !state.ownedIgnores.contains(sig) && inheritedIgnoreKept.contains(sig) {
                    state.inheritedIgnored.insert(sig)
                    continue
                }
                var action = sigaction()
                if sig == SIGPIPE {
                    // Who raised it (`si_pid`) tells the reader of the output gone from a stray write: see
                    // `signalServicePipeHandler`.
                    action.__sigaction_handler.sa_sigaction = signalServicePipeHandler
                    action.sa_flags = SA_RESTART | SA_SIGINFO
                } else {
                    action.__sigaction_handler.sa_handler = signalServiceHandler
                    action.sa_flags = SA_RESTART
                }
                sigemptyset(&action.sa_mask)
                for other in stopSignals { sigaddset(&action.sa_mask, other) }
                if sigaction(sig, &action, nil) != 0 { throw SystemError.current("install the handler of signal \(name(sig)) in", "the signal service") }
                state.handled.insert(sig)
            }
            if !state.threadStarted {
                try startDeliveryThread()
                state.threadStarted = true
            }
            for sig in ignore {
                var action = sigaction()
                action.__sigaction_handler.sa_handler = SIG_IGN
                sigemptyset(&action.sa_mask)
                if sigaction(sig, &action, nil) != 0 { throw SystemError.current("ignore signal \(name(sig)) in", "the signal service") }
                state.ownedIgnores.insert(sig)
                state.handled.remove(sig)
            }
        }
    }

    /// Takes over shutdown: from now on a stop signal no longer ends the process; `handler` gets every stop
    /// request (the first and any later one) on the service's thread. A request made before is delivered at
    /// once. Keep the registration; `cancel` it to give shutdown back.
    @discardableResult
    public static func onStop(_ handler: @escaping @Sendable (StopRequest) -> Void = { _ in }) -> Registration {
        let (id, pending) = state.withLock { state -> (Int, StopRequest?) in
            state.nextID += 1
            state.handlers.append((state.nextID, handler))
            owners.add(1, ordering: .sequentiallyConsistent)
            return (state.nextID, stopRequest)
        }
        if let pending {
            deliveryQueue.withLock { $0.append(pending) }
            wakeDelivery()
        }
        return Registration(id: id)
    }

    /// Records a stop request as if `signal` had arrived (the output's reader gone: `.outputClosed`).
    public static func request(_ signal: Int32, cause: StopRequest.Cause = .requested) {
        record(StopRequest(signal: signal, cause: cause).packed)
    }

    /// Waits until a stop is requested or `timeout` passes (nil: forever) and returns the first request, nil
    /// on timeout. With `watchingOutput` (a descriptor, usually 1), POLLERR or POLLHUP on it (the reader of a
    /// pipe or socket gone, a terminal hung up) is a stop request too: SIGPIPE, `.outputClosed`.
    public static func wait(timeout: Duration? = nil, watchingOutput output: Int32? = nil) -> StopRequest? {
        let latch = state.withLock { $0.latchRead }
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now + $0 }
        var watched = output
        while stopRequest == nil {
            var ms: Int32 = -1
            if let deadline {
                let left = deadline - clock.now
                if left <= .zero { return nil }
                ms = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
            } else {
                ms = 60_000
            }
            if latch < 0 {
                sleepFor(.milliseconds(Int64(min(ms, 50))))
                continue
            }
            var fds = [pollfd(fd: latch, events: Int16(POLLIN), revents: 0)]
            if let watched { fds.append(pollfd(fd: watched, events: 0, revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), ms)
            if ready > 0, fds.count > 1 {
                let revents = Int32(fds[1].revents)
                if revents & Int32(POLLNVAL) != 0 {
                    watched = nil  // not open: nothing to watch
                } else if revents & Int32(POLLERR | POLLHUP) != 0 {
                    request(SIGPIPE, cause: .outputClosed)
                }
            }
        }
        return stopRequest
    }

    /// The signals a child should get back at their default action in posix_spawn (`POSIX_SPAWN_SETSIGDEF`):
    /// `candidates` except those inherited ignored, which stay ignored across exec as POSIX has it.
    public static func childDefaultSignals(_ candidates: [Int32]) -> sigset_t {
        let kept = inheritedIgnored
        var set = sigset_t()
        sigemptyset(&set)
        for sig in candidates where !kept.contains(sig) { sigaddset(&set, sig) }
        return set
    }

    /// `SIGINT`, `SIGTERM`, …, `signal N` for others.
    public static func name(_ signal: Int32) -> String {
        switch signal {
        case SIGINT: return "SIGINT"
        case SIGTERM: return "SIGTERM"
        case SIGHUP: return "SIGHUP"
        case SIGPIPE: return "SIGPIPE"
        case SIGQUIT: return "SIGQUIT"
        case SIGKILL: return "SIGKILL"
        case SIGUSR1: return "SIGUSR1"
        case SIGUSR2: return "SIGUSR2"
        default: return "signal \(signal)"
        }
    }

    // MARK: internals

    struct State {
        var readFD: Int32 = -1
        var latchRead: Int32 = -1
        var latchWrite: Int32 = -1
        var handled: Set<Int32> = []
        var inheritedIgnored: Set<Int32> = []
        var ownedIgnores: Set<Int32> = []
        var handlers: [(Int, @Sendable (StopRequest) -> Void)] = []
        var nextID = 0
        var latched = false
        var threadStarted = false
    }

    /// Signals taken by the service's thread only (blocked elsewhere): the asynchronous ones.
    static func isRouted(_ sig: Int32) -> Bool { sig != SIGPIPE }

    static let state = Synchronization.Mutex(State())
    /// Stop requests for the delivery thread besides the pipe's bytes (`onStop` replaying the first one).
    static let deliveryQueue = Synchronization.Mutex([StopRequest]())
    /// Read in the signal handler (lock-free): the write end of the pipe, the first request, the owners.
    static let writeFD = Atomic<Int32>(-1)
    static let first = Atomic<Int32>(0)
    static let owners = Atomic<Int>(0)

    static func unregister(_ id: Int) {
        state.withLock { state in
            let before = state.handlers.count
            state.handlers.removeAll { $0.0 == id }
            if state.handlers.count < before { owners.subtract(1, ordering: .sequentiallyConsistent) }
        }
    }

    /// Async-signal-safe: atomics and a write to a non-blocking pipe.
    static func record(_ packed: Int32) {
        _ = first.compareExchange(expected: 0, desired: packed, ordering: .acquiringAndReleasing)
        var bytes = (UInt8(truncatingIfNeeded: packed), UInt8(truncatingIfNeeded: packed >> 8))
        let fd = writeFD.load(ordering: .acquiring)
        if fd >= 0 { _ = withUnsafeBytes(of: &bytes) { write(fd, $0.baseAddress, 2) } }
    }

    /// SIGPIPEs of this process's own writes to a pipe or socket other than its output, dropped by the handler (the
    /// write failed with EPIPE instead).
    public static let strayPipeSignals = Atomic<Int>(0)

    /// Async-signal-safe (a C shim: no allocation): standard output or standard error is a pipe or socket whose
    /// reader is gone (POLLERR or POLLHUP; a terminal, a file or /dev/null never reports either while it works).
    public static func outputGone() -> Bool { hsl_output_gone() != 0 }

    static func wakeDelivery() {
        var bytes: (UInt8, UInt8) = (0, 0)
        let fd = writeFD.load(ordering: .acquiring)
        if fd >= 0 { _ = withUnsafeBytes(of: &bytes) { write(fd, $0.baseAddress, 2) } }
    }

    /// Call with `state` held.
    static func startDeliveryThread() throws {
        try SystemThread.detach("the signal service's thread") { SignalService.deliveryLoop() }
        // The thread takes no stop signal itself (the handler may run on any thread that does not block them).
    }

    static func deliveryLoop() {
        // This thread takes the routed stop signals (a signal sent to the process goes to a thread that does not
        // block it): started with them blocked, it unblocks them once its handlers are in place.
        var set = sigset_t()
        sigemptyset(&set)
        for sig in stopSignals where isRouted(sig) { sigaddset(&set, sig) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        let fd = state.withLock { $0.readFD }
        var buffer = [UInt8](repeating: 0, count: 64)
        var carry: UInt8?
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&pfd, 1, -1)
            var requests: [StopRequest] = []
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                for byte in buffer[0..<count] {
                    if let low = carry {
                        carry = nil
                        if let request = StopRequest(packed: Int32(low) | Int32(byte) << 8) { requests.append(request) }
                    } else {
                        carry = byte
                    }
                }
            }
            requests = deliveryQueue.withLock { queued in defer { queued = [] }; return queued } + requests
            guard !requests.isEmpty || stopRequest != nil else { continue }
            let (handlers, latchWrite) = state.withLock { state -> ([@Sendable (StopRequest) -> Void], Int32) in
                let latch = state.latched ? -1 : state.latchWrite
                if stopRequest != nil { state.latched = true }
                return (state.handlers.map(\.1), latch)
            }
            if latchWrite >= 0 {
                var one: UInt8 = 1
                _ = write(latchWrite, &one, 1)
            }
            for request in requests {
                for handler in handlers { handler(request) }
            }
        }
    }
}

/// SIGPIPE's handler. The kernel raises SIGPIPE in the thread whose write found no reader, with this process as
/// its sender (`si_pid`); `kill -PIPE` from elsewhere names the other process. A SIGPIPE of this process's own
/// write is a stop request only when the reader of its output is gone (standard output or error reports
/// POLLERR/POLLHUP): the write that raised it was to the output, or the output is gone anyway. Otherwise the write
/// was to another pipe or socket (a lab's: a portal's client gone, a helper's socket closed), the signal is dropped
/// (counted in `SignalService.strayPipeSignals`) and that write fails with EPIPE, which its code handles: a peer
/// that went away does not stop a lab run. A SIGPIPE sent by another process is a stop signal as any other.
private func signalServicePipeHandler(_ sig: Int32, _ info: UnsafeMutablePointer<siginfo_t>?, _ context: UnsafeMutableRawPointer?) {
    let saved = errno
    defer { errno = saved }
    if let info, info.pointee._sifields._kill.si_pid == getpid() {
        guard SignalService.outputGone() else {
            SignalService.strayPipeSignals.add(1, ordering: .relaxed)
            return
        }
        if SignalService.owners.load(ordering: .sequentiallyConsistent) > 0 {
            SignalService.record(StopRequest(signal: sig, cause: .outputClosed).packed)
            return
        }
    }
    signalServiceHandler(sig)
}

/// The handler of every stop signal. Until shutdown is taken over it gives the signal its default action
/// (the process ends by it, as if no handler were installed); after, it records it for the delivery thread.
private func signalServiceHandler(_ sig: Int32) {
    let saved = errno
    defer { errno = saved }
    if SignalService.owners.load(ordering: .sequentiallyConsistent) == 0 {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = SIG_DFL
        sigemptyset(&action.sa_mask)
        sigaction(sig, &action, nil)
        // Pending while the handler runs (it is blocked here); delivered with the default action on return.
        raise(sig)
        return
    }
    SignalService.record(StopRequest(signal: sig, cause: .received).packed)
}
