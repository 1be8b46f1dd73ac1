import CLibMNL
import CNetlinkShim

/// One encoded netlink message (header included). Sequence number and port id are 0 until a socket sends
/// it, which keeps encoders deterministic for golden-byte tests.
public struct NetlinkMessage: Sendable, Equatable, CustomStringConvertible {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    public var type: UInt16 { readLE(bytes, at: 4) }
    public var flags: UInt16 {
        get { readLE(bytes, at: 6) }
        set { writeLE(&bytes, at: 6, newValue) }
    }
    public var sequence: UInt32 {
        get { readLE(bytes, at: 8) }
        set { writeLE(&bytes, at: 8, newValue) }
    }

    /// Lowercase hex, for golden tests and debugging.
    public var hex: String { bytes.map { hexByte($0) }.joined() }
    public var description: String { "netlink message type \(type) flags 0x\(String(flags, radix: 16)) \(hex)" }
}

/// A message received from the kernel: header fields and the payload after the 16-byte header.
public struct NetlinkReply: Sendable, Equatable {
    public var type: UInt16
    public var flags: UInt16
    public var sequence: UInt32
    public var payload: [UInt8]

    public init(type: UInt16, flags: UInt16, sequence: UInt32, payload: [UInt8]) {
        self.type = type
        self.flags = flags
        self.sequence = sequence
        self.payload = payload
    }
}

/// Netlink constants (stable kernel ABI; the header macros do not import into Swift).
public enum NL {
    public static let request: UInt16 = 0x1
    public static let multi: UInt16 = 0x2
    public static let ack: UInt16 = 0x4
    public static let echo: UInt16 = 0x8
    public static let root: UInt16 = 0x100
    public static let match: UInt16 = 0x200
    public static let dump: UInt16 = 0x300
    public static let replace: UInt16 = 0x100
    public static let excl: UInt16 = 0x200
    public static let create: UInt16 = 0x400
    public static let append: UInt16 = 0x800

    public static let noop: UInt16 = 1
    public static let error: UInt16 = 2
    public static let done: UInt16 = 3

    public static let nestedFlag: UInt16 = 0x8000
}

/// Builds one netlink message in a libmnl buffer: header, fixed family header, attributes, nests.
final class MessageBuilder {
    private let buffer: UnsafeMutableRawPointer
    private let capacity: Int
    private let header: UnsafeMutablePointer<nlmsghdr>

    init(type: UInt16, flags: UInt16, capacity: Int = Int(hsl_mnl_socket_buffer_size())) {
        self.capacity = capacity
        buffer = .allocate(byteCount: capacity, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: capacity)
        header = mnl_nlmsg_put_header(buffer)
        header.pointee.nlmsg_type = type
        header.pointee.nlmsg_flags = flags
        header.pointee.nlmsg_seq = 0
        header.pointee.nlmsg_pid = 0
    }

    deinit { buffer.deallocate() }

    /// Appends a fixed header (ifinfomsg, ifaddrmsg, rtmsg, fib_rule_hdr, genlmsghdr) given as raw bytes,
    /// padded to 4 bytes. Also used inside a nest (the veth peer's ifinfomsg).
    func putFixed(_ bytes: [UInt8]) {
        let pointer = mnl_nlmsg_put_extra_header(header, bytes.count)!
        bytes.withUnsafeBytes { pointer.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
    }

    func put(_ type: UInt16, string: String) {
        _ = mnl_attr_put_strz_check(header, capacity, type, string)
    }

    func put(_ type: UInt16, u8 value: UInt8) { _ = mnl_attr_put_u8_check(header, capacity, type, value) }
    func put(_ type: UInt16, u16 value: UInt16) { _ = mnl_attr_put_u16_check(header, capacity, type, value) }
    func put(_ type: UInt16, u32 value: UInt32) { _ = mnl_attr_put_u32_check(header, capacity, type, value) }

    func put(_ type: UInt16, bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { mnl_attr_put_check(header, capacity, type, bytes.count, $0.baseAddress) }
    }

    func putFlag(_ type: UInt16) { _ = mnl_attr_put_check(header, capacity, type, 0, nil) }

    func nest(_ type: UInt16, _ body: () -> Void) {
        let start = mnl_attr_nest_start(header, type)
        body()
        mnl_attr_nest_end(header, start)
    }

    func finish() -> NetlinkMessage {
        let length = Int(header.pointee.nlmsg_len)
        return NetlinkMessage(bytes: Array(UnsafeRawBufferPointer(start: buffer, count: length)))
    }
}

/// Reads netlink attributes (TLVs, 4-byte aligned) from a payload.
public struct NetlinkAttributes: Sendable {
    public var values: [(type: UInt16, value: [UInt8])]

    public init(_ bytes: [UInt8], offset: Int = 0) {
        var values: [(UInt16, [UInt8])] = []
        var index = offset
        while index + 4 <= bytes.count {
            let length = Int(readLE(bytes, at: index) as UInt16)
            let type = (readLE(bytes, at: index + 2) as UInt16) & 0x3fff
            guard length >= 4, index + length <= bytes.count else { break }
            values.append((type, Array(bytes[(index + 4)..<(index + length)])))
            index += (length + 3) & ~3
        }
        self.values = values
    }

    public subscript(type: UInt16) -> [UInt8]? {
        values.first(where: { $0.type == type })?.value
    }

    public func u32(_ type: UInt16) -> UInt32? {
        guard let value = self[type], value.count >= 4 else { return nil }
        return readLE(value, at: 0)
    }

    public func string(_ type: UInt16) -> String? {
        guard var value = self[type] else { return nil }
        if let zero = value.firstIndex(of: 0) { value = Array(value[..<zero]) }
        return String(decoding: value, as: UTF8.self)
    }

    public func nested(_ type: UInt16) -> NetlinkAttributes? {
        self[type].map { NetlinkAttributes($0) }
    }
}

func readLE<T: FixedWidthInteger>(_ bytes: [UInt8], at offset: Int) -> T {
    var value: T = 0
    for index in 0..<MemoryLayout<T>.size {
        value |= T(truncatingIfNeeded: bytes[offset + index]) << (8 * index)
    }
    return value
}

func writeLE<T: FixedWidthInteger>(_ bytes: inout [UInt8], at offset: Int, _ value: T) {
    for index in 0..<MemoryLayout<T>.size {
        bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index))
    }
}

func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: MemoryLayout<T>.size)
    writeLE(&bytes, at: 0, value)
    return bytes
}

/// Two lowercase hex digits.
public func hexByte(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
}

/// Splits a receive buffer into netlink messages.
func splitMessages(_ bytes: [UInt8]) -> [NetlinkReply] {
    var replies: [NetlinkReply] = []
    var index = 0
    while index + 16 <= bytes.count {
        let length = Int(readLE(bytes, at: index) as UInt32)
        guard length >= 16, index + length <= bytes.count else { break }
        replies.append(NetlinkReply(
            type: readLE(bytes, at: index + 4),
            flags: readLE(bytes, at: index + 6),
            sequence: readLE(bytes, at: index + 8),
            payload: Array(bytes[(index + 16)..<(index + length)])
        ))
        index += (length + 3) & ~3
    }
    return replies
}
