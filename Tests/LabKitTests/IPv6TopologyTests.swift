import Foundation
import Testing
@testable import LabKit
@testable import LabServices
@testable import LabTopology

/// `ip:` and `ipv6-prefix:` of a gateway (docs/TOPOLOGY.md "IPv6"), and what the hotspot's daemons get from them.
@Suite struct IPv6TopologyTests {
    static func yaml(_ lines: String) -> String {
        """
        name: t
        hotspots:
          - name: cafe
            ssid: Cafe
            bssid: "02:00:00:00:01:00"
            gateway:
              subnet: 198.51.100.0/24
              captive-api: auto
        \(lines)
              portal:
                kind: captive-api

        """
    }

    func failure(_ yaml: String) -> TopologyError? {
        do {
            _ = try TopologyParser.parse(yaml, file: "bad.yaml")
            return nil
        } catch let error as TopologyError {
            return error
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }

    @Test func familiesAndPrefixes() throws {
        let v4 = try TopologyParser.parse(Self.yaml(""), file: "t.yaml").hotspots[0].gateway
        #expect(v4.ip == .v4 && v4.ipv6 == nil && v4.portalURL == "http://198.51.100.1:8080/")
        let dual = try TopologyParser.parse(Self.yaml("      ip: dual"), file: "t.yaml").hotspots[0].gateway
        #expect(dual.ip == .dual && "\(dual.ipv6!.prefix)" == "2001:db8:c633:6400::/64")
        #expect(dual.captiveAPI == .uri("http://198.51.100.1:8080/captive-api"))
        let only = try TopologyParser.parse(Self.yaml("      ip: v6-only\n      ipv6-prefix: 2001:db8:42::/64"), file: "t.yaml").hotspots[0].gateway
        #expect(only.ip == .v6Only && "\(only.ipv6!.address)" == "2001:db8:42::1")
        #expect(only.captiveAPI == .uri("http://[2001:db8:42::1]:8080/captive-api"))
        #expect(only.portalURL == "http://[2001:db8:42::1]:8080/")
    }

    @Test func badSettingsNameFileLineColumn() throws {
        // (lines, message, line and column of the value at fault: `ip:` values start at column 11, prefixes at 20)
        let cases: [(String, String, Int, Int)] = [
            ("      ip: ipv6", "expected one of v4, dual, v6-only, found `ipv6`", 9, 11),
            ("      ip: dual\n      ipv6-prefix: 2001:db8:1::/48", "expected a /64", 10, 20),
            ("      ip: dual\n      ipv6-prefix: 2001:db9:1::/64", "inside the documentation range 2001:db8::/32", 10, 20),
            ("      ip: dual\n      ipv6-prefix: fd00::/64", "inside the documentation range 2001:db8::/32", 10, 20),
            ("      ip: dual\n      ipv6-prefix: 2001:db8:ffff::/64", "2001:db8:ff00::/40", 10, 20),
            ("      ip: dual\n      ipv6-prefix: 198.51.100.0/24", "expected an IPv6 prefix", 10, 20),
            ("      ipv6-prefix: 2001:db8:1::/64", "needs `ip: dual` or `ip: v6-only`", 9, 20),
        ]
        for (lines, message, line, column) in cases {
            let error = try #require(failure(Self.yaml(lines)), "accepted: \(lines)")
            #expect(error.message.contains(message), "\(lines): \(error)")
            #expect(error.description.hasPrefix("bad.yaml:\(line):\(column): hotspots[0].gateway."), "\(lines): \(error)")
        }
    }

    @Test func twoHotspotsWithOnePrefix() throws {
        let yaml = """
            name: t
            hotspots:
              - name: a
                ssid: A
                bssid: "02:00:00:00:01:00"
                gateway: {subnet: 198.51.100.0/24, ip: dual, ipv6-prefix: "2001:db8:7::/64"}
              - name: b
                ssid: B
                bssid: "02:00:00:00:02:00"
                gateway: {subnet: 192.0.2.0/24, ip: v6-only, ipv6-prefix: "2001:db8:7::/64"}

            """
        let error = try #require(failure(yaml))
        #expect(error.message.contains("IPv6 prefix 2001:db8:7::/64 is also hotspots[0]'s"), "\(error)")
        #expect(error.line == 10, "\(error)")
    }

    /// dnsmasq: DHCPv6 with DNS and option 103 on a LAN with IPv6; AAAA answers on dual; on v6-only no DHCPv4 and
    /// DNS on another port (unbound's DNS64 has 53).
    @Test func dnsmasqArguments() throws {
        let internet = Internet(address: IPv4Address("198.18.0.1")!, uplinks: IPv4Subnet("203.0.113.0/24")!, names: ["captive.apple.com"])
        func args(_ lines: String) throws -> [String] {
            let hotspot = try TopologyParser.parse(Self.yaml(lines), file: "t.yaml").hotspots[0]
            return DnsmasqConfig.arguments(hotspot, internet: internet, interface: "lan0", leaseFile: "/l", logFile: "/g")
        }
        let dual = try args("      ip: dual")
        #expect(dual.contains("--listen-address=2001:db8:c633:6400::1"))
        #expect(dual.contains("--dhcp-range=2001:db8:c633:6400::1000,2001:db8:c633:6400::1fff,64,3600"))
        #expect(dual.contains("--dhcp-option=option6:dns-server,[2001:db8:c633:6400::1]"))
        #expect(dual.contains("--dhcp-option=option6:103,http://198.51.100.1:8080/captive-api"))
        #expect(dual.contains("--dhcp-option=114,http://198.51.100.1:8080/captive-api"))
        #expect(dual.contains("--address=/captive.apple.com/2001:db8:ffff::1") && dual.contains("--address=/#/2001:db8:ffff::1"))
        #expect(!dual.contains { $0.hasPrefix("--port") })
        let only = try args("      ip: v6-only")
        #expect(!only.contains { $0.hasPrefix("--dhcp-range=198.51.100") || $0.hasPrefix("--dhcp-option=114") || $0.hasPrefix("--dhcp-option=option:") })
        #expect(!only.contains("--listen-address=2001:db8:c633:6400::1"))
        #expect(only.contains("--port=5353") && only.contains("--address=/ipv4only.arpa/192.0.0.170"))
        #expect(!only.contains { $0.contains("2001:db8:ffff::1") })
        #expect(only.contains("--dhcp-option=option6:103,http://[2001:db8:c633:6400::1]:8080/captive-api"))
        let v4 = try args("")
        #expect(!v4.contains { $0.contains("option6") || $0.contains("2001:db8") })
    }

    @Test func nat64Configuration() {
        #expect("\(NAT64Config.synthesize(IPv4Address("198.18.0.1")!))" == "2001:db8:ff64::c612:1")
        #expect(NAT64Config.tayga(tun: "t0", dataDirectory: "/d") == """
            # generated by hotspot-lab: NAT64 of an IPv6-only hotspot
            tun-device t0
            ipv4-addr 198.19.255.1
            ipv6-addr 2001:db8:ff65::1
            prefix 2001:db8:ff64::/96
            dynamic-pool 198.19.255.128/25
            data-dir /d

            """)
        let unbound = NAT64Config.unbound(listen: GatewayIPv6.derived(from: IPv4Subnet("198.51.100.0/24")!).address,
                                          forwardTo: IPv4Address("198.51.100.1")!, directory: "/d")
        #expect(unbound.contains("  interface: 2001:db8:c633:6400::1\n") && unbound.contains("  module-config: \"dns64 iterator\"\n"))
        #expect(unbound.contains("  dns64-prefix: 2001:db8:ff64::/96\n") && unbound.contains("  forward-addr: 198.51.100.1@5353\n"))
    }

    @Test func routerAdvertisementArguments() throws {
        let gateway = try TopologyParser.parse(Self.yaml("      ip: v6-only"), file: "t.yaml").hotspots[0].gateway
        #expect(RouterAdvertisementService.arguments(gateway, ipv6: gateway.ipv6!, interface: "lan0", readyFile: "/r") == [
            "--interface", "lan0", "--prefix", "2001:db8:c633:6400::/64", "--dns", "2001:db8:c633:6400::1", "--interval", "3",
            "--captive-portal", "http://[2001:db8:c633:6400::1]:8080/captive-api", "--ready-file", "/r",
        ])
    }
}
