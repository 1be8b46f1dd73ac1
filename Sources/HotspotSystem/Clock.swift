#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A monotonic clock: time since an arbitrary origin that never goes backwards.
/// The event loop reads time only through this, so tests can drive it with `ManualClock`.
public protocol MonotonicClock: AnyObject, Sendable {
    func now() -> Duration
}

/// The system's CLOCK_MONOTONIC.
public final class SystemMonotonicClock: MonotonicClock {
    public init() {}

    public static func read() -> Duration {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return .seconds(Int64(ts.tv_sec)) + .nanoseconds(Int64(ts.tv_nsec))
    }

    public func now() -> Duration { Self.read() }
}

/// A virtual clock that moves only when told to: deterministic tests of timers.
public final class ManualClock: MonotonicClock, @unchecked Sendable {  // @unchecked: `current` is touched only with `lock` held
    private var current: Duration
    private let lock = Mutex()

    public init(start: Duration = .zero) { current = start }

    public func now() -> Duration { lock.withLock { current } }

    public func advance(by d: Duration) { lock.withLock { current += d } }

    public func set(_ d: Duration) { lock.withLock { current = d } }
}

extension Duration {
    /// Whole milliseconds, rounded up (for poll timeouts), clamped to Int32.
    public var pollMilliseconds: Int32 {
        let c = components
        if c.seconds < 0 { return 0 }
        let ms = c.seconds * 1000 + (c.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: ms)
    }

    /// The duration in seconds as a Double.
    public var secondsDouble: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }
}
