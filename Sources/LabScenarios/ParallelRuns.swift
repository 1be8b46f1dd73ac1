import Foundation
import HotspotSystem

/// Runs `body` over `items` with up to `jobs` at a time on their own threads (labs block); results in order.
public enum ParallelRuns {
    private struct Work<R> {
        var next = 0
        var results: [R?]
    }

    public static func map<T, R>(_ items: [T], jobs: Int, _ body: @escaping (T) -> R) -> [R] {
        let work = Locked(Work<R>(results: Array(repeating: nil, count: items.count)))
        // One worker: take the next index, run it, store its result; until none is left.
        // Shared by the worker threads: its own state is `Locked`, and `body` and `items` are the caller's, used while it joins.
        let worker = UncheckedBox {
            while true {
                let index: Int? = work.withLock { work in
                    guard work.next < items.count else { return nil }
                    work.next += 1
                    return work.next - 1
                }
                guard let index else { return }
                let result = body(items[index])
                work.withLock { $0.results[index] = result }
            }
        }
        var threads: [SystemThread] = []
        for n in 0..<max(1, min(jobs, items.count)) {
            do {
                threads.append(try SystemThread.start("parallel run \(n + 1)") { worker.value() })
            } catch {
                // No thread to be had: this thread works too (with no thread at all, it does all of it).
                if threads.isEmpty { worker.value() }
                break
            }
        }
        for thread in threads { thread.join() }
        return work.withLock { $0.results.map { $0! } }
    }
}
