import HotspotSystem
import Netlink
import Testing

/// Golden bytes of hotspot-ra's Router Advertisement (no socket): each field checked against RFC 4861 4.2 and
/// 4.6.2 (header, Prefix Information), RFC 8106 5.1 (RDNSS) and RFC 8910 2.3 (Captive-Portal option 37).
@Suite("Router Advertisement encoder (golden bytes)")
struct RouterAdvertisementTests {
    static let prefix = IPAddress("2001:db8:1::")!.bytes
    static let dns = IPAddress("2001:db8:1::1")!.bytes

    @Test func headerPrefixRDNSSAndCaptivePortal() {
        let ra = RouterAdvertisement(prefix: Self.prefix, prefixLength: 64, dnsServers: [Self.dns], captivePortal: "http://a/")
        let header: [UInt8] = [134, 0, 0, 0, 64, 0xC0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0]  // M and O, lifetime 1800
        let pio: [UInt8] = [3, 4, 64, 0xC0, 0x00, 0x01, 0x51, 0x80, 0x00, 0x00, 0x38, 0x40, 0, 0, 0, 0] + Self.prefix  // L, A; 86400, 14400
        let rdnss: [UInt8] = [25, 3, 0, 0, 0x00, 0x00, 0x07, 0x08] + Self.dns
        // "http://a/" is 9 bytes: with the 2-byte header 11, NUL-padded to 16 (length 2 in 8-byte units).
        let captive: [UInt8] = [37, 2] + Array("http://a/".utf8) + [0, 0, 0, 0, 0]
        #expect(ra.bytes == header + pio + rdnss + captive)
    }

    @Test func optionLengthsAreWholeEightByteUnits() {
        for count in 0...40 {
            let uri = "http://" + String(repeating: "x", count: count)
            let bytes = RouterAdvertisement(prefix: Self.prefix, prefixLength: 64, captivePortal: uri).bytes
            let option = Array(bytes[(16 + 32)...])
            #expect(option[0] == 37)
            #expect(Int(option[1]) * 8 == option.count, "uri of \(uri.utf8.count) bytes")
            #expect(Array(option[2..<(2 + uri.utf8.count)]) == Array(uri.utf8))
            #expect(option[(2 + uri.utf8.count)...].allSatisfy { $0 == 0 })
        }
    }

    @Test func statelessWithoutOptions() {
        let ra = RouterAdvertisement(prefix: Self.prefix, prefixLength: 64, managed: false, other: false)
        #expect(ra.bytes.count == 16 + 32)
        #expect(ra.bytes[5] == 0)
    }

    @Test("a station reads what it receives: router lifetime, RDNSS servers and option 37 of the encoder's bytes; unknown options skipped")
    func receivedParsesTheEncodersBytes() throws {
        let ra = RouterAdvertisement(prefix: Self.prefix, prefixLength: 64, dnsServers: [Self.dns, IPAddress("2001:db8:ffff::53")!.bytes],
                                     captivePortal: "http://[2001:db8:1::1]:8080/captive-api")
        let received = try #require(RouterAdvertisement.Received.parse(ra.bytes))
        #expect(received.routerLifetime == 1800)
        #expect(received.dnsServers == ["2001:db8:1::1", "2001:db8:ffff::53"])
        #expect(received.captivePortal == "http://[2001:db8:1::1]:8080/captive-api")
        // An option the station does not know (type 31, DNS search list) is skipped; without 37 and 25, nothing.
        let plain = RouterAdvertisement(prefix: Self.prefix, prefixLength: 64).bytes + [31, 1, 0, 0, 0, 0, 0, 0]
        #expect(RouterAdvertisement.Received.parse(plain) == RouterAdvertisement.Received(routerLifetime: 1800))
    }

    @Test("malformed: not an RA, a zero option length, an option past the end: nil (RFC 4861 4.6)")
    func receivedRefusesMalformed() {
        let bytes = RouterAdvertisement(prefix: Self.prefix, prefixLength: 64, captivePortal: "http://a/").bytes
        #expect(RouterAdvertisement.Received.parse([133] + bytes.dropFirst()) == nil)
        #expect(RouterAdvertisement.Received.parse(Array(bytes.prefix(10))) == nil)
        #expect(RouterAdvertisement.Received.parse(bytes + [25, 0]) == nil)
        #expect(RouterAdvertisement.Received.parse(Array(bytes.dropLast(3))) == nil)
    }
}
