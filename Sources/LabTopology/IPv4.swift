/// A small IPv4 value type for topology arithmetic (subnets, ranges, overlap checks).
public struct IPv4Address: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var value: UInt32

    public init(value: UInt32) { self.value = value }

    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), let byte = UInt8(part) else { return nil }
            value = value << 8 | UInt32(byte)
        }
        self.value = value
    }

    public var description: String {
        "\(value >> 24).\(value >> 16 & 0xff).\(value >> 8 & 0xff).\(value & 0xff)"
    }

    public static func < (lhs: IPv4Address, rhs: IPv4Address) -> Bool { lhs.value < rhs.value }
}

public struct IPv4Subnet: Sendable, Hashable, CustomStringConvertible {
    public var network: IPv4Address
    public var length: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let address = IPv4Address(String(parts[0])),
              let length = Int(parts[1]), (0...32).contains(length) else { return nil }
        self.length = length
        self.network = IPv4Address(value: address.value & IPv4Subnet.mask(length))
    }

    public init(network: IPv4Address, length: Int) {
        self.length = length
        self.network = IPv4Address(value: network.value & IPv4Subnet.mask(length))
    }

    static func mask(_ length: Int) -> UInt32 { length == 0 ? 0 : UInt32.max << UInt32(32 - length) }

    public var mask: UInt32 { IPv4Subnet.mask(length) }
    public var first: IPv4Address { network }
    public var last: IPv4Address { IPv4Address(value: network.value | ~mask) }
    public var netmask: IPv4Address { IPv4Address(value: mask) }

    public func contains(_ address: IPv4Address) -> Bool { address.value & mask == network.value }

    public func overlaps(_ other: IPv4Subnet) -> Bool {
        contains(other.network) || other.contains(network)
    }

    public func contains(_ other: IPv4Subnet) -> Bool {
        other.length >= length && contains(other.network)
    }

    public var description: String { "\(network)/\(length)" }

    /// The address ranges a lab may use (RFC 5737 documentation nets, RFC 2544 benchmark net).
    public static let labRanges: [IPv4Subnet] = [
        IPv4Subnet("192.0.2.0/24")!, IPv4Subnet("198.51.100.0/24")!,
        IPv4Subnet("203.0.113.0/24")!, IPv4Subnet("198.18.0.0/15")!,
    ]

    public static func isLabAddress(_ address: IPv4Address) -> Bool {
        labRanges.contains { $0.contains(address) }
    }

    public static func isLabSubnet(_ subnet: IPv4Subnet) -> Bool {
        labRanges.contains { $0.contains(subnet) }
    }
}

/// A MAC address as written in a topology (validated, lower-cased `aa:bb:cc:dd:ee:ff`).
public struct MACAddressText: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    public init?(_ raw: String) {
        let parts = raw.lowercased().split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }) else { return nil }
        text = parts.joined(separator: ":")
    }
    public var description: String { text }
    /// Multicast bit set (not usable as a BSSID).
    public var isMulticast: Bool { (UInt8(text.prefix(2), radix: 16)! & 1) != 0 }
}
