// A small JSON value with a strict parser and a compact writer: the protocol's only dependency on text.
// Strict: one value per frame, UTF-8, no trailing bytes, nesting at most 64 deep.

public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public subscript(key: String) -> JSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var doubleValue: Double? { if case .number(let d) = self { return d }; return nil }
    public var intValue: Int? {
        if case .number(let d) = self, d.rounded() == d, abs(d) < 9.0e15 { return Int(d) }
        return nil
    }
    public var arrayValue: [JSON]? { if case .array(let a) = self { return a }; return nil }
    public var objectValue: [String: JSON]? { if case .object(let o) = self { return o }; return nil }

    // MARK: parsing

    public static func parse(_ bytes: [UInt8]) throws(ProtocolError) -> JSON {
        var p = Parser(bytes: bytes)
        do {
            p.skipSpace()
            let value = try p.value(depth: 0)
            p.skipSpace()
            guard p.i == bytes.count else { throw p.fail("trailing bytes after the JSON value") }
            return value
        } catch let e as ProtocolError {
            throw e
        } catch {
            throw ProtocolError(.malformedJSON, "\(error)")
        }
    }

    /// Parses like `parse(_:)`, but each array that is a value of the top-level object keeps at most `limit`
    /// elements: the others are checked as strictly (`skipValue`) but not built, and counted in `skipped` under
    /// their key (a state file past its entry limits: issue 27, a large file must not hold up hotspotd's start).
    public static func parse(_ bytes: [UInt8], arraysKeepingAtMost limit: Int) throws(ProtocolError) -> (json: JSON, skipped: [String: Int]) {
        var p = Parser(bytes: bytes)
        p.topArrayLimit = max(0, limit)
        do {
            p.skipSpace()
            let value = try p.value(depth: 0)
            p.skipSpace()
            guard p.i == bytes.count else { throw p.fail("trailing bytes after the JSON value") }
            return (value, p.skipped)
        } catch let e as ProtocolError {
            throw e
        } catch {
            throw ProtocolError(.malformedJSON, "\(error)")
        }
    }

    private struct Parser {
        let bytes: [UInt8]
        var i = 0
        /// The most elements an array directly inside the top-level object keeps (`parse(_:arraysKeepingAtMost:)`).
        var topArrayLimit = Int.max
        /// Elements checked and not built, by the top-level key of their array.
        var skipped: [String: Int] = [:]
        /// Elements the array just parsed left out.
        var lastSkipped = 0

        func fail(_ what: String) -> ProtocolError {
            ProtocolError(.malformedJSON, "\(what) at byte \(i)")
        }

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        }

        mutating func literal(_ word: StaticString, _ value: JSON) throws(ProtocolError) -> JSON {
            let w = word.utf8Start
            for k in 0..<word.utf8CodeUnitCount {
                guard i < bytes.count, bytes[i] == w[k] else { throw fail("invalid literal") }
                i += 1
            }
            return value
        }

        mutating func value(depth: Int, keep: Int = .max) throws(ProtocolError) -> JSON {
            guard depth < 64 else { throw fail("nesting deeper than 64") }
            guard i < bytes.count else { throw fail("unexpected end of input") }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                i += 1
                var object: [String: JSON] = [:]
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(object) }
                while true {
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                    let key = try string()
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    i += 1
                    skipSpace()
                    object[key] = try value(depth: depth + 1, keep: depth == 0 ? topArrayLimit : .max)
                    if lastSkipped > 0 {
                        skipped[key, default: 0] += lastSkipped
                        lastSkipped = 0
                    }
                    skipSpace()
                    guard i < bytes.count else { throw fail("unexpected end of object") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(object) }
                    throw fail("expected ',' or '}'")
                }
            case UInt8(ascii: "["):
                i += 1
                var array: [JSON] = []
                var left = 0
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(array) }
                defer { lastSkipped = left }
                while true {
                    skipSpace()
                    if array.count < keep {
                        array.append(try value(depth: depth + 1))
                    } else {
                        try skipValue(depth: depth + 1)
                        left += 1
                    }
                    skipSpace()
                    guard i < bytes.count else { throw fail("unexpected end of array") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(array) }
                    throw fail("expected ',' or ']'")
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default:
                return .number(try number())
            }
        }

        /// Checks one value as `value` would, building nothing.
        mutating func skipValue(depth: Int) throws(ProtocolError) {
            guard depth < 64 else { throw fail("nesting deeper than 64") }
            guard i < bytes.count else { throw fail("unexpected end of input") }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                i += 1
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return }
                while true {
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                    try skipString()
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    i += 1
                    skipSpace()
                    try skipValue(depth: depth + 1)
                    skipSpace()
                    guard i < bytes.count else { throw fail("unexpected end of object") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "}") { i += 1; return }
                    throw fail("expected ',' or '}'")
                }
            case UInt8(ascii: "["):
                i += 1
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return }
                while true {
                    skipSpace()
                    try skipValue(depth: depth + 1)
                    skipSpace()
                    guard i < bytes.count else { throw fail("unexpected end of array") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "]") { i += 1; return }
                    throw fail("expected ',' or ']'")
                }
            case UInt8(ascii: "\""):
                try skipString()
            default:
                _ = try value(depth: depth)
            }
        }

        /// Checks a string: printable ASCII up to the closing quote is taken as is; anything else (an escape, a
        /// byte past ASCII) is checked by `string()`.
        mutating func skipString() throws(ProtocolError) {
            let begin = i
            // One pass over the bytes through a pointer (the array's subscript costs more than the test).
            let end = bytes.withUnsafeBufferPointer { p -> Int? in
                var k = begin + 1
                while k < p.count {
                    let c = p[k]
                    if c == 0x22 { return k + 1 }
                    if c < 0x20 || c >= 0x80 || c == 0x5C { return nil }
                    k += 1
                }
                return nil
            }
            if let end {
                i = end
                return
            }
            _ = try string()
        }

        mutating func number() throws(ProtocolError) -> Double {
            let begin = i
            if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
            var digits = 0
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1; digits += 1 }
            guard digits > 0 else { throw fail("invalid value") }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                var frac = 0
                while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1; frac += 1 }
                guard frac > 0 else { throw fail("invalid number") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                var exp = 0
                while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1; exp += 1 }
                guard exp > 0 else { throw fail("invalid number") }
            }
            let text = String(decoding: bytes[begin..<i], as: UTF8.self)
            guard let d = Double(text), d.isFinite else { throw fail("invalid number") }
            return d
        }

        mutating func hex4() throws(ProtocolError) -> UInt32 {
            guard i + 4 <= bytes.count else { throw fail("truncated \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[i]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                default: throw fail("invalid \\u escape")
                }
                v = v << 4 | d
                i += 1
            }
            return v
        }

        mutating func string() throws(ProtocolError) -> String {
            i += 1  // opening quote
            var out = [UInt8]()
            while true {
                guard i < bytes.count else { throw fail("unterminated string") }
                let c = bytes[i]
                if c == UInt8(ascii: "\"") { i += 1; break }
                if c < 0x20 { throw fail("control character in string") }
                if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
                i += 1
                guard i < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xD800, scalar < 0xDC00 {
                        guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                            throw fail("unpaired surrogate")
                        }
                        i += 2
                        let low = try hex4()
                        guard low >= 0xDC00, low < 0xE000 else { throw fail("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00, scalar < 0xE000 {
                        throw fail("unpaired surrogate")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw fail("invalid scalar") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw fail("invalid escape")
                }
            }
            guard let s = String(validating: out, as: UTF8.self) else { throw fail("string is not valid UTF-8") }
            return s
        }
    }

    // MARK: writing

    /// Compact UTF-8 JSON; object keys sorted so output is deterministic.
    public var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let d):
            if d.rounded() == d, abs(d) < 9.0e15 {
                out.append(contentsOf: String(Int64(d)).utf8)
            } else if d.isFinite {
                out.append(contentsOf: "\(d)".utf8)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .string(let s): JSON.writeString(s, into: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (k, v) in a.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                v.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            for (k, key) in o.keys.sorted().enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                JSON.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                o[key]!.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Writes a JSON string. Besides what JSON requires (C0 controls, `"`, `\\`), DEL, the C1 controls
    /// (U+0080-U+009F: 0x9B is a terminal's CSI) and U+2028/U+2029 are written as `\\uXXXX` too, so a record
    /// printed to a terminal (`hotspot-lab ctl status`, `ctl trace`) or read line by line cannot carry a
    /// control sequence or a line break raw (issue 17: SSIDs are any bytes).
    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        func escaped(_ value: UInt16) {
            out.append(contentsOf: [0x5C, UInt8(ascii: "u"), hex[Int(value >> 12)], hex[Int(value >> 8 & 0xF)],
                                    hex[Int(value >> 4 & 0xF)], hex[Int(value & 0xF)]])
        }
        let utf8 = s.utf8
        var i = utf8.startIndex
        while i != utf8.endIndex {
            let c = utf8[i]
            utf8.formIndex(after: &i)
            switch c {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20, 0x7F:
                escaped(UInt16(c))
            case 0xC2 where i != utf8.endIndex && (0x80...0x9F).contains(utf8[i]):   // U+0080-U+009F
                escaped(UInt16(utf8[i]))
                utf8.formIndex(after: &i)
            case 0xE2 where i != utf8.endIndex && utf8[i] == 0x80:                      // U+2028, U+2029
                let j = utf8.index(after: i)
                if j != utf8.endIndex, utf8[j] == 0xA8 || utf8[j] == 0xA9 {
                    escaped(0x2000 | UInt16(utf8[j] - 0xA8 + 0x28))
                    i = utf8.index(after: j)
                } else {
                    out.append(c)
                }
            default: out.append(c)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, b in b }))
    }
    public init(nilLiteral: ()) { self = .null }
}
