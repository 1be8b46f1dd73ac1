#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem

/// CPU hogs (`yes > /dev/null`, one per requested core) for the tests that must give the same verdict on a loaded
/// machine. Each is started tied to this test process (`hotspot-nsexec --die-with`, `PR_SET_PDEATHSIG`): a test
/// run that is killed (SIGKILL included) takes its hogs with it, instead of leaving them to load the machine's
/// next run. `stop()` (or deinit) kills and reaps them.
public final class CPUHogs: @unchecked Sendable {  // @unchecked: `children` is set once in init, then only read
    public let children: [ChildProcess]

    /// Starts `count` hogs. Throws the spawn's error (naming the command and the errno text).
    public init(_ count: Int = 2) throws {
        var started: [ChildProcess] = []
        do {
            for _ in 0..<count {
                let config = try ProcessConfiguration("yes", stdout: .discard, stderr: .discard).tiedToThisProcess(inNetworkNamespace: nil)
                started.append(try ChildProcess.spawnTied(config))
            }
        } catch {
            Self.end(started)
            throw error
        }
        children = started
    }

    /// The hogs that have stopped (they never stop on their own: a stopped hog means the load was not there).
    public func stopped() -> [Int32] {
        children.filter { (try? $0.poll()) != nil }.map(\.pid)
    }

    public func stop() { Self.end(children) }

    deinit { Self.end(children) }

    private static func end(_ hogs: [ChildProcess]) {
        for hog in hogs where hog.exitStatus == nil {
            try? hog.signal(SIGKILL)
            _ = try? hog.wait()
        }
    }
}
