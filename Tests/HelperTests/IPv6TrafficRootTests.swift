import Foundation
@testable import HotspotHelper
import HotspotSystem
import LabKit
import Netlink
import Testing
import TestSupport

/// The SDK's sockets on an IPv6-only hotspot of a real lab (host kernel, veth for the radio: hotspot-ra, dnsmasq,
/// unbound's DNS64, tayga's NAT64), from inside the station namespace: a name resolves to its DNS64 address and
/// connects over IPv6; an IPv4 literal connects through the NAT64 prefix, as on iOS. The control is the plain
/// socket a Linux program would open: an IPv4 connect there has no route (ENETUNREACH).
@Suite("SDK traffic on an IPv6-only hotspot (root, host kernel)", .serialized, .requiresRoot)
struct IPv6TrafficRootTests {
    @Test("root: v6-only: a name connects over IPv6 (DNS64), an IPv4 literal through NAT64; a plain IPv4 socket has no route")
    func nameAndLiteralOnIPv6Only() throws {
        let topology = try TopologyParser.parse("""
            name: t
            hotspots:
              - name: cafe
                ssid: Cafe
                bssid: "02:00:00:00:01:00"
                gateway:
                  subnet: 198.51.100.0/24
                  ip: v6-only

            """, file: "v6only.yaml")
        let lab = try RunningTopology.up(topology, options: RunningTopologyOptions(linkMode: .veth))
        defer { _ = lab.down() }
        let running = lab.hotspots[0]
        let station = try #require(running.stationNamespace)
        let gateway6 = "\(running.hotspot.gateway.ipv6!.address)"
        // The kernel's SLAAC from hotspot-ra's advertisements: a usable global address and a default route.
        let deadline = ContinuousClock.now + .seconds(120)  // a bound for a hang: DAD and the RA take 2-4 s
        var up = false
        while !up, ContinuousClock.now < deadline {
            let addresses = try station.route.addresses().filter { $0.prefix.address.isIPv6 && $0.isGlobal && !$0.isTentative }
            let routes = try station.route.routes(ipv6: true).filter { $0.isDefault && $0.table == 254 }
            up = !addresses.isEmpty && !routes.isEmpty
            if !up { Thread.sleep(forTimeInterval: 0.1) }
        }
        try #require(up, "no SLAAC address and default route in 20 s")
        let resolver = HotspotResolver(nameservers: [gateway6], mark: nil)
        let result = try station.runInside { () -> (String, String, Int32) in
            let byName = try HotspotTCPConnection.connect(host: "captive.apple.com", port: 80, timeout: .seconds(10), resolver: resolver)
            defer { byName.close() }
            let byLiteral = try HotspotTCPConnection.connect(host: "198.18.0.1", port: 80, timeout: .seconds(10), resolver: resolver)
            defer { byLiteral.close() }
            // The control: what a Linux program's own IPv4 socket does here.
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            let rc = IPLiteral("198.18.0.1")!.withSocketAddress(port: 80) { Glibc.connect(fd, $0, $1) }
            return (byName.address, byLiteral.address, rc == 0 ? 0 : errno)
        }
        #expect(result.0 == "2001:db8:ff64::c612:1", "captive.apple.com connected to \(result.0)")
        #expect(result.1 == "2001:db8:ff64::c612:1", "198.18.0.1 connected to \(result.1)")
        #expect(result.2 == ENETUNREACH, "a plain IPv4 connect: errno \(result.2)")
    }

    /// The resolver asks for AAAA records only where the calling thread's namespace has a usable global IPv6 address
    /// (/proc/thread-self/net/if_inet6). The lab's own requests from a station (`StationTraffic`) run on a thread that
    /// entered the station's namespace: /proc/net would describe this process's main namespace instead. Two
    /// namespaces, one with a global address and one without, give two answers whatever the host has.
    @Test("root: the AAAA decision reads the calling thread's namespace, not the process's")
    func globalIPv6OfTheThreadsNamespace() throws {
        let prefix = testPrefix("v")
        let namespaces = try NetworkNamespace.createMany([prefix + "a", prefix + "b"])
        defer { for ns in namespaces { try? ns.delete() } }
        try namespaces[0].route.addAddress(IPPrefix("2001:db8:77::1/64")!, to: "lo")
        let withAddress = try namespaces[0].runInside { HotspotResolver.systemHasGlobalIPv6() }
        let without = try namespaces[1].runInside { HotspotResolver.systemHasGlobalIPv6() }
        #expect(withAddress, "the namespace with 2001:db8:77::1")
        #expect(!without, "the namespace with only lo's ::1")
    }
}
