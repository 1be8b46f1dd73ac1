import Testing
@testable import LabKit
@testable import LabServices
@testable import LabTopology

/// Issue 17: the DHCP range a gateway hands out never holds the network, broadcast or gateway address.
@Suite struct DHCPRangeTests {
    func topology(subnet: String, address: String, range: String? = nil) throws -> Topology {
        try TopologyParser.parse("""
            name: t
            hotspots:
              - name: cafe
                ssid: Cafe
                bssid: "02:00:00:00:01:00"
                security: open
                gateway:
                  subnet: \(subnet)
                  address: \(address)
            """ + (range.map { "\n      dhcp-range: \($0)" } ?? ""), file: "t.yaml")
    }

    func derived(_ subnet: String, _ gateway: String) -> String? {
        DHCPRange.derived(subnet: IPv4Subnet(subnet)!, gateway: IPv4Address(gateway)!).map { "\($0.first)-\($0.last)" }
    }

    @Test("a /29 whose gateway is .6 and has no dhcp-range: dnsmasq offers .1-.5, not the gateway and the broadcast")
    func slash29GatewayAtTheEnd() throws {
        let gateway = try topology(subnet: "198.51.100.0/29", address: "198.51.100.6").hotspots[0].gateway
        #expect("\(gateway.dhcpStart)-\(gateway.dhcpEnd)" == "198.51.100.1-198.51.100.5")
        let internet = Internet(address: IPv4Address("198.18.0.1")!, uplinks: IPv4Subnet("203.0.113.0/24")!, names: [])
        let hotspot = try topology(subnet: "198.51.100.0/29", address: "198.51.100.6").hotspots[0]
        let args = DnsmasqConfig.arguments(hotspot, internet: internet, interface: "w", leaseFile: "/l", logFile: "/g")
        #expect(args.contains("--dhcp-range=198.51.100.1,198.51.100.5,255.255.255.248,3600"), "\(args)")
    }

    @Test("the default range is unchanged where it already left the gateway out")
    func defaultsUnchanged() {
        #expect(derived("198.51.100.0/24", "198.51.100.1") == "198.51.100.10-198.51.100.254")
        #expect(derived("198.51.100.0/26", "198.51.100.1") == "198.51.100.10-198.51.100.62")
        #expect(derived("198.51.100.64/28", "198.51.100.65") == "198.51.100.66-198.51.100.78")
        #expect(derived("198.51.100.0/29", "198.51.100.3") == "198.51.100.4-198.51.100.6")
        // A gateway inside the large default: the larger side of it.
        #expect(derived("198.51.100.0/24", "198.51.100.100") == "198.51.100.101-198.51.100.254")
        #expect(derived("198.51.100.0/24", "198.51.100.254") == "198.51.100.10-198.51.100.253")
        #expect(derived("198.51.100.0/30", "198.51.100.2") == "198.51.100.1-198.51.100.1")
        #expect(derived("198.51.100.0/31", "198.51.100.1") == nil)
    }

    @Test("no gateway of a /24 to a /30 gets a derived range holding the network, broadcast or gateway address")
    func derivedNeverHoldsReservedAddresses() throws {
        for length in 24...30 {
            let subnet = IPv4Subnet("198.51.100.0/\(length)")!
            for value in (subnet.first.value + 1)..<subnet.last.value {
                let gateway = IPv4Address(value: value)
                let range = try #require(DHCPRange.derived(subnet: subnet, gateway: gateway), "\(subnet) \(gateway)")
                #expect(DHCPRange.problem(subnet: subnet, gateway: gateway, first: range.first, last: range.last) == nil,
                        "\(subnet) gateway \(gateway): \(range.first)-\(range.last)")
            }
        }
    }

    @Test("an explicit range holding the network, broadcast or gateway address is an error")
    func explicitRangeProblems() throws {
        let subnet = IPv4Subnet("198.51.100.0/29")!
        let gateway = IPv4Address("198.51.100.6")!
        func problem(_ first: String, _ last: String) -> String? {
            DHCPRange.problem(subnet: subnet, gateway: gateway, first: IPv4Address(first)!, last: IPv4Address(last)!)
        }
        #expect(problem("198.51.100.1", "198.51.100.5") == nil)
        #expect(problem("198.51.100.0", "198.51.100.5") == "the range 198.51.100.0-198.51.100.5 contains the network address 198.51.100.0; expected host addresses only")
        #expect(problem("198.51.100.6", "198.51.100.7") == "the range 198.51.100.6-198.51.100.7 contains the broadcast address 198.51.100.7; expected host addresses only")
        #expect(problem("198.51.100.2", "198.51.100.6") == "the range 198.51.100.2-198.51.100.6 contains the gateway address 198.51.100.6; expected a range without it")
        #expect(problem("198.51.100.5", "198.51.100.2") == "expected first <= last, found 198.51.100.5 > 198.51.100.2")
        #expect(problem("198.51.100.1", "198.51.100.9") == "198.51.100.9 is outside the subnet 198.51.100.0/29")
        // The parser rejects such a range with the field's position.
        #expect(throws: TopologyError.self) { try topology(subnet: "198.51.100.0/29", address: "198.51.100.6", range: "[198.51.100.2, 198.51.100.6]") }
    }
}
