/// An SSID as IEEE 802.11 defines it: 0 to 32 arbitrary octets, not text (issue 17). A network's identity
/// (the cache key, the auto-join exclude list, a scan-list entry) compares these bytes; `text` is for people
/// and for helpers that read `NEHotspotNetwork.ssid`, a `String` as Apple's: bytes that are not UTF-8 read as
/// U+FFFD there (lossy, like Apple's), so two SSIDs can share a `text` and still be two networks.
///
/// Two SSIDs are equal when their bytes are: "é" precomposed and "e" + combining acute are two SSIDs
/// (a `String` comparison would call them one).
public struct SSID: Sendable, Hashable, Codable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The octets, as on the air.
    public let bytes: [UInt8]
    /// The SSID for display: the bytes as UTF-8, an invalid sequence as U+FFFD.
    public let text: String
    /// The bytes are valid UTF-8 (`text` is exact).
    public let isUTF8: Bool

    /// The longest SSID IEEE 802.11 allows.
    public static let maximumBytes = 32

    public init(bytes: [UInt8]) {
        self.bytes = bytes
        let decoded = String(decoding: bytes, as: UTF8.self)
        self.text = decoded
        self.isUTF8 = decoded.utf8.elementsEqual(bytes)
    }

    /// An SSID given as text: its UTF-8 bytes.
    public init(_ text: String) {
        self.bytes = Array(text.utf8)
        self.text = text
        self.isUTF8 = true
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// The bytes as UTF-8 text, nil when they are not UTF-8.
    public var utf8Text: String? { isUTF8 ? text : nil }

    /// The bytes as lowercase hex digits, two a byte (`Caf\xe9` is `436166e9`): hostapd's `ssid2=`,
    /// wpa_supplicant's unquoted `ssid`, the protocol's `ssid_hex`.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// An SSID from hex digits (either case, two a byte); nil for an odd count or a character that is no hex digit.
    public init?(hex: String) {
        let chars = Array(hex.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let high = Self.hexValue(chars[i]), let low = Self.hexValue(chars[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        self.init(bytes: out)
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    /// Quoted and escaped for a line of output (`SSIDText.printable(bytes:)`): a newline, an escape sequence
    /// or a byte that is not UTF-8 never reaches a terminal or a log raw.
    public var printable: String { SSIDText.printable(bytes: bytes) }

    /// In a message: as itself when nothing in it needs escaping, else quoted and escaped (`SSIDText.inline`).
    public var description: String { SSIDText.inline(self) }

    /// Why these bytes cannot be an SSID (nil: they can): more than 32 bytes, or (`allowEmpty` false) none.
    public var problem: String? { problem(allowEmpty: false) }

    public func problem(allowEmpty: Bool) -> String? {
        if bytes.count > Self.maximumBytes { return "is \(bytes.count) bytes; IEEE 802.11 allows at most \(Self.maximumBytes)" }
        if bytes.isEmpty && !allowEmpty { return "is empty; expected 1 to \(Self.maximumBytes) bytes" }
        return nil
    }

    public static func == (a: SSID, b: SSID) -> Bool { a.bytes == b.bytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }

    // Codable: the bytes (lossless).
    public init(from decoder: any Decoder) throws {
        self.init(bytes: try decoder.singleValueContainer().decode([UInt8].self))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(bytes)
    }
}
