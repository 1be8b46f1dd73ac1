import Dispatch

extension HotspotHelper {
    /// Runs blocking work (`command.http`, `HotspotHelperEnvironment.waitForUserInput`) on a Dispatch thread and
    /// awaits its result, so a provider's `handleCommand` never holds one of Swift's few cooperative threads
    /// while it waits for a portal or the user: the SDK needs one to take hotspotd's `stop`.
    public static func blocking<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
            DispatchQueue.global().async { done.resume(returning: work()) }
        }
    }
}
