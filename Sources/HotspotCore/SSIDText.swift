/// SSIDs as people read them. IEEE 802.11 allows any 0-32 bytes in an SSID: a newline, a quote, a control
/// character or bytes that are not UTF-8 must not break a line of output or vanish (issue 17). The printable
/// form is double-quoted; `\` and `"` are escaped, `\n` `\r` `\t` spelled so, other control and invisible
/// line-breaking characters as `\u{XXXX}`, and bytes that are not UTF-8 as `\xNN`.
public enum SSIDText {
    /// The printable, quoted form of an SSID given as text.
    public static func printable(_ ssid: String) -> String {
        "\"" + ssid.unicodeScalars.map(escape).joined() + "\""
    }

    /// An SSID inside a line of output: as itself when nothing in it needs escaping (UTF-8 without control or
    /// line-breaking characters, quotes or backslashes), else its quoted printable form. "Cafe Lumiere" stays
    /// Cafe Lumiere; "Cafe\nLumiere" is "Cafe\\nLumiere" with its quotes, so it cannot end the line.
    public static func inline(_ ssid: SSID) -> String {
        guard ssid.isUTF8, !ssid.bytes.isEmpty else { return printable(bytes: ssid.bytes) }
        for scalar in ssid.text.unicodeScalars where scalar == "\"" || escape(scalar) != String(scalar) {
            return printable(ssid.text)
        }
        return ssid.text
    }

    /// `inline` for an SSID given as text.
    public static func inline(_ ssid: String) -> String { inline(SSID(ssid)) }

    /// The printable, quoted form of an SSID given as bytes (invalid UTF-8 sequences as `\xNN`).
    public static func printable(bytes: [UInt8]) -> String {
        var out = ""
        var index = 0
        while index < bytes.count {
            let length = scalarLength(bytes[index])
            if length > 0, index + length <= bytes.count {
                var decoder = UTF8()
                var sequence = bytes[index..<(index + length)].makeIterator()
                if case .scalarValue(let scalar) = decoder.decode(&sequence) {
                    out += escape(scalar)
                    index += length
                    continue
                }
            }
            out += hex(bytes[index])
            index += 1
        }
        return "\"" + out + "\""
    }

    static func scalarLength(_ lead: UInt8) -> Int {
        switch lead {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: return 2
        case 0xE0...0xEF: return 3
        case 0xF0...0xF4: return 4
        default: return 0
        }
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "\\x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xF)])
    }

    static func escape(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\\": return "\\\\"
        case "\"": return "\\\""
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        default:
            let value = scalar.value
            if value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029 || value == 0x85 {
                return "\\u{" + String(value, radix: 16) + "}"
            }
            return String(scalar)
        }
    }
}
