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

    static func sockaddrIn6(_ address: String, _ port: UInt16) -> sockaddr_in6 {
        var addr = sockaddr_in6()
        addr.sin6_family = sa_family_t(AF_INET6)
        addr.sin6_port = port.bigEndian
        inet_pton(AF_INET6, address, &addr.sin6_addr)
        return addr
    }

    /// connect() from inside `ns` (0 on success, else -errno); an address with a colon is IPv6.
    static func connect(from ns: NetworkNamespace, to address: String, _ port: UInt16, mark: UInt32?) throws -> Int32 {
        try ns.runInside { () -> Int32 in
            let ipv6 = address.contains(":")
            let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            if var mark { setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, socklen_t(4)) }
            let rc: Int32
            if ipv6 {
                var addr = sockaddrIn6(address, port)
                rc = withUnsafePointer(to: &addr) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
                }
            } else {
                var addr = sockaddrIn(address, port)
                rc = withUnsafePointer(to: &addr) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
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

    /// The same on a dual-stack link: the gate's LAN and the internet behind it on IPv4 and IPv6 (documentation
    /// prefixes), one listener for both families. Suppressed, neither family's general traffic leaves (IPv6 too:
    /// the leak the IPv4-only station had); the helper's marked sockets pass on both; released, both pass.
    @Test("root: both families: suppressed blocks IPv4 and IPv6 general traffic, the helper's marked traffic passes on both")
    func suppressionOfBothFamilies() throws {
        let p = Self.prefix() + "6"
        let namespaces = try NetworkNamespace.createMany([p + "a", p + "b"])
        let (station, portal) = (namespaces[0], namespaces[1])
        defer { for ns in namespaces { try? ns.delete() } }
        try station.route.createVeth(p + "0", peer: p + "1", peerNamespace: portal)
        for (ns, link) in [(station, p + "0"), (portal, p + "1")] {
            try ns.route.setUp("lo")
            try ns.route.setUp(link)
        }
        try station.route.addAddress(IPPrefix("198.51.100.10/24")!, to: p + "0")
        try station.route.addAddress(IPPrefix("2001:db8:1::10/64")!, to: p + "0")
        try portal.route.addAddress(IPPrefix("198.51.100.1/24")!, to: p + "1")
        try portal.route.addAddress(IPPrefix("2001:db8:1::1/64")!, to: p + "1")
        try portal.route.addAddress(IPPrefix("198.18.0.1/32")!, to: "lo")
        try portal.route.addAddress(IPPrefix("2001:db8:ffff::1/128")!, to: "lo")
        try station.route.addRoute(Route(gateway: IPAddress("198.51.100.1")))
        // IP up per family (docs/DECISIONS.md): a global IPv6 address without a default route is not up yet.
        let index = try station.route.index(of: p + "0")
        let withoutRoute = try StationAddressing.read(interfaceIndex: index, route: station.route)
        #expect(withoutRoute.ipv4Up && !withoutRoute.ipv6Up, "\(withoutRoute)")
        #expect(withoutRoute.ipv6Addresses == ["2001:db8:1::10/64"] && withoutRoute.ipv6DefaultRoute == nil)
        try station.route.addRoute(Route(gateway: IPAddress("2001:db8:1::1")))
        let addressing = try StationAddressing.read(interfaceIndex: index, route: station.route)
        #expect(addressing == StationAddressing(ipv4Addresses: ["198.51.100.10/24"], ipv6Addresses: ["2001:db8:1::10/64"],
                                                ipv4DefaultRoute: "via 198.51.100.1", ipv6DefaultRoute: "via 2001:db8:1::1"))
        #expect(addressing.ipv6Up && addressing.ipv4Up)
        // One listener for both families ([::]:7080, IPv4-mapped accepted).
        let listener = try portal.runInside { () throws -> Int32 in
            let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
            var addr = Self.sockaddrIn6("::", 7080)
            let bound = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
            guard bound == 0, listen(fd, 16) == 0 else { throw SystemError.current("bind/listen", "[::]:7080") }
            return fd
        }
        defer { close(listener) }
        let targets = ["198.51.100.1", "198.18.0.1", "2001:db8:1::1", "2001:db8:ffff::1"]
        // Unsuppressed, every target answers (the control: the setup itself reaches them).
        for target in targets { #expect(try Self.connect(from: station, to: target, 7080, mark: nil) == 0, "control: \(target)") }

        let rules4 = try station.route.ruleCount(), rules6 = try station.route.ruleCount(ipv6: true)
        let suppression = IPSuppression(route: station.route)
        try suppression.install()
        #expect(try station.route.ruleCount() == rules4 + 2)
        #expect(try station.route.ruleCount(ipv6: true) == rules6 + 2)
        #expect(try suppression.isSuppressed(ipv6: false) && suppression.isSuppressed(ipv6: true))
        for target in targets {
            #expect(try Self.connect(from: station, to: target, 7080, mark: nil) == -EHOSTUNREACH, "suppressed: \(target)")
            #expect(try Self.connect(from: station, to: target, 7080, mark: IPSuppression.commandTrafficMark) == 0, "helper's mark: \(target)")
            #expect(try Self.connect(from: station, to: target, 7080, mark: 0x1) == -EHOSTUNREACH, "another mark: \(target)")
        }

        try suppression.release()
        #expect(try !suppression.isSuppressed(ipv6: false) && !suppression.isSuppressed(ipv6: true))
        for target in targets { #expect(try Self.connect(from: station, to: target, 7080, mark: nil) == 0, "released: \(target)") }
        try suppression.suppress()
        #expect(try Self.connect(from: station, to: "2001:db8:ffff::1", 7080, mark: nil) == -EHOSTUNREACH)

        suppression.remove()
        #expect(try station.route.ruleCount() == rules4 && station.route.ruleCount(ipv6: true) == rules6)
        for target in targets { #expect(try Self.connect(from: station, to: target, 7080, mark: nil) == 0, "removed: \(target)") }
    }
}
