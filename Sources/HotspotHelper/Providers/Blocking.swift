#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem

extension HotspotHelper {
    /// Runs blocking work (`command.http`, `HotspotHelperEnvironment.waitForUserInput`) on a thread of its own and
    /// awaits its result, so a provider's `handleCommand` never holds one of Swift's few cooperative threads
    /// (nor a Dispatch worker) while it waits for a portal or the user: the SDK needs one to take hotspotd's `stop`.
    public static func blocking<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
            do {
                try SystemThread.detach("blocking work of a provider") { done.resume(returning: work()) }
            } catch {
                // No thread to be had: run it here rather than not at all.
                done.resume(returning: work())
            }
        }
    }
}

