// Codable over `JSON` values. HotspotProtocol imports no Foundation (no JSONEncoder), so the trace records
// (TraceRecord.swift) encode to and decode from the protocol's own `JSON` through this small coder:
// - an `Int` is a JSON number, a `nil` optional is left out (`encodeIfPresent`); a field written as `null`
//   encodes `nil` explicitly (`container.encode(optional, forKey:)`), which some records do (docs/TRACE.md);
// - decoding is as lenient as the readers it replaced (`record["key"]?.stringValue`): an optional field that is
//   absent, `null` or of another type decodes to nil; a required field that is not there fails the record;
// - a property whose type is `JSONInlineFields` (a peer's credentials, an SSID's `ssid`/`ssid_hex`) is written
//   into the object that holds it, not nested under its name, and read back from that object.

/// A value whose fields sit in the object of the struct that holds it (flattened), not under its own key.
public protocol JSONInlineFields: Codable {}

public enum JSONCoding {
    public static func encode<T: Encodable>(_ value: T) throws -> JSON {
        let node = EncodingNode()
        try encode(value, into: node, path: [])
        return node.json
    }

    public static func decode<T: Decodable>(_ type: T.Type, from json: JSON) throws -> T {
        try decode(type, json, path: [])
    }

    /// The names of the fields a type reads from its object, in the order it reads them (its Codable
    /// declaration order), found by decoding `json` with it: docs/TRACE.md's generated table of the kinds.
    public static func fieldNames<T: Decodable>(of type: T.Type, decoding json: JSON) -> [String] {
        let log = KeyLog()
        _ = try? T(from: ValueDecoder(value: json, codingPath: [], log: log))
        var seen = Set<String>()
        return log.keys.filter { seen.insert($0).inserted }
    }

    fileprivate static func encode<T: Encodable>(_ value: T, into node: EncodingNode, path: [any CodingKey]) throws {
        if let json = value as? JSON {
            node.value = json
        } else {
            try value.encode(to: ValueEncoder(node: node, codingPath: path))
        }
    }

    fileprivate static func decode<T: Decodable>(_ type: T.Type, _ json: JSON, path: [any CodingKey]) throws -> T {
        if T.self == JSON.self { return json as! T }
        return try T(from: ValueDecoder(value: json, codingPath: path))
    }

    fileprivate static func mismatch(_ type: Any.Type, _ path: [any CodingKey], _ json: JSON) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), got \(json.text.prefix(80))"))
    }
}

// MARK: encoding

/// What one value encodes to: a plain value, or an object or array of nodes (filled by nested containers).
fileprivate final class EncodingNode {
    var value: JSON = .object([:])
    var object: [String: EncodingNode]?
    var array: [EncodingNode]?

    var json: JSON {
        if let object { return .object(object.mapValues(\.json)) }
        if let array { return .array(array.map(\.json)) }
        return value
    }
}

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { self.stringValue = "\(intValue)"; self.intValue = intValue }
}

private struct ValueEncoder: Encoder {
    let node: EncodingNode
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.object == nil { node.object = [:] }
        return KeyedEncodingContainer(KeyedEncoder<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.array == nil { node.array = [] }
        return UnkeyedEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleEncoder(node: node, codingPath: codingPath) }
}

private struct KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    var codingPath: [any CodingKey]

    private func child(_ key: Key) -> EncodingNode {
        let c = EncodingNode()
        node.object![key.stringValue] = c
        return c
    }

    mutating func encodeNil(forKey key: Key) throws { child(key).value = .null }
    mutating func encode(_ value: Bool, forKey key: Key) throws { child(key).value = .bool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { child(key).value = .string(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { child(key).value = .number(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode(_ value: Int, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { child(key).value = .number(Double(value)) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if value is any JSONInlineFields {
            // Its fields go into this object.
            try value.encode(to: ValueEncoder(node: node, codingPath: codingPath))
        } else {
            try JSONCoding.encode(value, into: child(key), path: codingPath + [key])
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let c = child(key)
        c.object = [:]
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(node: c, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let c = child(key)
        c.array = []
        return UnkeyedEncoder(node: c, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { ValueEncoder(node: child(Key(stringValue: "super")!), codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { ValueEncoder(node: child(key), codingPath: codingPath + [key]) }
}

private struct UnkeyedEncoder: UnkeyedEncodingContainer {
    let node: EncodingNode
    var codingPath: [any CodingKey]
    var count: Int { node.array!.count }

    private func next() -> EncodingNode {
        let c = EncodingNode()
        node.array!.append(c)
        return c
    }

    mutating func encodeNil() throws { next().value = .null }
    mutating func encode(_ value: Bool) throws { next().value = .bool(value) }
    mutating func encode(_ value: String) throws { next().value = .string(value) }
    mutating func encode(_ value: Double) throws { next().value = .number(value) }
    mutating func encode(_ value: Float) throws { next().value = .number(Double(value)) }
    mutating func encode(_ value: Int) throws { next().value = .number(Double(value)) }
    mutating func encode(_ value: Int8) throws { next().value = .number(Double(value)) }
    mutating func encode(_ value: Int16) throws { next().value = .number(Double(value)) }
    mutating func encode(_ value: Int32) throws { next().value = .number(Double(value)) }
    mutating func encode(_ value: Int64) throws { next().value = .number(Double(value)) }
    mutating func encode(_ value: UInt) throws { next().value = .number(Double(value)) }
    mutating func encode(_ value: UInt8) throws { next().value = .number(Double(value)) }
    mutating func encode(_ value: UInt16) throws { next().value = .number(Double(value)) }
    mutating func encode(_ value: UInt32) throws { next().value = .number(Double(value)) }
    mutating func encode(_ value: UInt64) throws { next().value = .number(Double(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try JSONCoding.encode(value, into: next(), path: codingPath + [AnyKey(intValue: count)])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let c = next()
        c.object = [:]
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(node: c, codingPath: codingPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let c = next()
        c.array = []
        return UnkeyedEncoder(node: c, codingPath: codingPath)
    }

    mutating func superEncoder() -> any Encoder { ValueEncoder(node: next(), codingPath: codingPath) }
}

private struct SingleEncoder: SingleValueEncodingContainer {
    let node: EncodingNode
    var codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.value = .null }
    mutating func encode(_ value: Bool) throws { node.value = .bool(value) }
    mutating func encode(_ value: String) throws { node.value = .string(value) }
    mutating func encode(_ value: Double) throws { node.value = .number(value) }
    mutating func encode(_ value: Float) throws { node.value = .number(Double(value)) }
    mutating func encode(_ value: Int) throws { node.value = .number(Double(value)) }
    mutating func encode(_ value: Int8) throws { node.value = .number(Double(value)) }
    mutating func encode(_ value: Int16) throws { node.value = .number(Double(value)) }
    mutating func encode(_ value: Int32) throws { node.value = .number(Double(value)) }
    mutating func encode(_ value: Int64) throws { node.value = .number(Double(value)) }
    mutating func encode(_ value: UInt) throws { node.value = .number(Double(value)) }
    mutating func encode(_ value: UInt8) throws { node.value = .number(Double(value)) }
    mutating func encode(_ value: UInt16) throws { node.value = .number(Double(value)) }
    mutating func encode(_ value: UInt32) throws { node.value = .number(Double(value)) }
    mutating func encode(_ value: UInt64) throws { node.value = .number(Double(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws { try JSONCoding.encode(value, into: node, path: codingPath) }
}

// MARK: decoding

/// The keys a decoding asked for at its top level (`JSONCoding.fieldNames`).
private final class KeyLog {
    var keys: [String] = []
}

private struct ValueDecoder: Decoder {
    let value: JSON
    var codingPath: [any CodingKey]
    var log: KeyLog? = nil
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let o) = value else { throw JSONCoding.mismatch([String: JSON].self, codingPath, value) }
        return KeyedDecodingContainer(KeyedDecoder<Key>(object: o, codingPath: codingPath, log: log))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let a) = value else { throw JSONCoding.mismatch([JSON].self, codingPath, value) }
        return UnkeyedDecoder(array: a, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleDecoder(value: value, codingPath: codingPath) }
}

/// Reads a plain value of `T` from `json` (nil: another type).
private func primitive<T>(_ type: T.Type, _ json: JSON) -> T? {
    switch json {
    case .bool(let b): return b as? T
    case .string(let s): return s as? T
    case .number(let d):
        if T.self == Double.self { return d as? T }
        if T.self == Float.self { return Float(d) as? T }
        guard d.rounded() == d, abs(d) < 9.0e15 else { return nil }
        switch T.self {
        case is Int.Type: return Int(d) as? T
        case is Int8.Type: return Int8(exactly: d) as? T
        case is Int16.Type: return Int16(exactly: d) as? T
        case is Int32.Type: return Int32(exactly: d) as? T
        case is Int64.Type: return Int64(d) as? T
        case is UInt.Type: return UInt(exactly: d) as? T
        case is UInt8.Type: return UInt8(exactly: d) as? T
        case is UInt16.Type: return UInt16(exactly: d) as? T
        case is UInt32.Type: return UInt32(exactly: d) as? T
        case is UInt64.Type: return UInt64(exactly: d) as? T
        default: return nil
        }
    default: return nil
    }
}

private struct KeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: JSON]
    var codingPath: [any CodingKey]
    var log: KeyLog?
    var allKeys: [Key] { object.keys.compactMap(Key.init(stringValue:)) }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func value(_ key: Key) throws -> JSON {
        log?.keys.append(key.stringValue)
        guard let v = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no field \"\(key.stringValue)\""))
        }
        return v
    }

    private func plain<T>(_ type: T.Type, _ key: Key) throws -> T {
        // A field the type needs but the line lacks reads as the type's zero (`""`, 0, false), as the readers'
        // `record["key"]?.stringValue ?? ""` did: a hand-written or cut record still reads. Another type fails.
        guard object[key.stringValue] != nil else {
            log?.keys.append(key.stringValue)
            if let zero = ("" as Any) as? T ?? (false as Any) as? T ?? primitive(type, .number(0)) { return zero }
            return try value(key) as! T
        }
        let v = try value(key)
        guard let p = primitive(type, v) else { throw JSONCoding.mismatch(type, codingPath + [key], v) }
        return p
    }

    /// Absent, `null` or another type: nil (as the readers' `?.stringValue` were).
    private func plainIfPresent<T>(_ type: T.Type, _ key: Key) -> T? {
        log?.keys.append(key.stringValue)
        return object[key.stringValue].flatMap { primitive(type, $0) }
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        log?.keys.append(key.stringValue)
        return (object[key.stringValue] ?? .null) == .null
    }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try plain(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try plain(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try plain(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try plain(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try plain(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try plain(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try plain(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try plain(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try plain(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try plain(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try plain(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try plain(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try plain(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try plain(type, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        if type is any JSONInlineFields.Type { return try T(from: ValueDecoder(value: .object(object), codingPath: codingPath, log: log)) }
        if object[key.stringValue] == nil {
            // Absent: an empty object or list, when the type reads from one (a network of optional fields, a list).
            log?.keys.append(key.stringValue)
            if let empty = try? JSONCoding.decode(type, .object([:]), path: codingPath + [key]) { return empty }
            if let empty = try? JSONCoding.decode(type, .array([]), path: codingPath + [key]) { return empty }
        }
        return try JSONCoding.decode(type, try value(key), path: codingPath + [key])
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { plainIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { plainIfPresent(type, key) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        if type is any JSONInlineFields.Type { return try? T(from: ValueDecoder(value: .object(object), codingPath: codingPath, log: log)) }
        log?.keys.append(key.stringValue)
        guard let v = object[key.stringValue] else { return nil }
        if T.self == JSON.self { return v as? T }
        if v == .null { return nil }
        return try? JSONCoding.decode(type, v, path: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { ValueDecoder(value: object["super"] ?? .null, codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ValueDecoder(value: object[key.stringValue] ?? .null, codingPath: codingPath + [key]) }
}

private struct UnkeyedDecoder: UnkeyedDecodingContainer {
    let array: [JSON]
    var codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    init(array: [JSON], codingPath: [any CodingKey]) {
        self.array = array
        self.codingPath = codingPath
    }

    private mutating func next() throws -> JSON {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(JSON.self, .init(codingPath: codingPath, debugDescription: "the array has only \(array.count) elements"))
        }
        defer { currentIndex += 1 }
        return array[currentIndex]
    }

    private mutating func plain<T>(_ type: T.Type) throws -> T {
        let v = try next()
        guard let p = primitive(type, v) else { throw JSONCoding.mismatch(type, codingPath + [AnyKey(intValue: currentIndex - 1)], v) }
        return p
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, array[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try plain(type) }
    mutating func decode(_ type: String.Type) throws -> String { try plain(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try plain(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try plain(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try plain(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try plain(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try plain(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try plain(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try plain(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try plain(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try plain(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try plain(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try plain(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try plain(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let v = try next()
        return try JSONCoding.decode(type, v, path: codingPath + [AnyKey(intValue: currentIndex - 1)])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: try next(), codingPath: codingPath).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: try next(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { ValueDecoder(value: try next(), codingPath: codingPath) }
}

private struct SingleDecoder: SingleValueDecodingContainer {
    let value: JSON
    var codingPath: [any CodingKey]

    private func plain<T>(_ type: T.Type) throws -> T {
        guard let p = primitive(type, value) else { throw JSONCoding.mismatch(type, codingPath, value) }
        return p
    }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try plain(type) }
    func decode(_ type: String.Type) throws -> String { try plain(type) }
    func decode(_ type: Double.Type) throws -> Double { try plain(type) }
    func decode(_ type: Float.Type) throws -> Float { try plain(type) }
    func decode(_ type: Int.Type) throws -> Int { try plain(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try plain(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try plain(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try plain(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try plain(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try plain(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try plain(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try plain(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try plain(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try plain(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONCoding.decode(type, value, path: codingPath) }
}

// MARK: JSON itself

/// A `JSON` field of a record (a state, a request as sent) is carried as it is.
extension JSON: Codable {
    public init(from decoder: any Decoder) throws {
        if let d = decoder as? ValueDecoder { self = d.value; return }
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let d = try? c.decode(Double.self) { self = .number(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSON].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSON].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null: var c = encoder.singleValueContainer(); try c.encodeNil()
        case .bool(let b): var c = encoder.singleValueContainer(); try c.encode(b)
        case .number(let d): var c = encoder.singleValueContainer(); try c.encode(d)
        case .string(let s): var c = encoder.singleValueContainer(); try c.encode(s)
        case .array(let a): var c = encoder.singleValueContainer(); try c.encode(a)
        case .object(let o): var c = encoder.singleValueContainer(); try c.encode(o)
        }
    }
}
