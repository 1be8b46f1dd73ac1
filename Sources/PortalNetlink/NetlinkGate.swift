#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem
import Netlink
import PortalKinds

/// The gate's nftables sets changed over nfnetlink from the portal's server, whose netlink sockets are made in the hotspot
/// namespace (a `hotspot-portal` process there, or the lab runner's thread inside it: `PortalService`): no `nft` process per sign-in (two of them cost about 0.18 s of every login under TCG, issue 19).
/// Both families live in one `inet` table (docs/TOPOLOGY.md "The captive gate"): `authenticated`
/// (`ether_addr . ipv4_addr`) lets a client's IPv4 address through, `authenticated6` (`ether_addr`) the MAC's
/// IPv6 traffic. A sign-in from either family releases both.
public struct NetlinkGate: PortalGate {
    public let set: NFTSet
    public let set6: NFTSet

    /// `spec`: FAMILY/TABLE/SET, such as inet/hotspot/authenticated; the IPv6 set is SET with a 6 appended.
    public init(spec: String) throws {
        let table = try GateTable(spec: spec)
        set = try NFTSet(family: table.family, table: table.table, set: table.set)
        set6 = try NFTSet(family: table.family, table: table.table, set: table.set + "6")
    }

    public init(set: NFTSet, set6: NFTSet) {
        self.set = set
        self.set6 = set6
    }

    public func allow(mac: String, ip: String, seconds: Int) async throws {
        let timeout = UInt64(max(seconds, 1)) * 1000
        let (element4, element6) = try Self.elements(mac: mac, ip: ip, timeoutMilliseconds: timeout)
        if let element4 { try Self.replace(element4, in: set) }
        try Self.replace(element6, in: set6)
    }

    /// Replaces any old element so the timeout restarts (`add` leaves an existing element's timeout as it is).
    static func replace(_ element: NFTSetElement, in set: NFTSet) throws {
        try? set.delete(element)
        do { try set.add(element) } catch { throw GateError(operation: "nft add element", object: "\(set.family) \(set.table) \(set.set) { \(element) }", cause: "\(error)") }
    }

    /// Removing an element the set already timed out is not an error (the gate forgot the client).
    public func revoke(mac: String, ip: String) async throws {
        let (element4, element6) = try Self.elements(mac: mac, ip: ip, timeoutMilliseconds: nil)
        if let element4 { try Self.remove(element4, from: set) }
        try Self.remove(element6, from: set6)
    }

    static func remove(_ element: NFTSetElement, from set: NFTSet) throws {
        do {
            try set.delete(element)
        } catch let error as SystemError where error.errno == ENOENT {
            return
        } catch {
            throw GateError(operation: "nft delete element", object: "\(set.family) \(set.table) \(set.set) { \(element) }", cause: "\(error)")
        }
    }

    /// The IPv4 set's element (nil for an IPv6 address) and the IPv6 set's (the MAC).
    static func elements(mac: String, ip: String, timeoutMilliseconds: UInt64?) throws -> (NFTSetElement?, NFTSetElement) {
        guard let macAddress = MACAddress(mac) else {
            throw GateError(operation: "gate", object: "client \(mac) \(ip)", cause: "`\(mac)` is not a MAC address such as 02:00:00:00:01:00")
        }
        guard let address = IPAddress(ip) else {
            throw GateError(operation: "gate", object: "client \(mac) \(ip)", cause: "`\(ip)` is not an IPv4 or IPv6 address")
        }
        return (NFTSetElement.macIPv4(macAddress, address, timeoutMilliseconds: timeoutMilliseconds),
                NFTSetElement.mac(macAddress, timeoutMilliseconds: timeoutMilliseconds))
    }
}

/// The portal namespace's neighbour tables (ARP and NDP) over rtnetlink: a client's MAC from its IPv4 or IPv6
/// address, and the other addresses of that MAC. Its socket is made in the calling thread's namespace.
public struct NetlinkNeighbours: NeighbourLookup {
    public let route: RouteNetlink

    public init() throws { route = try RouteNetlink.current() }

    public func entries() -> [NeighbourInfo] { (try? route.neighbours()) ?? [] }

    public func mac(for ip: String) -> String? {
        guard let address = IPAddress(ip) else { return nil }
        return entries().first { $0.address == address }.map { "\($0.mac)" }
    }

    public func addresses(of mac: String) -> [String] {
        entries().filter { "\($0.mac)" == mac.lowercased() }.map { "\($0.address)" }
    }
}
