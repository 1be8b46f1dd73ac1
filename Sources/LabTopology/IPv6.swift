import Netlink

/// Which IP families a hotspot's LAN offers (`gateway: ip:`, docs/TOPOLOGY.md "IPv6").
public enum IPFamilies: String, Sendable, Equatable, CaseIterable {
    /// IPv4 only (DHCPv4); the gate rejects IPv6 from clients. The default.
    case v4
    /// IPv4 (DHCPv4) and IPv6 (SLAAC and DHCPv6) side by side.
    case dual
    /// IPv6 only (SLAAC and DHCPv6); the IPv4 internet through NAT64 and DNS64.
    case v6Only = "v6-only"

    public var hasIPv4: Bool { self != .v6Only }
    public var hasIPv6: Bool { self != .v4 }
}

/// A hotspot LAN's IPv6 side: a /64 inside 2001:db8::/32 and the gateway's address in it.
public struct GatewayIPv6: Sendable, Equatable {
    /// The LAN's /64 (SLAAC needs 64 bits of interface identifier).
    public var prefix: IPPrefix
    /// The gateway's address (the prefix's `::1` unless the topology says otherwise).
    public var address: IPAddress

    /// The documentation range every lab prefix lies in.
    public static let documentationRange = IPPrefix("2001:db8::/32")!
    /// Where the lab's own IPv6 pieces live (the internet, uplinks, NAT64): hotspot prefixes stay outside it.
    public static let labReserved = IPPrefix("2001:db8:ff00::/40")!

    public init(prefix: IPPrefix, address: IPAddress) {
        self.prefix = IPPrefix(prefix.network, length: prefix.length)
        self.address = address
    }

    /// The default /64 of a LAN whose IPv4 subnet is `subnet`: 2001:db8:AABB:CCDD::/64 from its network address
    /// (disjoint IPv4 subnets give disjoint prefixes), gateway `::1`.
    public static func derived(from subnet: IPv4Subnet) -> GatewayIPv6 {
        let v = subnet.network.value
        let bytes: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)]
        let network = IPAddress(bytes: bytes + Array(repeating: 0, count: 8))!
        return GatewayIPv6(prefix: IPPrefix(network, length: 64), address: host(network, 1))
    }

    /// The address `number` of the prefix `network` (its last 8 bytes).
    public static func host(_ network: IPAddress, _ number: UInt64) -> IPAddress {
        var bytes = Array(network.bytes.prefix(8))
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(number >> UInt64(shift) & 0xff)) }
        return IPAddress(bytes: bytes)!
    }

    /// Whether `prefix` lies inside `range`.
    public static func contains(_ range: IPPrefix, _ prefix: IPPrefix) -> Bool {
        prefix.address.isIPv6 && prefix.length >= range.length && IPPrefix(prefix.address, length: range.length).network == range.network
    }

    /// DHCPv6's pool: `::1000` to `::1fff` of the prefix.
    public var dhcpStart: IPAddress { Self.host(prefix.network, 0x1000) }
    public var dhcpEnd: IPAddress { Self.host(prefix.network, 0x1fff) }
}

extension Gateway {
    /// The gateway's addresses for the portal's URL: the IPv6 literal on an IPv6-only LAN, else the IPv4 one.
    public var portalHost: String {
        if ip == .v6Only, let ipv6 { return "[\(ipv6.address)]" }
        return "\(address)"
    }
}

/// The lab internet's IPv6 side (fixed, inside the lab's reserved 2001:db8:ff00::/40).
extension Internet {
    /// Where the internet's servers listen over IPv6.
    public static let address6 = IPAddress("2001:db8:ffff::1")!

    /// The /64 of hotspot `index`'s uplink: (internet side `::1`, hotspot side `::2`).
    public func uplink6(_ index: Int) -> (internet: IPAddress, hotspot: IPAddress) {
        let network = IPAddress(bytes: [0x20, 0x01, 0x0d, 0xb8, 0xff, 0xfe, UInt8(index >> 8 & 0xff), UInt8(index & 0xff)]
                                + Array(repeating: 0, count: 8))!
        return (GatewayIPv6.host(network, 1), GatewayIPv6.host(network, 2))
    }
}
