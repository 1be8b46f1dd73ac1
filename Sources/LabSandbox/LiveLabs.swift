#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem

/// The labs this process has up, for a command stopped by a signal (`hotspot-lab run`, `demo`, `certify`,
/// `replay`, `bench`: docs/RELIABILITY.md). A signal can arrive while a scenario's step waits for a state
/// or while several labs run at once (`--jobs`); the command's signal thread then calls `stopAll`, which tears
/// each lab down as `Lab.teardown` does and sweeps what a bring-up racing with it may have added (the
/// run's namespaces and root links, as `clean` would), and refuses to register labs started after it.
public enum LiveLabs {
    private final class Weak: @unchecked Sendable {  // @unchecked: read and written only inside `LiveLabs.state`'s lock
        weak var lab: Lab?
        init(_ lab: Lab) { self.lab = lab }
    }

    private struct State {
        var labs: [String: Weak] = [:]
        /// Set by `stopAll`: no lab may register afterwards.
        var closed = false
    }

    private static let state = Locked(State())

    /// A lab started (`Lab.start`); throws once `stopAll` ran: the process is stopping.
    static func register(_ lab: Lab) throws {
        try state.withLock { state in
            if state.closed { throw SystemError("start lab", lab.prefix, reason: "this command is stopping (signal received)") }
            state.labs[lab.prefix] = Weak(lab)
        }
    }

    /// A lab torn down.
    static func unregister(_ prefix: String) {
        state.withLock { _ = $0.labs.removeValue(forKey: prefix) }
    }

    /// The prefixes of the labs up now.
    public static var prefixes: [String] {
        state.withLock { $0.labs.filter { $0.value.lab != nil }.keys.sorted() }
    }

    /// Tears down every lab this process has up (in parallel), then removes whatever of their runs is left
    /// (processes in their namespaces, the namespaces, root links, the state folders); no lab may start
    /// afterwards. Returns the prefixes torn down and the errors met.
    @discardableResult
    public static func stopAll() -> (prefixes: [String], errors: [String]) {
        let live: [(String, Lab?)] = state.withLock { state in
            state.closed = true
            return state.labs.map { ($0.key, $0.value.lab) }.sorted { $0.0 < $1.0 }
        }
        let collected = Locked([String]())
        var threads: [SystemThread] = []
        final class Job: @unchecked Sendable {  // @unchecked: `done` appends to `collected`, which owns its lock
            let lab: Lab
            let done: ([any Error]) -> Void
            init(_ lab: Lab, _ done: @escaping ([any Error]) -> Void) { self.lab = lab; self.done = done }
        }
        for case (_, let lab?) in live {
            let job = Job(lab) { found in collected.withLock { $0 += found.map { "\($0)" } } }
            do {
                threads.append(try SystemThread.start("tear down lab \(lab.prefix)") { job.done(job.lab.teardown()) })
            } catch {
                job.done(job.lab.teardown())  // no thread to be had: tear it down here
            }
        }
        for thread in threads { thread.join() }
        // What a bring-up racing with the teardown may have created after it (and what teardown could not remove).
        var report = CleanReport()
        for (prefix, _) in live {
            LabCleanup.clean(run: prefix, directory: LabState.root + "/" + prefix, into: &report)
        }
        state.withLock { $0.labs = [:] }
        return (live.map(\.0), collected.withLock { $0 } + report.errors)
    }
}
