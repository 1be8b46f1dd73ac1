import Foundation
import HotspotSystem
import LabSandbox
import LabServices
import LabTopology
import LabVM

/// Runs `body` over `items` with up to `jobs` at a time on their own threads (labs block); results in order.
final class ParallelBox<T, R>: @unchecked Sendable {  // @unchecked: `results` and `next` are touched only with `lock` held; `items` and `body` are set once
    let items: [T]
    let body: (T) -> R
    var results: [R?]
    var next = 0
    let lock = HotspotSystem.Mutex()
    init(_ items: [T], _ body: @escaping (T) -> R) {
        self.items = items
        self.body = body
        results = Array(repeating: nil, count: items.count)
    }
}

public enum ParallelRuns {
    public static func map<T, R>(_ items: [T], jobs: Int, _ body: @escaping (T) -> R) -> [R] {
        let box = ParallelBox(items, body)
        let group = DispatchGroup()
        for _ in 0..<max(1, min(jobs, items.count)) {
            group.enter()
            Thread.detachNewThread {
                while true {
                    let index: Int? = box.lock.withLock {
                        guard box.next < box.items.count else { return nil }
                        box.next += 1
                        return box.next - 1
                    }
                    guard let index else { break }
                    let result = box.body(box.items[index])
                    box.lock.withLock { box.results[index] = result }
                }
                group.leave()
            }
        }
        group.wait()
        return box.results.map { $0! }
    }
}
