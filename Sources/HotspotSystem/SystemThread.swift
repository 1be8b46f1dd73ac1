#if canImport(Glibc)
import Glibc
#endif

/// The one way the package starts an OS thread: `pthread_create` with its result checked (an error names the
/// thread and the errno text), the closure handed over without a leak on failure. `detach` for a thread
/// nobody waits for; `start` for one that is joined.
public final class SystemThread: @unchecked Sendable {  // @unchecked: `thread` is set once before `start` returns and read only by `join`
    private final class Body: @unchecked Sendable {  // @unchecked: handed to exactly one new thread, never shared
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// What the thread is for, in errors.
    public let name: String
    private var thread = pthread_t()
    private var joined = false

    private init(name: String) { self.name = name }

    /// Starts `body` on a new thread that nobody joins.
    public static func detach(_ name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        let thread = try create(name, detached: true, stackSize: stackSize, body)
        _ = thread
    }

    /// Starts `body` on a new thread; call `join()` to wait for it.
    /// `stackSize`: bytes of stack (nil: the system's default, 8 MiB on Linux).
    public static func start(_ name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) throws(SystemError) -> SystemThread {
        try create(name, detached: false, stackSize: stackSize, body)
    }

    /// Runs `body` on a new thread and waits for it (for work that must not run on a pool thread).
    public static func run<T>(_ name: String, _ body: @escaping () throws -> T) throws -> T {
        let slot = Slot<T>()
        let work = UncheckedBox { slot.result = Result { try body() } }  // runs on the new thread while this one waits in join
        let thread = try create(name, detached: false) { work.value() }
        thread.join()
        return try slot.result!.get()
    }

    /// Runs `body` on a new thread and awaits its result without holding a cooperative thread meanwhile.
    public static func runAsync<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            do {
                try detach(name) { continuation.resume(with: Result { try body() }) }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    /// Waits for the thread to end (once; later calls return at once).
    public func join() {
        if joined { return }
        joined = true
        pthread_join(thread, nil)
    }

    private static func create(_ name: String, detached: Bool, stackSize: Int? = nil, _ body: @escaping () -> Void) throws(SystemError) -> SystemThread {
        let handle = SystemThread(name: name)
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        if let stackSize {
            let result = pthread_attr_setstacksize(&attributes, stackSize)
            if result != 0 { throw SystemError("set the stack size (\(stackSize) bytes) of thread", name, errno: result) }
        }
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        let result = pthread_create(&handle.thread, &attributes, { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, box)
        if result != 0 {
            Unmanaged<Body>.fromOpaque(box).release()
            throw SystemError("start thread", name, errno: result)
        }
        if detached { handle.joined = true }
        return handle
    }

    private final class Slot<T>: @unchecked Sendable {  // @unchecked: written by the thread, read after join
        var result: Result<T, any Error>?
    }
}

/// Carries a value that is not `Sendable` across a `@Sendable` boundary: to the one thread or queue that uses it, or
/// to threads that share it while its owner waits for them (`join`). What makes that safe is the user's to say, at the
/// place it boxes the value.
public struct UncheckedBox<T>: @unchecked Sendable {  // @unchecked: its purpose; each use says why the handover is safe
    public let value: T
    public init(_ value: T) { self.value = value }
}
