#if canImport(Glibc)
import Glibc
#endif

/// The one lock of the package: a pthread mutex in memory of its own (allocated once, never moved, as
/// pthreads requires; a `pthread_mutex_t` stored in a class and passed as `&` has no stable address in
/// Swift). No Foundation. With `Condition`, a thread can wait for a change another thread signals.
public final class Mutex: @unchecked Sendable {
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

/// A pthread condition variable in memory of its own, used with a `Mutex`.
public final class Condition: @unchecked Sendable {
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        condition = .allocate(capacity: 1)
        pthread_cond_init(condition, nil)
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
        clock_gettime(CLOCK_REALTIME, &ts)
        let (seconds, attoseconds) = max(timeout, .zero).components
        let ns = Int(ts.tv_nsec) + Int(attoseconds / 1_000_000_000)
        ts.tv_sec += Int(seconds) + ns / 1_000_000_000
        ts.tv_nsec = ns % 1_000_000_000
        pthread_cond_timedwait(condition, mutex.mutex, &ts)
    }
}
