/// The addresses a hotspot's DHCP server (dnsmasq) hands out. Pure: the topology parser uses both functions.
public enum DHCPRange {
    /// The range when the topology gives no `dhcp-range`: from .10 (subnets larger than /27) or the address
    /// after the gateway (smaller ones) to the last host. It never holds the network address, the broadcast
    /// address or the gateway: when that default would (a gateway inside it, or at the end of a small subnet),
    /// it is the larger run of hosts on one side of the gateway. nil: the subnet has no host besides the gateway.
    public static func derived(subnet: IPv4Subnet, gateway: IPv4Address) -> (first: IPv4Address, last: IPv4Address)? {
        guard subnet.length <= 30 else { return nil }
        let low = subnet.first.value + 1
        let high = subnet.last.value - 1
        var start = subnet.length > 27 ? gateway.value &+ 1 : subnet.network.value + 10
        start = max(start, low)
        // The default, when it is a range and leaves the gateway out.
        let (a, b) = start <= high ? (start, high) : (low, high)
        guard (a...b).contains(gateway.value) else { return (IPv4Address(value: a), IPv4Address(value: b)) }
        let below = gateway.value > a ? (a, gateway.value - 1) : nil
        let above = gateway.value < b ? (gateway.value + 1, b) : nil
        switch (below, above) {
        case let (below?, above?):
            let pick = below.1 - below.0 > above.1 - above.0 ? below : above
            return (IPv4Address(value: pick.0), IPv4Address(value: pick.1))
        case let (only?, nil), let (nil, only?):
            return (IPv4Address(value: only.0), IPv4Address(value: only.1))
        case (nil, nil):
            return nil
        }
    }

    /// What is wrong with an explicit range `first`–`last` for this subnet and gateway (nil: nothing): each end
    /// inside the subnet, first <= last, and neither the network address, the broadcast address nor the
    /// gateway in it (dnsmasq would offer them).
    public static func problem(subnet: IPv4Subnet, gateway: IPv4Address, first: IPv4Address, last: IPv4Address) -> String? {
        for address in [first, last] where !subnet.contains(address) {
            return "\(address) is outside the subnet \(subnet)"
        }
        guard first <= last else { return "expected first <= last, found \(first) > \(last)" }
        let range = first...last
        if range.contains(subnet.first) {
            return "the range \(first)-\(last) contains the network address \(subnet.first); expected host addresses only"
        }
        if range.contains(subnet.last) {
            return "the range \(first)-\(last) contains the broadcast address \(subnet.last); expected host addresses only"
        }
        if range.contains(gateway) {
            return "the range \(first)-\(last) contains the gateway address \(gateway); expected a range without it"
        }
        return nil
    }
}
