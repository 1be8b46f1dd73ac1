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
/// While suppressed every route lookup for general traffic ends in `unreachable` (applications get
/// EHOSTUNREACH, "No route to host", at once); sockets a helper marks with `HotspotHelper.commandTrafficMark` skip to the main
/// table and reach the portal. Local delivery (the `local` table at pref 0) is untouched, so answers to
/// the helper come in, and DHCP's raw sockets do not route at all. Released, the table is empty and
/// lookups fall through to `main` as usual. IPv4 only (the lab's gate rejects IPv6 from clients).
public struct IPSuppression: Sendable {
    /// The mark a helper's command traffic carries (`HotspotProtocol.commandTrafficMark`, 0x4853).
    public static let commandTrafficMark: UInt32 = HotspotProtocol.commandTrafficMark
    /// The suppression table: numbered with the same 0x4853 (18515).
    public static let table: UInt32 = HotspotProtocol.commandTrafficMark
    public static let markRulePriority: UInt32 = 100
    public static let tableRulePriority: UInt32 = 101

    public let route: RouteNetlink

    public init(route: RouteNetlink) { self.route = route }

    static let markRule = RoutingRule(priority: markRulePriority, fwmark: commandTrafficMark, fwmask: 0xFFFF_FFFF, table: 254)
    static let tableRule = RoutingRule(priority: tableRulePriority, table: table)
    static let unreachable = Route(table: table, kind: .unreachable)

    /// Adds the two rules (idempotent) and starts suppressed, as the Inactive state wants.
    public func install() throws {
        for rule in [Self.markRule, Self.tableRule] {
            do { try route.addRule(rule) } catch let e as SystemError where e.errno == EEXIST {}
        }
        try suppress()
    }

    /// General traffic may no longer use the interface. Idempotent.
    public func suppress() throws {
        do { try route.addRoute(Self.unreachable) } catch let e as SystemError where e.errno == EEXIST {}
    }

    /// General traffic may use the interface again. Idempotent.
    public func release() throws {
        do { try route.deleteRoute(Self.unreachable) } catch let e as SystemError where e.errno == ESRCH || e.errno == ENOENT {}
    }

    /// Whether the unreachable route is in place (for status and tests).
    public func isSuppressed() throws -> Bool {
        do {
            try route.addRoute(Self.unreachable)
        } catch let e as SystemError where e.errno == EEXIST {
            return true
        }
        try release()
        return false
    }

    /// Removes the rules and the route (hotspotd stopping). Errors are ignored: nothing else uses them.
    public func remove() {
        try? release()
        for rule in [Self.markRule, Self.tableRule] { try? route.deleteRule(rule) }
    }
}
