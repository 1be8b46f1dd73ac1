#if canImport(Glibc)
import Glibc
#endif

/// The one lock of the package: a pthread mutex in memory of its own (allocated once, never moved, as
/// pthreads requires; a `pthread_mutex_t` stored in a class and passed as `&` has no stable address in
/// Swift). No Foundation. With `Condition`, a thread can wait for a change another thread signals.
public final class Mutex: @unchecked Sendable {  // @unchecked: a pthread mutex is made to be shared between threads
    let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// `recursive`: the thread holding the lock may take it again (it must release it as often).
    public init(recursive: Bool = false) {
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        if recursive { pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE)) }
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A lock that owns its state: the state is reached only inside `withLock`, so no field can be read without the
/// lock (the lock-beside-field pairs it replaces could). Built on `Mutex`.
public final class Locked<State>: @unchecked Sendable {  // @unchecked: `state` is touched only with `mutex` held
    private let mutex = Mutex()
    private var state: State

    public init(_ state: State) { self.state = state }

    public func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        try mutex.withLock { try body(&state) }
    }
}

/// A pthread condition variable in memory of its own, used with a `Mutex`.
public final class Condition: @unchecked Sendable {  // @unchecked: a pthread condition is made to be shared between threads (used with its mutex held)
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    /// Timed waits are measured on CLOCK_MONOTONIC (`pthread_condattr_setclock`): a step of the wall clock
    /// neither stretches nor cuts short a wait.
    public init() {
        condition = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Wakes every thread waiting (call with the mutex held).
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Releases `mutex` (which the caller holds), waits for a `broadcast` or until `timeout` passes (or a
    /// spurious wake-up), and takes `mutex` again. Callers recheck their condition in a loop.
    public func wait(_ mutex: Mutex, timeout: Duration) {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let (seconds, attoseconds) = max(timeout, .zero).components
        let ns = Int(ts.tv_nsec) + Int(attoseconds / 1_000_000_000)
        ts.tv_sec += Int(seconds) + ns / 1_000_000_000
        ts.tv_nsec = ns % 1_000_000_000
        pthread_cond_timedwait(condition, mutex.mutex, &ts)
    }
}

/// A value handed over once from one thread to another (a completion handler's answer to a thread that waits for
/// it): the first `set` is kept, later ones are ignored; `wait` blocks until there is one. Built on `Mutex` and
/// `Condition` (whose waits are measured on CLOCK_MONOTONIC).
public final class OneShot<Value> {
    private let mutex = Mutex()
    private let condition = Condition()
    private var value: Value?

    public init() {}

    /// Gives the value: true when it is the first (and so the one `wait` returns).
    @discardableResult
    public func set(_ newValue: Value) -> Bool {
        mutex.withLock {
            guard value == nil else { return false }
            value = newValue
            condition.broadcast()
            return true
        }
    }

    /// Waits for the first value given, at most `timeout`; nil when none came in time.
    public func wait(timeout: Duration) -> Value? {
        let deadline = ContinuousClock.now + timeout
        return mutex.withLock {
            while true {
                if let value { return value }
                let left = deadline - ContinuousClock.now
                if left <= .zero { return nil }
                condition.wait(mutex, timeout: left)
            }
        }
    }

    /// Waits, however long it takes, for the first value given.
    public func wait() -> Value {
        mutex.withLock {
            while true {
                if let value { return value }
                condition.wait(mutex, timeout: .seconds(60))
            }
        }
    }
}

extension OneShot: @unchecked Sendable where Value: Sendable {}  // @unchecked: `value` is touched only with `mutex` held
