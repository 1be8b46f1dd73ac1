import Netlink
import Testing

/// Golden bytes of the encoded rtnetlink requests (no root, no socket). Each expected value was checked
/// field by field against linux/rtnetlink.h, if_link.h, if_addr.h, fib_rules.h and veth.h.
@Suite("rtnetlink encoders (golden bytes)")
struct GoldenMessageTests {
    @Test func vethWithPeerInNamespace() {
        let message = RouteMessages.newVeth("hslab0", peer: "hslab1", peerNamespaceFD: 7)
        // nlmsghdr: len 104, RTM_NEWLINK (16), REQUEST|EXCL|CREATE, seq 0, pid 0
        // ifinfomsg zero; IFLA_IFNAME "hslab0"; IFLA_LINKINFO(nested){ KIND "veth", DATA(nested){
        // VETH_INFO_PEER(nested){ ifinfomsg, IFLA_IFNAME "hslab1", IFLA_NET_NS_FD 7 } } }
        let expected = "68000000" + "1000" + "0106" + "00000000" + "00000000"
            + "00000000000000000000000000000000"
            + "0b000300" + "68736c6162300000"
            + "3c001280" + "09000100" + "7665746800000000"
            + "2c000280" + "28000180" + "00000000000000000000000000000000"
            + "0b000300" + "68736c6162310000"
            + "08001c00" + "07000000"
        #expect(message.hex == expected)
        #expect(message.type == RTM.newLink)
        #expect(message.bytes.count == 104)
    }

    @Test func ipv4Address() {
        let message = RouteMessages.newAddress(IPPrefix("192.0.2.1/24")!, index: 5)
        // RTM_NEWADDR (20); ifaddrmsg AF_INET(2) /24 flags 0 scope 0 index 5; IFA_LOCAL, IFA_ADDRESS 192.0.2.1
        let expected = "28000000" + "1400" + "0106" + "0000000000000000"
            + "02180000" + "05000000"
            + "08000200" + "c0000201"
            + "08000100" + "c0000201"
        #expect(message.hex == expected)
    }

    @Test func ipv6AddressSkipsDAD() {
        let message = RouteMessages.newAddress(IPPrefix("2001:db8::1/64")!, index: 5)
        // ifaddrmsg AF_INET6(10) /64 flags IFA_F_NODAD(2)
        let address = "20010db8000000000000000000000001"
        let expected = "40000000" + "1400" + "0106" + "0000000000000000"
            + "0a400200" + "05000000"
            + "14000200" + address
            + "14000100" + address
        #expect(message.hex == expected)
    }

    @Test func fwmarkRule() {
        let message = RouteMessages.newRule(RoutingRule(priority: 100, fwmark: 0x1, fwmask: 0xff, table: 100))
        // RTM_NEWRULE (32); fib_rule_hdr AF_INET, table 100, action FR_ACT_TO_TBL(1);
        // FRA_TABLE 100, FRA_PRIORITY 100, FRA_FWMARK 1, FRA_FWMASK 0xff
        let expected = "3c000000" + "2000" + "0106" + "0000000000000000"
            + "02000000" + "64000001" + "00000000"
            + "08000f00" + "64000000"
            + "08000600" + "64000000"
            + "08000a00" + "01000000"
            + "08001000" + "ff000000"
        #expect(message.hex == expected)
    }

    @Test func defaultRouteInTable() {
        let message = RouteMessages.newRoute(Route(gateway: IPAddress("198.51.100.1"), table: 100))
        // RTM_NEWROUTE (24); rtmsg AF_INET dst_len 0 table 100 proto static(4) scope universe type unicast;
        // RTA_TABLE 100, RTA_GATEWAY 198.51.100.1
        let expected = "2c000000" + "1800" + "0106" + "0000000000000000"
            + "02000000" + "64040001" + "00000000"
            + "08000f00" + "64000000"
            + "08000500" + "c6336401"
        #expect(message.hex == expected)
    }

    @Test func linkUpByName() {
        let message = RouteMessages.setLink("lo", up: true)
        // RTM_NEWLINK, REQUEST only; ifinfomsg flags IFF_UP change IFF_UP; IFLA_IFNAME "lo"
        let expected = "28000000" + "1000" + "0100" + "0000000000000000"
            + "00000000" + "00000000" + "01000000" + "01000000"
            + "07000300" + "6c6f0000"
        #expect(message.hex == expected)
    }

    @Test func deleteLinkAndMove() {
        #expect(RouteMessages.deleteLink("hsl1").hex
            == "2c000000" + "1100" + "0100" + "0000000000000000" + "00000000000000000000000000000000"
            + "09000300" + "68736c3100000000")
        let move = RouteMessages.setLink("hsl1", namespaceFD: 9)
        #expect(move.hex.hasSuffix("08001c00" + "09000000"))
    }

    @Test func prefixParsingAndNetwork() throws {
        #expect(IPPrefix("198.51.100.77/24")?.network.description == "198.51.100.0")
        #expect(IPPrefix("2001:db8:1:2::5/48")?.network.description == "2001:db8:1::")
        #expect(IPPrefix("192.0.2.1/33") == nil)
        #expect(IPPrefix("not-an-address") == nil)
        #expect(throws: (any Error).self) { try IPPrefix.parse("192.0.2.300/24", field: "lab.address") }
        do {
            _ = try IPPrefix.parse("192.0.2.300/24", field: "lab.address")
        } catch {
            #expect("\(error)".hasPrefix("parse lab.address '192.0.2.300/24': expected an IPv4 or IPv6 address"))
        }
        #expect(MACAddress("02:00:00:00:01:0a")?.bytes == [2, 0, 0, 0, 1, 10])
        #expect(MACAddress.local(0xabcdef, 3).description == "02:ab:cd:ef:00:03")
    }

    @Test func attributeParserReadsNested() {
        let message = RouteMessages.newVeth("a", peer: "b")
        let attributes = NetlinkAttributes(message.bytes, offset: 32)
        #expect(attributes.string(3) == "a")
        #expect(attributes.nested(18)?.string(1) == "veth")
    }
}
