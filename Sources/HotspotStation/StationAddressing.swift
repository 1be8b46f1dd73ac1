import HotspotProtocol
import Netlink

/// A station interface's addresses and default routes, per family: what "IP up" is decided from on an
/// IPv6-only network, and what the trace shows (docs/STATION.md, docs/DECISIONS.md "IPv6 hotspots").
public struct StationAddressing: Sendable, Equatable {
    public var ipv4Addresses: [String]
    /// Global IPv6 addresses that are usable (duplicate address detection finished).
    public var ipv6Addresses: [String]
    /// Global IPv6 addresses still tentative.
    public var ipv6Tentative: [String]
    public var ipv4DefaultRoute: String?
    public var ipv6DefaultRoute: String?

    public init(ipv4Addresses: [String] = [], ipv6Addresses: [String] = [], ipv6Tentative: [String] = [],
                ipv4DefaultRoute: String? = nil, ipv6DefaultRoute: String? = nil) {
        self.ipv4Addresses = ipv4Addresses
        self.ipv6Addresses = ipv6Addresses
        self.ipv6Tentative = ipv6Tentative
        self.ipv4DefaultRoute = ipv4DefaultRoute
        self.ipv6DefaultRoute = ipv6DefaultRoute
    }

    /// IP up over IPv4: an address and a default route (the DHCPv4 lease configured).
    public var ipv4Up: Bool { !ipv4Addresses.isEmpty && ipv4DefaultRoute != nil }
    /// IP up over IPv6 (what an IPv6-only network waits for): a global address from SLAAC or DHCPv6 whose
    /// duplicate address detection finished, plus a default route. A link-local address alone is not up.
    public var ipv6Up: Bool { !ipv6Addresses.isEmpty && ipv6DefaultRoute != nil }

    /// From the kernel's view of `interface` (index) in the calling thread's namespace: the main table's default
    /// routes (through that interface) and the interface's addresses.
    public static func read(interfaceIndex: Int32, route: RouteNetlink) throws -> StationAddressing {
        var result = StationAddressing()
        for address in try route.addresses() where address.index == interfaceIndex && address.isGlobal {
            let text = "\(address.prefix)"
            if !address.prefix.address.isIPv6 {
                result.ipv4Addresses.append(text)
            } else if address.isTentative {
                result.ipv6Tentative.append(text)
            } else {
                result.ipv6Addresses.append(text)
            }
        }
        for ipv6 in [false, true] {
            let defaults = try route.routes(ipv6: ipv6).filter {
                $0.isDefault && $0.table == 254 && $0.kind == 1 && ($0.outputInterface == nil || $0.outputInterface == interfaceIndex)
            }
            let text = defaults.first.map { route in route.gateway.map { "via \($0)" } ?? "dev #\(interfaceIndex)" }
            if ipv6 { result.ipv6DefaultRoute = text } else { result.ipv4DefaultRoute = text }
        }
        return result
    }

    /// Writes the addresses, default routes and `ipv6Up` into a `dhcpLease` station record (docs/TRACE.md):
    /// `ipv4Addresses`, `ipv6Addresses` (lists of ADDRESS/LENGTH), `ipv4DefaultRoute`, `ipv6DefaultRoute` ("via
    /// GATEWAY", absent when there is none), `ipv6Up`.
    public func fill(_ record: inout TraceRecord.Station) {
        record.ipv4Addresses = ipv4Addresses
        record.ipv6Addresses = ipv6Addresses
        record.ipv4DefaultRoute = ipv4DefaultRoute
        record.ipv6DefaultRoute = ipv6DefaultRoute
        record.ipv6Up = ipv6Up
    }
}
