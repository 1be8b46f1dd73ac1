import HotspotSystem
import Testing
@testable import HotspotStation

/// The station's DHCPv4 client without a network: the wire format against bytes computed independently (RFC 2131,
/// 2132, 791, 768), and the exchange against a scripted server on a virtual clock. `DHCPClientRootTests` runs it
/// against dnsmasq on a veth; every scenario of both tiers takes its leases through it.
@Suite("DHCP client (wire format, exchange on a virtual clock)")
struct DHCPClientTests {
    static let mac: [UInt8] = [0x02, 0, 0, 0, 0, 0x2a]
    static let xid: UInt32 = 0x1234_5678
    static let server: [UInt8] = [198, 51, 100, 1]
    static let offered: [UInt8] = [198, 51, 100, 57]

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }

    @Test("DHCPDISCOVER: BOOTP fields, no broadcast flag (replies unicast to chaddr), the cookie, type 1, the parameter list, END, padded to 300 bytes")
    func discoverBytes() {
        let bytes = DHCPMessage.discover(xid: Self.xid, hardwareAddress: Self.mac).bytes
        #expect(bytes.count == 300)
        #expect(Self.hex(bytes[0..<12]) == "010106001234567800000000")
        #expect(bytes[12..<28].allSatisfy { $0 == 0 }, "ciaddr, yiaddr, siaddr, giaddr are 0")
        #expect(Self.hex(bytes[28..<44]) == "02000000002a" + String(repeating: "00", count: 10))
        #expect(bytes[44..<236].allSatisfy { $0 == 0 }, "sname and file are empty")
        #expect(Self.hex(bytes[236..<253]) == "63825363" + "350101" + "3707" + "0103061c333672" + "ff")
        #expect(bytes[253...].allSatisfy { $0 == 0 })
    }

    @Test("the IPv4 and UDP headers of a client broadcast match the independently computed ones (both checksums)")
    func frameBytes() throws {
        let payload = DHCPMessage.discover(xid: Self.xid, hardwareAddress: Self.mac).bytes
        let frame = IPv4UDP.broadcastFromClient(payload)
        #expect(frame.count == 20 + 8 + 300)
        // Computed with a separate implementation (Python's struct) of RFC 791's header and RFC 768's pseudo-header sum.
        #expect(Self.hex(frame[0..<20]) == "45100148000000004011799600000000ffffffff")
        #expect(Self.hex(frame[20..<28]) == "004400430134425d")
        #expect(IPv4UDP.checksum(Array(frame[0..<20])) == 0, "a header with its checksum sums to 0")
        // A packet as the server would see it, sent back to port 67 instead: payload(of:) reads by port.
        #expect(IPv4UDP.payload(of: frame, toPort: 67) == payload)
        #expect(IPv4UDP.payload(of: frame, toPort: 68) == nil)
    }

    @Test("payload(of:) skips what is not a whole UDP datagram to the port: truncated, fragment, bad header sum, not UDP")
    func payloadRejects() {
        let frame = Self.reply(.offer)
        #expect(IPv4UDP.payload(of: frame) != nil)
        #expect(IPv4UDP.payload(of: Array(frame.prefix(40))) == nil, "shorter than its total length")
        var fragment = frame
        fragment[6] = 0x20  // more fragments
        #expect(IPv4UDP.payload(of: fragment) == nil)
        var badSum = frame
        badSum[10] ^= 0xFF
        #expect(IPv4UDP.payload(of: badSum) == nil)
        var tcp = frame
        tcp[9] = 6
        #expect(IPv4UDP.payload(of: tcp) == nil)
        #expect(IPv4UDP.payload(of: [0x60] + Array(frame.dropFirst())) == nil, "IPv6's version nibble")
    }

    @Test("parse: a long option split in two is joined (RFC 3396), PAD skipped, an option past the end is no message")
    func parseOptions() throws {
        var bytes = DHCPMessage(op: 2, xid: Self.xid, chaddr: Self.mac).bytes
        let uri = Array("http://198.51.100.1/captive-api".utf8)
        let options: [UInt8] = [0, 0, 53, 1, 5, 114, 10] + uri[0..<10] + [114, UInt8(uri.count - 10)] + uri[10...] + [255]
        bytes.replaceSubrange(240..<(240 + options.count), with: options)
        let message = try #require(DHCPMessage.parse(bytes))
        #expect(message.kind == .ack)
        #expect(message.option(114) == uri)
        #expect(message.xid == Self.xid && message.chaddr == Self.mac && message.op == 2)
        var broken = Array(bytes.prefix(240)) + [53, 1, 5, 114, 40] + uri[0..<5]
        #expect(DHCPMessage.parse(broken) == nil)
        broken = Array(bytes.prefix(236)) + [1, 2, 3, 4]
        #expect(DHCPMessage.parse(broken) == nil, "no magic cookie")
        #expect(DHCPMessage.parse(DHCPMessage.discover(xid: 7, hardwareAddress: Self.mac).bytes) == DHCPMessage.discover(xid: 7, hardwareAddress: Self.mac))
    }

    @Test("the lease's fields as udhcpc named them: ip, subnet, mask, router and dns lists, broadcast, lease, serverid, opt114 in hex")
    func leaseFields() {
        var ack = Self.message(.ack)
        ack.options += [(3, [198, 51, 100, 1, 198, 51, 100, 2]), (6, [198, 51, 100, 1, 192, 0, 2, 53]), (28, [198, 51, 100, 255]),
                        (114, Array("http://x/".utf8))]
        #expect(ack.leaseFields == [
            "ip": "198.51.100.57", "subnet": "255.255.255.0", "mask": "24", "router": "198.51.100.1 198.51.100.2",
            "dns": "198.51.100.1 192.0.2.53", "broadcast": "198.51.100.255", "lease": "3600", "serverid": "198.51.100.1",
            "opt114": "687474703a2f2f782f",
        ])
        var holes = Self.message(.ack)
        holes.options = [(1, [255, 0, 255, 0])]
        #expect(holes.leaseFields == ["ip": "198.51.100.57", "subnet": "255.0.255.0"], "a mask with holes has no prefix length")
    }

    // MARK: the exchange

    /// A reply from the server: `kind` for this exchange, with the server identifier, a /24 mask and a lease time.
    static func message(_ kind: DHCPMessage.Kind, xid: UInt32 = xid, chaddr: [UInt8] = mac, serverID: Bool = true) -> DHCPMessage {
        var message = DHCPMessage(op: 2, xid: xid, flags: DHCPMessage.broadcastFlag, chaddr: chaddr, options: [(53, [kind.rawValue])])
        message.yiaddr = kind == .nak ? [0, 0, 0, 0] : offered
        if serverID { message.options.append((54, server)) }
        message.options += [(1, [255, 255, 255, 0]), (51, [0, 0, 0x0e, 0x10])]
        return message
    }

    /// `message` in an IPv4/UDP datagram from the server to 255.255.255.255:68.
    static func reply(_ kind: DHCPMessage.Kind) -> [UInt8] { frame(message(kind)) }
    static func frame(_ message: DHCPMessage, toPort port: UInt16 = 68) -> [UInt8] {
        let payload = message.bytes
        let udpLength = UInt16(8 + payload.count)
        let udp = DHCPMessage.be(UInt16(67)) + DHCPMessage.be(port) + DHCPMessage.be(udpLength) + [0, 0] + payload
        var ip: [UInt8] = [0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0] + server + [255, 255, 255, 255]
        ip[2] = UInt8((20 + udp.count) >> 8)
        ip[3] = UInt8((20 + udp.count) & 0xFF)
        let sum = IPv4UDP.checksum(ip)
        ip[10] = UInt8(sum >> 8)
        ip[11] = UInt8(sum & 0xFF)
        return ip + udp
    }

    /// A link with a scripted server: each sent datagram is decoded and `answer` gives the datagrams that come back.
    /// Waiting for nothing moves the virtual clock by the whole timeout, so the exchange's own deadlines are what ends it.
    final class ScriptedLink: DHCPTransport {
        let clock = ManualClock()
        let hardwareAddress = DHCPClientTests.mac
        var sent: [DHCPMessage] = []
        var queue: [[UInt8]] = []
        let answer: (DHCPMessage, Int) -> [[UInt8]]

        init(answer: @escaping (DHCPMessage, Int) -> [[UInt8]]) { self.answer = answer }

        func sendBroadcast(_ packet: [UInt8]) throws {
            let message = try #require(IPv4UDP.payload(of: packet, toPort: 67).flatMap(DHCPMessage.parse))
            sent.append(message)
            queue += answer(message, sent.count)
        }

        func receive(timeoutMilliseconds: Int32) throws -> [UInt8]? {
            if !queue.isEmpty { return queue.removeFirst() }
            clock.advance(by: .milliseconds(Int(timeoutMilliseconds)))
            return nil
        }
    }

    static func client(_ link: ScriptedLink, cancelled: @escaping () -> Bool = { false }, log: @escaping (String) -> Void = { _ in }) -> DHCPClient {
        DHCPClient(interface: "wlan0", transport: link, xid: xid, clock: link.clock, isCancelled: cancelled, log: log)
    }

    @Test("DISCOVER, OFFER, REQUEST for the offered address from the offering server, ACK: the lease, at once")
    func exchange() throws {
        let link = ScriptedLink { message, _ in
            message.kind == .discover ? [DHCPClientTests.reply(.offer)] : [DHCPClientTests.reply(.ack)]
        }
        var lines: [String] = []
        let ack = try Self.client(link, log: { lines.append($0) }).run()
        #expect(ack.kind == .ack && ack.leaseFields["ip"] == "198.51.100.57")
        #expect(link.sent.map(\.kind) == [.discover, .request])
        let request = link.sent[1]
        #expect(request.option(50) == Self.offered && request.option(54) == Self.server && request.xid == Self.xid)
        #expect(request.flags == 0 && request.chaddr == Self.mac)
        #expect(link.clock.now() == .zero, "no wait when the server answers")
        #expect(lines == ["broadcasting discover", "broadcasting select for 198.51.100.57, server 198.51.100.1",
                          "lease of 198.51.100.57 obtained from 198.51.100.1, lease time 3600"])
    }

    @Test("a silent link: five discovers one second apart, then noLease (what makes IP up an IPv6-only network's)")
    func silentLink() {
        let link = ScriptedLink { _, _ in [] }
        #expect(throws: DHCPClientError.noLease(interface: "wlan0", attempts: 5, interval: .seconds(1), offered: false)) { try Self.client(link).run() }
        #expect(link.sent.map(\.kind) == Array(repeating: .discover, count: 5))
        #expect(link.clock.now() == .seconds(5))
    }

    @Test("replies of other exchanges, other clients, our own echo, non-DHCP and an offer without a server ID are skipped")
    func skipsForeignReplies() throws {
        var echo = DHCPClientTests.message(.offer)
        echo.op = 1
        let noise: [[UInt8]] = [
            Self.frame(Self.message(.offer, xid: 99)), Self.frame(Self.message(.offer, chaddr: [2, 0, 0, 0, 0, 1])),
            Self.frame(echo), Self.frame(Self.message(.offer), toPort: 69), [0x45, 0, 0],
        ]
        let link = ScriptedLink { message, count in
            switch count {
            case 1: return noise + [DHCPClientTests.frame(DHCPClientTests.message(.offer, serverID: false))]
            default: return message.kind == .discover ? [DHCPClientTests.reply(.offer)] : noise + [DHCPClientTests.reply(.ack)]
            }
        }
        let ack = try Self.client(link).run()
        #expect(ack.leaseFields["ip"] == "198.51.100.57")
        // The first offer had no server identifier: ignored, so the next discover came one interval later.
        #expect(link.sent.map(\.kind) == [.discover, .discover, .request])
        #expect(link.clock.now() == .seconds(1))
    }

    @Test("a DHCPNAK starts over with a discover; the next offer's ACK is the lease")
    func nakStartsOver() throws {
        let link = ScriptedLink { message, count in
            if message.kind == .discover { return [DHCPClientTests.reply(.offer)] }
            return [DHCPClientTests.reply(count == 2 ? .nak : .ack)]
        }
        var lines: [String] = []
        _ = try Self.client(link, log: { lines.append($0) }).run()
        #expect(link.sent.map(\.kind) == [.discover, .request, .discover, .request])
        #expect(lines.contains("received NAK"))
        #expect(link.clock.now() == .zero)
    }

    @Test("a REQUEST not answered at once is sent again an interval later, as udhcpc does (three times at most)")
    func unansweredRequest() throws {
        let link = ScriptedLink { message, count in
            if message.kind == .discover { return [DHCPClientTests.reply(.offer)] }
            return count == 2 ? [] : [DHCPClientTests.reply(.ack)]
        }
        _ = try Self.client(link).run()
        #expect(link.sent.map(\.kind) == [.discover, .request, .request])
        #expect(link.clock.now() == .seconds(1))
    }

    @Test("an ACK that comes after the third request's interval, while the next discover waits, is the lease")
    func lateAck() throws {
        let link = ScriptedLink { message, count in
            switch (message.kind, count) {
            case (.discover, 1): return [DHCPClientTests.reply(.offer)]
            case (.discover, _): return [DHCPClientTests.reply(.ack)]
            default: return []
            }
        }
        let ack = try Self.client(link).run()
        #expect(ack.kind == .ack)
        #expect(link.sent.map(\.kind) == [.discover, .request, .request, .request, .discover])
        #expect(link.clock.now() == .seconds(3))
    }

    @Test("a server that offers and never acknowledges: five offers, three requests each, then noLease naming the offers")
    func offersWithoutAck() {
        let link = ScriptedLink { message, _ in message.kind == .discover ? [DHCPClientTests.reply(.offer)] : [] }
        #expect(throws: DHCPClientError.noLease(interface: "wlan0", attempts: 5, interval: .seconds(1), offered: true)) { try Self.client(link).run() }
        #expect(link.sent.count == 5 * 4)
        #expect(link.clock.now() == .seconds(15))
        #expect("\(DHCPClientError.noLease(interface: "wlan0", attempts: 5, interval: .seconds(1), offered: true))".contains("offers came, but no DHCPACK"))
    }

    @Test("cancelled (the station left): the exchange ends with cancelled, whatever the link does")
    func cancelled() {
        let link = ScriptedLink { _, _ in [] }
        var polls = 0
        let client = Self.client(link, cancelled: { polls += 1; return polls > 3 })
        #expect(throws: DHCPClientError.cancelled(interface: "wlan0")) { try client.run() }
        #expect(link.sent.count == 1)
    }
}
