import Foundation
@testable import HotspotHelper
import Testing

/// The SDK's IPv6 pieces without a network: AAAA queries and answers (RFC 3596), address literals of both
/// families, and NAT64 synthesis of IPv4 literals from RFC 7050's ipv4only.arpa answers.
@Suite struct IPv6TrafficTests {
    /// An answer to `query` with one record of `type` and `data`, the owner a pointer to the question's name.
    static func answer(_ query: [UInt8], type: UInt16, data: [UInt8]) -> [UInt8] {
        var bytes = query
        bytes[2] = 0x81; bytes[3] = 0x80  // response, recursion desired and available
        bytes[7] = 1                      // one answer
        bytes += [0xc0, 0x0c, UInt8(type >> 8), UInt8(type & 0xff), 0, 1, 0, 0, 0, 60, 0, UInt8(data.count)] + data
        return bytes
    }

    @Test func aaaaQueryAndAnswer() throws {
        let query = try HotspotDNS.query(id: 0x1234, name: "www.example.com", type: HotspotDNS.typeAAAA)
        #expect(Array(query.suffix(4)) == [0, 28, 0, 1])
        let v6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff] + Array(repeating: 0, count: 9) + [1]
        let reply = Self.answer(query, type: HotspotDNS.typeAAAA, data: v6)
        #expect(try HotspotDNS.addresses(inResponse: reply, id: 0x1234, name: "www.example.com", type: HotspotDNS.typeAAAA)
                == ["2001:db8:ffff::1"])
        // An A answer to an AAAA question is no AAAA record (and the A path is unchanged).
        let aReply = Self.answer(query, type: HotspotDNS.typeA, data: [198, 18, 0, 1])
        #expect(throws: HotspotTrafficError.self) {
            try HotspotDNS.addresses(inResponse: aReply, id: 0x1234, name: "www.example.com", type: HotspotDNS.typeAAAA)
        }
        #expect(try HotspotDNS.addresses(inResponse: aReply, id: 0x1234, name: "www.example.com") == ["198.18.0.1"])
    }

    @Test func literals() {
        #expect(IPLiteral("198.51.100.1")?.isIPv6 == false)
        #expect(IPLiteral("2001:db8::1")?.text == "2001:db8::1")
        #expect(IPLiteral("[2001:db8::1]")?.text == "2001:db8::1")
        #expect(IPLiteral("captive.apple.com") == nil && IPLiteral("2001:db8::zz") == nil)
    }

    /// Apple's documented behaviour: an IPv4 literal on an IPv6-only network is reached through the NAT64 prefix
    /// (RFC 7050 discovery, RFC 6052 /96 embedding).
    @Test func nat64Synthesis() throws {
        let prefix = try #require(NAT64Synthesis.prefix(fromIPv4OnlyAnswers: ["2001:db8:ff64::c000:aa"]))
        #expect(NAT64Synthesis.synthesize(IPLiteral("198.18.0.1")!, prefix: prefix).text == "2001:db8:ff64::c612:1")
        #expect(NAT64Synthesis.prefix(fromIPv4OnlyAnswers: ["2001:db8:ff64::c000:ab"]) == prefix)
        // An answer that is not a synthesized well-known address gives no prefix (no NAT64 here).
        #expect(NAT64Synthesis.prefix(fromIPv4OnlyAnswers: ["2001:db8:ffff::1", "198.18.0.1"]) == nil)
    }

    /// AI_ADDRCONFIG: without a global IPv6 address only A is asked (a resolver with no nameserver fails the same
    /// way either way; literals never ask).
    @Test func literalsSkipDNS() throws {
        var resolver = HotspotResolver(nameservers: [])
        resolver.hasGlobalIPv6 = { true }
        #expect(try resolver.resolveAll("2001:db8::1") == ["2001:db8::1"])
        #expect(try resolver.resolveAll("198.51.100.1") == ["198.51.100.1"])
        #expect(throws: HotspotTrafficError.self) { try resolver.resolveAll("captive.apple.com") }
    }
}
