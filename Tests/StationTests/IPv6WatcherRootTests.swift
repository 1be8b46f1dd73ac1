import Glibc
import HotspotSystem
@testable import HotspotStation
import Netlink
import Testing
import TestSupport

/// The IPv6 watcher on the host kernel: a link that never hears a Router Advertisement is given up on only after
/// the watcher's timeout, and the failure says so with that timeout.
@Suite("IPv6 watcher (root, host kernel)", .serialized, .requiresRoot)
struct IPv6WatcherRootTests {
    static func prefix() -> String { "hslt" + String(String(UInt32(getpid()) & 0xffff, radix: 16).suffix(4)) + "w" }

    @Test("root: no Router Advertisement: nothing reported before the timeout, then the timeout named")
    func givesUpAfterItsTimeout() throws {
        let p = Self.prefix()
        let namespaces = try NetworkNamespace.createMany([p + "a", p + "b"])
        defer { for ns in namespaces { try? ns.delete() } }
        let (station, other) = (namespaces[0], namespaces[1])
        try station.route.createVeth(p + "s", peer: p + "o", peerNamespace: other)
        try station.route.setUp(p + "s")
        try other.route.setUp(p + "o")
        let reports = Locked<[String]>([])
        let timeout = Duration.seconds(3)
        let started = ContinuousClock.now
        try station.runInside {
            let watcher = StationIPv6Watcher(interface: p + "s", timeout: timeout) { outcome in
                let text: String
                switch outcome {
                case .success: text = "up"
                case .failure(let error): text = "\(error)"
                }
                reports.withLock { $0.append(text) }
            }
            watcher.start()
        }
        while reports.withLock({ $0.isEmpty }) && ContinuousClock.now - started < .seconds(30) { usleep(20_000) }
        let elapsed = ContinuousClock.now - started
        let all = reports.withLock { $0 }
        print("IPv6 watcher: \(all) after \(elapsed)")
        #expect(all == ["wait for IPv6 on \(p)s: no Router Advertisement within 3.0 seconds"], "\(all)")
        #expect(elapsed >= timeout, "reported after \(elapsed), before its \(timeout)")
    }
}
