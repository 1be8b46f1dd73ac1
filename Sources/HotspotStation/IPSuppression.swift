#if canImport(Glibc)
import Glibc
#endif
import HotspotProtocol
import HotspotSystem
import Netlink

/// IP suppression on a station, with policy routing (docs/STATION.md):
///
/// ```
/// pref 100: fwmark 0x4853 lookup main     # a helper's traffic for its command (SO_MARK 0x4853)
/// pref 101: lookup 18515                  # the suppression table
/// table 18515: unreachable default        # present only while suppressed
/// ```
///
/// The same two rules and the same unreachable default are installed for IPv4 and for IPv6 (each family has its
/// own rule list and tables), and suppressed and released together: no general traffic on either family until
/// Authenticated, the helper's marked traffic passes on either.
///
/// While suppressed every route lookup for general traffic ends in `unreachable` (applications get
/// EHOSTUNREACH, "No route to host", at once); sockets a helper marks with `HotspotHelper.commandTrafficMark` skip to the main
/// table and reach the portal. Local delivery (the `local` table at pref 0) is untouched, so answers to
/// the helper come in, and DHCP's raw sockets do not route at all. Released, the table is empty and
/// lookups fall through to `main` as usual. IPv6 needs nothing else: Neighbour Discovery and router solicitations
/// are sent by the kernel without a route lookup, and multicast (`ff00::/8`, DHCPv6's `ff02::1:2`) is routed
/// by the `local` table at pref 0, so SLAAC and DHCPv6 work while suppressed.
public struct IPSuppression: Sendable {
    /// The mark a helper's command traffic carries (`HotspotProtocol.commandTrafficMark`, 0x4853).
    public static let commandTrafficMark: UInt32 = HotspotProtocol.commandTrafficMark
    /// The suppression table: numbered with the same 0x4853 (18515).
    public static let table: UInt32 = HotspotProtocol.commandTrafficMark
    public static let markRulePriority: UInt32 = 100
    public static let tableRulePriority: UInt32 = 101

    public let route: RouteNetlink

    public init(route: RouteNetlink) { self.route = route }

    static func markRule(ipv6: Bool) -> RoutingRule {
        RoutingRule(priority: markRulePriority, fwmark: commandTrafficMark, fwmask: 0xFFFF_FFFF, table: 254, ipv6: ipv6)
    }
    static func tableRule(ipv6: Bool) -> RoutingRule { RoutingRule(priority: tableRulePriority, table: table, ipv6: ipv6) }
    static func unreachable(ipv6: Bool) -> Route { Route(table: table, kind: .unreachable, ipv6: ipv6) }
    /// The rules of both families (IPv4 first).
    static let rules = [false, true].flatMap { [markRule(ipv6: $0), tableRule(ipv6: $0)] }
    /// The unreachable default routes of both families (IPv4 first).
    static let unreachableRoutes = [unreachable(ipv6: false), unreachable(ipv6: true)]

    /// Adds the two rules (idempotent) and starts suppressed, as the Inactive state wants.
    public func install() throws {
        for rule in Self.rules {
            do { try route.addRule(rule) } catch let e as SystemError where e.errno == EEXIST {}
        }
        try suppress()
    }

    /// General traffic may no longer use the interface, on either family. Idempotent.
    public func suppress() throws {
        for unreachable in Self.unreachableRoutes {
            do { try route.addRoute(unreachable) } catch let e as SystemError where e.errno == EEXIST {}
        }
    }

    /// General traffic may use the interface again, on both families. Idempotent.
    public func release() throws {
        for unreachable in Self.unreachableRoutes {
            do { try route.deleteRoute(unreachable) } catch let e as SystemError where e.errno == ESRCH || e.errno == ENOENT {}
        }
    }

    /// Whether the unreachable route of both families is in place (for status and tests).
    public func isSuppressed() throws -> Bool {
        try isSuppressed(ipv6: false) && isSuppressed(ipv6: true)
    }

    /// Whether the unreachable route of one family is in place (it is put back as it was).
    public func isSuppressed(ipv6: Bool) throws -> Bool {
        let unreachable = Self.unreachable(ipv6: ipv6)
        do {
            try route.addRoute(unreachable)
        } catch let e as SystemError where e.errno == EEXIST {
            return true
        }
        do { try route.deleteRoute(unreachable) } catch let e as SystemError where e.errno == ESRCH || e.errno == ENOENT {}
        return false
    }

    /// Removes the rules and the routes of both families (hotspotd stopping). Errors are ignored: nothing else
    /// uses them.
    public func remove() {
        try? release()
        for rule in Self.rules { try? route.deleteRule(rule) }
    }
}
