#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem

/// An IPv4 or IPv6 address.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 or 16 bytes, network order.
    public let bytes: [UInt8]

    public var isIPv6: Bool { bytes.count == 16 }
    /// AF_INET or AF_INET6.
    public var family: UInt8 { isIPv6 ? UInt8(AF_INET6) : UInt8(AF_INET) }

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses `192.0.2.1` or `2001:db8::1`.
    public init?(_ text: String) {
        if text.contains(":") {
            var address = in6_addr()
            guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
            bytes = withUnsafeBytes(of: &address) { Array($0) }
        } else {
            var address = in_addr()
            guard inet_pton(AF_INET, text, &address) == 1 else { return nil }
            bytes = withUnsafeBytes(of: &address) { Array($0) }
        }
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = isIPv6 ? AF_INET6 : AF_INET
        _ = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        let length = buffer.firstIndex(of: 0) ?? buffer.count
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An address with a prefix length: `192.0.2.1/24`, `2001:db8::1/64`.
public struct IPPrefix: Sendable, Hashable, CustomStringConvertible {
    public let address: IPAddress
    public let length: UInt8

    public init(_ address: IPAddress, length: UInt8) {
        self.address = address
        self.length = length
    }

    /// Parses `ADDR/LEN`; without `/LEN` the prefix is a host prefix (32 or 128).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let address = IPAddress(String(first)) else { return nil }
        let maximum: UInt8 = address.isIPv6 ? 128 : 32
        var length = maximum
        if parts.count == 2 {
            guard let parsed = UInt8(parts[1]), parsed <= maximum else { return nil }
            length = parsed
        }
        self.init(address, length: length)
    }

    /// Like `init?(_:)` but throws an error naming the field and what was expected.
    public static func parse(_ text: String, field: String = "address") throws -> IPPrefix {
        guard let prefix = IPPrefix(text) else {
            throw SystemError("parse \(field)", "'\(text)'", reason: "expected an IPv4 or IPv6 address with an optional /prefix-length")
        }
        return prefix
    }

    /// The network address (host bits cleared).
    public var network: IPAddress {
        var bytes = address.bytes
        for index in bytes.indices {
            let bitStart = index * 8
            if bitStart >= Int(length) {
                bytes[index] = 0
            } else if bitStart + 8 > Int(length) {
                let keep = Int(length) - bitStart
                bytes[index] &= UInt8(truncatingIfNeeded: 0xff << (8 - keep))
            }
        }
        return IPAddress(bytes: bytes)!
    }

    public var description: String { "\(address)/\(length)" }
}

/// A 48-bit MAC address.
public struct MACAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 6 else { return nil }
        self.bytes = bytes
    }

    /// Parses `02:00:00:00:01:00`.
    public init?(_ text: String) {
        let parts = text.split(separator: ":")
        guard parts.count == 6 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.bytes = bytes
    }

    /// A locally administered unicast address `02:XX:XX:XX:XX:XX` from a 32-bit seed and a byte.
    public static func local(_ seed: UInt32, _ index: UInt8) -> MACAddress {
        MACAddress(bytes: [0x02, UInt8(truncatingIfNeeded: seed >> 16), UInt8(truncatingIfNeeded: seed >> 8),
                           UInt8(truncatingIfNeeded: seed), 0x00, index])!
    }

    public var description: String { bytes.map { hexByte($0) }.joined(separator: ":") }
}
