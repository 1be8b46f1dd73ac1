import HotspotProtocol
import Netlink
import Testing
@testable import HotspotStation

/// The lease file udhcpc's script writes, read back as what hotspotd configures over netlink.
@Suite("DHCP lease file")
struct DHCPLeaseTests {
    @Test("busybox's lease: the prefix length from mask, the first router, the other fields kept")
    func busyboxLease() throws {
        let text = "ip=192.0.2.57\nsubnet=255.255.255.0\nmask=24\nrouter=192.0.2.1 192.0.2.2\ndns=192.0.2.1\nlease=3600\nserverid=192.0.2.1\nopt114=68747470\n"
        let fields = DHCPLease.fields(text)
        #expect(fields["opt114"] == "68747470")
        #expect(fields["dns"] == "192.0.2.1")
        let lease = try DHCPLease(fields: fields, file: "lease.env")
        #expect(lease.address == IPPrefix(try #require(IPAddress("192.0.2.57")), length: 24))
        #expect(lease.router == IPAddress("192.0.2.1"))
    }

    @Test("one reader for hotspotd and the SDK: trimmed lines, comments and blank lines skipped, value after the first =, last wins")
    func oneReaderForBothSides() {
        let text = "# written by the DHCP script\n\n  ip=192.0.2.57 \r\nvendor=a=b\nnot a field\ndns=192.0.2.1\ndns=192.0.2.2\n"
        let expected = ["ip": "192.0.2.57", "vendor": "a=b", "dns": "192.0.2.2"]
        #expect(DHCPLeaseFile.fields(text) == expected)
        #expect(DHCPLease.fields(text) == expected)
    }

    @Test("the prefix from a dotted subnet when mask is absent; no router is no default route")
    func subnetOnly() throws {
        let lease = try DHCPLease(fields: ["ip": "198.51.100.9", "subnet": "255.255.252.0", "router": ""], file: "f")
        #expect(lease.address.length == 22)
        #expect(lease.router == nil)
        #expect(DHCPLease.prefixLength(dotted: "255.255.255.255") == 32)
        #expect(DHCPLease.prefixLength(dotted: "0.0.0.0") == 0)
        #expect(DHCPLease.prefixLength(dotted: "255.0.255.0") == nil)
        #expect(DHCPLease.prefixLength(dotted: "255.255.255") == nil)
    }

    @Test("a lease without an IPv4 address, with a bad mask or a bad router is an error naming the file and field")
    func errors() {
        for (fields, field) in [([String: String](), "ip="), (["ip": "2001:db8::1"], "ip="), (["ip": "192.0.2.5", "mask": "33"], "mask=33"),
                                (["ip": "192.0.2.5", "subnet": "255.0.255.0"], "subnet="), (["ip": "192.0.2.5", "router": "gw"], "router=gw")] {
            do {
                _ = try DHCPLease(fields: fields, file: "/run/x/lease.env")
                Issue.record("accepted \(fields)")
            } catch {
                #expect("\(error)".contains("/run/x/lease.env"))
                #expect("\(error)".contains(field))
            }
        }
    }
}
