#if canImport(Glibc)
import Glibc
#endif

extension HotspotHelper {
    /// Runs blocking work (`command.http`, `HotspotHelperEnvironment.waitForUserInput`) on a thread of its own and
    /// awaits its result, so a provider's `handleCommand` never holds one of Swift's few cooperative threads
    /// (nor a Dispatch worker) while it waits for a portal or the user: the SDK needs one to take hotspotd's `stop`.
    public static func blocking<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
            let job = BlockingJob { done.resume(returning: work()) }
            var thread = pthread_t()
            let retained = Unmanaged.passRetained(job).toOpaque()
            let started = pthread_create(&thread, nil, { raw in
                guard let raw else { return nil }
                Unmanaged<BlockingJob>.fromOpaque(raw).takeRetainedValue().run()
                return nil
            }, retained)
            if started == 0 {
                pthread_detach(thread)
            } else {
                // No thread to be had: run it here rather than not at all.
                Unmanaged<BlockingJob>.fromOpaque(retained).takeRetainedValue().run()
            }
        }
    }
}

final class BlockingJob: @unchecked Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
