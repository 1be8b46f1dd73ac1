import Netlink

/// A DHCPv4 message (RFC 2131 section 2, options RFC 2132) as the station's client sends and reads it. Pure: bytes in,
/// bytes out; `DHCPClient` runs the exchange and `IPv4PacketSocket` carries it.
public struct DHCPMessage: Equatable, Sendable {
    /// Option 53, the message type (RFC 2132 9.6).
    public enum Kind: UInt8, Sendable {
        case discover = 1, offer, request, decline, ack, nak, release, inform
    }

    public enum Option {
        public static let subnetMask: UInt8 = 1
        public static let router: UInt8 = 3
        public static let dnsServers: UInt8 = 6
        public static let broadcast: UInt8 = 28
        public static let requestedAddress: UInt8 = 50
        public static let leaseTime: UInt8 = 51
        public static let messageType: UInt8 = 53
        public static let serverIdentifier: UInt8 = 54
        public static let parameterRequestList: UInt8 = 55
        public static let message: UInt8 = 56
        /// RFC 8910: the captive portal API's URI.
        public static let captivePortal: UInt8 = 114
        public static let pad: UInt8 = 0
        public static let end: UInt8 = 255
    }

    /// BOOTREQUEST (1, client to server) or BOOTREPLY (2).
    public var op: UInt8
    public var xid: UInt32
    public var secs: UInt16 = 0
    /// 0x8000 (`broadcastFlag`): the server must broadcast its reply. The station's client leaves it clear.
    public var flags: UInt16 = 0
    public var ciaddr: [UInt8] = [0, 0, 0, 0]
    public var yiaddr: [UInt8] = [0, 0, 0, 0]
    public var siaddr: [UInt8] = [0, 0, 0, 0]
    public var giaddr: [UInt8] = [0, 0, 0, 0]
    /// The client's hardware address (6 bytes for Ethernet).
    public var chaddr: [UInt8]
    /// The options in the order they are sent (a code appears once: a long value is split only on the wire).
    public var options: [(code: UInt8, value: [UInt8])]

    public static let magicCookie: [UInt8] = [99, 130, 83, 99]
    public static let broadcastFlag: UInt16 = 0x8000
    static let fixedLength = 236

    public init(op: UInt8, xid: UInt32, flags: UInt16 = 0, chaddr: [UInt8], options: [(code: UInt8, value: [UInt8])] = []) {
        self.op = op
        self.xid = xid
        self.flags = flags
        self.chaddr = chaddr
        self.options = options
    }

    public static func == (a: DHCPMessage, b: DHCPMessage) -> Bool {
        a.op == b.op && a.xid == b.xid && a.secs == b.secs && a.flags == b.flags && a.ciaddr == b.ciaddr && a.yiaddr == b.yiaddr
            && a.siaddr == b.siaddr && a.giaddr == b.giaddr && a.chaddr == b.chaddr
            && a.options.map(\.code) == b.options.map(\.code) && a.options.map(\.value) == b.options.map(\.value)
    }

    public var kind: Kind? { option(Option.messageType).flatMap { $0.count == 1 ? Kind(rawValue: $0[0]) : nil } }

    /// The value of option `code`, nil when absent.
    public func option(_ code: UInt8) -> [UInt8]? { options.first { $0.code == code }?.value }

    /// The options the station asks for (option 55): mask, router, DNS, broadcast, lease time, server, RFC 8910's URI.
    public static let requested: [UInt8] = [Option.subnetMask, Option.router, Option.dnsServers, Option.broadcast,
                                            Option.leaseTime, Option.serverIdentifier, Option.captivePortal]

    /// DHCPDISCOVER from a client with no address. Without the broadcast flag the server unicasts its reply to `chaddr`
    /// (RFC 2131 4.1), which a packet socket receives before the interface has an address.
    public static func discover(xid: UInt32, hardwareAddress: [UInt8]) -> DHCPMessage {
        DHCPMessage(op: 1, xid: xid, chaddr: hardwareAddress, options: [
            (Option.messageType, [Kind.discover.rawValue]), (Option.parameterRequestList, requested),
        ])
    }

    /// DHCPREQUEST in SELECTING state (RFC 2131 4.3.2): the offered address and the chosen server, sent to all.
    public static func request(xid: UInt32, hardwareAddress: [UInt8], address: [UInt8], server: [UInt8]) -> DHCPMessage {
        DHCPMessage(op: 1, xid: xid, chaddr: hardwareAddress, options: [
            (Option.messageType, [Kind.request.rawValue]), (Option.requestedAddress, address),
            (Option.serverIdentifier, server), (Option.parameterRequestList, requested),
        ])
    }

    /// The message as sent: the fixed BOOTP fields, the magic cookie, the options and END, padded to BOOTP's 300 bytes.
    public var bytes: [UInt8] {
        var out: [UInt8] = [op, 1, UInt8(chaddr.count), 0]
        out += Self.be(xid) + Self.be(secs) + Self.be(flags) + ciaddr + yiaddr + siaddr + giaddr
        out += Array((chaddr + [UInt8](repeating: 0, count: 16)).prefix(16))
        out += [UInt8](repeating: 0, count: 64 + 128)  // sname, file
        out += Self.magicCookie
        for (code, value) in options {
            var rest = value[...]
            repeat {  // RFC 3396: a value over 255 bytes goes as several options of the same code
                let chunk = rest.prefix(255)
                out += [code, UInt8(chunk.count)] + chunk
                rest = rest.dropFirst(chunk.count)
            } while !rest.isEmpty
        }
        out.append(Option.end)
        while out.count < 300 { out.append(Option.pad) }
        return out
    }

    /// A message read from a UDP payload; nil when it is not one (too short, no magic cookie, an option running past
    /// the end). Options of the same code are joined (RFC 3396); the `sname` and `file` fields are not read as options.
    public static func parse(_ bytes: [UInt8]) -> DHCPMessage? {
        guard bytes.count >= fixedLength + 4, Array(bytes[fixedLength..<(fixedLength + 4)]) == magicCookie else { return nil }
        let hlen = Int(min(bytes[2], 16))
        var message = DHCPMessage(op: bytes[0], xid: read32(bytes, 4), flags: UInt16(bytes[10]) << 8 | UInt16(bytes[11]),
                                  chaddr: Array(bytes[28..<(28 + hlen)]))
        message.secs = UInt16(bytes[8]) << 8 | UInt16(bytes[9])
        message.ciaddr = Array(bytes[12..<16])
        message.yiaddr = Array(bytes[16..<20])
        message.siaddr = Array(bytes[20..<24])
        message.giaddr = Array(bytes[24..<28])
        var at = fixedLength + 4
        while at < bytes.count {
            let code = bytes[at]
            if code == Option.end { break }
            if code == Option.pad { at += 1; continue }
            guard at + 1 < bytes.count, at + 2 + Int(bytes[at + 1]) <= bytes.count else { return nil }
            let value = Array(bytes[(at + 2)..<(at + 2 + Int(bytes[at + 1]))])
            if let index = message.options.firstIndex(where: { $0.code == code }) {
                message.options[index].value += value
            } else {
                message.options.append((code, value))
            }
            at += 2 + Int(bytes[at + 1])
        }
        return message
    }

    static func be<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
    static func read32(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3])
    }
    /// An IPv4 address's four bytes as text (Netlink's `IPAddress`).
    static func dotted(_ address: [UInt8]) -> String { IPAddress(bytes: address).map { "\($0)" } ?? "?" }
}

extension DHCPMessage {
    /// An acknowledged lease as the lease file's `key=value` fields, as busybox udhcpc exports them to its script (the
    /// names docs/STATION.md and the SDK's `HOTSPOT_DHCP_LEASE` use): `ip`, `subnet` (dotted), `mask` (prefix
    /// length), `router` and `dns` (space-separated), `broadcast`, `lease` (seconds), `serverid`, and `opt114` (the
    /// RFC 8910 URI, hex-encoded as udhcpc gives it). Fields the server did not send are absent.
    public var leaseFields: [String: String] {
        var fields = ["ip": Self.dotted(yiaddr)]
        func addresses(_ value: [UInt8]) -> String {
            stride(from: 0, to: value.count - value.count % 4, by: 4).map { Self.dotted(Array(value[$0..<($0 + 4)])) }.joined(separator: " ")
        }
        if let mask = option(Option.subnetMask), mask.count == 4 {
            fields["subnet"] = Self.dotted(mask)
            let value = Self.read32(mask, 0)
            if ~value & (~value &+ 1) == 0 { fields["mask"] = String(value.nonzeroBitCount) }  // contiguous ones only
        }
        if let routers = option(Option.router), routers.count >= 4 { fields["router"] = addresses(routers) }
        if let dns = option(Option.dnsServers), dns.count >= 4 { fields["dns"] = addresses(dns) }
        if let broadcast = option(Option.broadcast), broadcast.count == 4 { fields["broadcast"] = Self.dotted(broadcast) }
        if let lease = option(Option.leaseTime), lease.count == 4 { fields["lease"] = String(Self.read32(lease, 0)) }
        if let server = option(Option.serverIdentifier), server.count == 4 { fields["serverid"] = Self.dotted(server) }
        if let uri = option(Option.captivePortal), !uri.isEmpty {
            fields["opt114"] = uri.map(hexByte).joined()
        }
        return fields
    }
}

/// An IPv4 header and a UDP header around a DHCP payload, and the reverse (RFC 791, RFC 768). Pure.
public enum IPv4UDP {
    public static let clientPort: UInt16 = 68
    public static let serverPort: UInt16 = 67

    /// From 0.0.0.0:68 to 255.255.255.255:67, TTL 64, with both checksums: what a client with no address sends.
    public static func broadcastFromClient(_ payload: [UInt8]) -> [UInt8] {
        let source: [UInt8] = [0, 0, 0, 0], destination: [UInt8] = [255, 255, 255, 255]
        let udpLength = UInt16(8 + payload.count)
        var udp = DHCPMessage.be(clientPort) + DHCPMessage.be(serverPort) + DHCPMessage.be(udpLength) + [0, 0] + payload
        // The checksum covers a pseudo-header (addresses, protocol, UDP length); 0 is sent as 0xFFFF (RFC 768).
        var sum = checksum(source + destination + [0, 17] + DHCPMessage.be(udpLength) + udp)
        if sum == 0 { sum = 0xFFFF }
        udp[6] = UInt8(sum >> 8)
        udp[7] = UInt8(sum & 0xFF)
        var ip: [UInt8] = [0x45, 0x10] + DHCPMessage.be(UInt16(20 + udp.count)) + [0, 0, 0, 0, 64, 17, 0, 0] + source + destination
        let ipSum = checksum(ip)
        ip[10] = UInt8(ipSum >> 8)
        ip[11] = UInt8(ipSum & 0xFF)
        return ip + udp
    }

    /// The UDP payload of an IPv4 datagram to `port`; nil for anything else (not IPv4 or UDP, another port, a fragment,
    /// lengths that do not add up, a bad header checksum).
    public static func payload(of packet: [UInt8], toPort port: UInt16 = clientPort) -> [UInt8]? {
        guard packet.count >= 20, packet[0] >> 4 == 4, packet[9] == 17 else { return nil }
        let headerLength = Int(packet[0] & 0x0F) * 4
        let total = Int(packet[2]) << 8 | Int(packet[3])
        let fragment = (UInt16(packet[6]) << 8 | UInt16(packet[7])) & 0x3FFF  // more-fragments flag and offset
        guard headerLength >= 20, total >= headerLength + 8, total <= packet.count, fragment == 0,
              checksum(Array(packet[0..<headerLength])) == 0 else { return nil }
        let udp = Array(packet[headerLength..<total])
        let destination = UInt16(udp[2]) << 8 | UInt16(udp[3])
        let length = Int(udp[4]) << 8 | Int(udp[5])
        guard destination == port, length >= 8, length <= udp.count else { return nil }
        return Array(udp[8..<length])
    }

    /// The Internet checksum (RFC 1071): the ones' complement of the ones' complement sum of 16-bit words.
    public static func checksum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var i = 0
        while i + 1 < bytes.count {
            sum += UInt32(bytes[i]) << 8 | UInt32(bytes[i + 1])
            i += 2
        }
        if i < bytes.count { sum += UInt32(bytes[i]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }
}
