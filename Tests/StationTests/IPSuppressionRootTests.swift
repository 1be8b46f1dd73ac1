import Glibc
import HotspotCore
import HotspotSystem
@testable import HotspotStation
import Netlink
import Testing
import TestSupport

/// IP suppression by policy routing on the host kernel (netns + veth; no Wi-Fi needed): while suppressed a
/// general application's TCP connect fails with EHOSTUNREACH, a socket carrying the helper mark (0x4853)
/// still connects; released, everyone connects; the rules go away with `remove()`.
@Suite("IP suppression by policy routing (root, host kernel)", .serialized, .requiresRoot)
struct IPSuppressionRootTests {
    static func prefix() -> String { "hslt" + String(String(UInt32(getpid()) & 0xffff, radix: 16).suffix(4)) + "q" }

    static func sockaddrIn(_ address: String, _ port: UInt16) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        inet_pton(AF_INET, address, &addr.sin_addr)
        return addr
    }

    /// connect() from inside `ns` (0 on success, else -errno).
    static func connect(from ns: NetworkNamespace, to address: String, _ port: UInt16, mark: UInt32?) throws -> Int32 {
        try ns.runInside { () -> Int32 in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            if var mark { setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, socklen_t(4)) }
            var addr = sockaddrIn(address, port)
            let rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            return rc == 0 ? 0 : -errno
        }
    }

    @Test("root: suppressed blocks unmarked traffic with EHOSTUNREACH, lets the helper's marked traffic through; released lets all through")
    func suppressionByPolicyRouting() throws {
        let p = Self.prefix()
        let namespaces = try NetworkNamespace.createMany([p + "a", p + "b"])
        let (station, portal) = (namespaces[0], namespaces[1])
        defer { for ns in namespaces { try? ns.delete() } }
        try station.route.createVeth(p + "0", peer: p + "1", peerNamespace: portal)
        try station.route.addAddress(IPPrefix("198.51.100.10/24")!, to: p + "0")
        try portal.route.addAddress(IPPrefix("198.51.100.1/24")!, to: p + "1")
        try portal.route.addAddress(IPPrefix("198.18.0.1/32")!, to: "lo")
        for (ns, link) in [(station, p + "0"), (portal, p + "1")] {
            try ns.route.setUp("lo")
            try ns.route.setUp(link)
        }
        try station.route.addRoute(Route(gateway: IPAddress("198.51.100.1")))
        let listener = try portal.runInside { () throws -> Int32 in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = Self.sockaddrIn("0.0.0.0", 7080)
            let bound = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(fd, 16) == 0 else { throw SystemError.current("bind/listen", "0.0.0.0:7080") }
            return fd
        }
        defer { close(listener) }

        let rulesBefore = try station.route.ruleCount()
        let suppression = IPSuppression(route: station.route)
        try suppression.install()
        #expect(try station.route.ruleCount() == rulesBefore + 2)
        #expect(try suppression.isSuppressed())
        // The portal on the LAN and the "internet" behind the gateway: both unreachable for general traffic.
        #expect(try Self.connect(from: station, to: "198.51.100.1", 7080, mark: nil) == -EHOSTUNREACH)
        #expect(try Self.connect(from: station, to: "198.18.0.1", 7080, mark: nil) == -EHOSTUNREACH)
        // A helper's command traffic (SO_MARK 0x4853) goes through.
        #expect(try Self.connect(from: station, to: "198.51.100.1", 7080, mark: IPSuppression.commandTrafficMark) == 0)
        // Another mark does not.
        #expect(try Self.connect(from: station, to: "198.51.100.1", 7080, mark: 0x1) == -EHOSTUNREACH)

        try suppression.release()
        #expect(try !suppression.isSuppressed())
        #expect(try Self.connect(from: station, to: "198.18.0.1", 7080, mark: nil) == 0)
        try suppression.release()   // idempotent
        try suppression.suppress()
        try suppression.suppress()  // idempotent
        #expect(try Self.connect(from: station, to: "198.18.0.1", 7080, mark: nil) == -EHOSTUNREACH)

        suppression.remove()
        #expect(try station.route.ruleCount() == rulesBefore)
        #expect(try Self.connect(from: station, to: "198.18.0.1", 7080, mark: nil) == 0)
    }
}
