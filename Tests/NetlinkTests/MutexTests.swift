import Glibc
import HotspotSystem
import Netlink
import Testing

/// The package's one lock (`HotspotSystem.Mutex`) and its condition variable.
@Suite("Mutex and Condition")
struct MutexTests {
    final class Shared: @unchecked Sendable {
        let mutex = Mutex()
        let condition = Condition()
        var ready = false
        var waiting = false
        var count = 0
    }

    @Test("withLock serializes two threads' increments")
    func withLockSerializes() throws {
        let shared = Shared()
        let results = try DedicatedThread.runAll((0..<2).map { _ in
            { () throws -> Void in for _ in 0..<20_000 { shared.mutex.withLock { shared.count += 1 } } }
        })
        for result in results { try result.get() }
        #expect(shared.count == 40_000)
    }

    @Test("a recursive mutex can be taken again by the thread holding it")
    func recursiveReentry() {
        let mutex = Mutex(recursive: true)
        let value = mutex.withLock { mutex.withLock { 42 } }
        #expect(value == 42)
    }

    @Test("a waiter wakes on broadcast, long before its timeout")
    func broadcastWakesWaiter() throws {
        let shared = Shared()
        let start = ContinuousClock.now
        let results = try DedicatedThread.runAll([
            { () throws -> Void in
                shared.mutex.lock()
                defer { shared.mutex.unlock() }
                let deadline = ContinuousClock.now + .seconds(20)
                shared.waiting = true  // under the lock: the signaller sees it only once this thread waits
                while !shared.ready, ContinuousClock.now < deadline { shared.condition.wait(shared.mutex, timeout: .seconds(10)) }
            },
            { () throws -> Void in
                while !shared.mutex.withLock({ shared.waiting }) { sched_yield() }
                shared.mutex.withLock {
                    shared.ready = true
                    shared.condition.broadcast()
                }
            },
        ])
        for result in results { try result.get() }
        #expect(shared.mutex.withLock { shared.ready })
        #expect(ContinuousClock.now - start < .seconds(30), "a hang, not a slow machine: the broadcast came at once")
    }

    @Test("a wait without broadcast returns once its timeout passed")
    func waitTimesOut() {
        let shared = Shared()
        let start = ContinuousClock.now
        shared.mutex.withLock { shared.condition.wait(shared.mutex, timeout: .milliseconds(30)) }
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(29) && waited < .seconds(30), "returned at its timeout, not never: \(waited)")
    }
}
