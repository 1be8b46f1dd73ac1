import HotspotCore

// The values several trace records share: an SSID (`ssid`/`ssid_hex`), a peer's credentials, a network object.

/// An SSID as a record carries it (docs/TRACE.md): `ssid`, the text, and `ssid_hex`, the bytes, when they are not
/// UTF-8 or hold a NUL. Inline: its fields sit in the record (or network object) that holds it.
public struct TraceSSID: JSONInlineFields, Sendable, Hashable {
    public var text: String?
    public var hex: String?

    enum CodingKeys: String, CodingKey {
        case text = "ssid"
        case hex = "ssid_hex"
    }

    public init(text: String?, hex: String? = nil) {
        self.text = text
        self.hex = hex
    }

    public init(_ ssid: SSID) {
        text = ssid.text
        hex = ssid.needsHexOnTheWire ? ssid.hex : nil
    }

    /// The SSID's bytes: `ssid_hex` first, else `ssid`; nil when neither reads.
    public var ssid: SSID? {
        var o: [String: JSON] = [:]
        if let text { o["ssid"] = .string(text) }
        if let hex { o["ssid_hex"] = .string(hex) }
        return SSID(wire: .object(o))
    }

    /// The SSID as it may appear in a line (`SSIDText.inline`), "?" when there is none.
    public var inline: String { ssid.map(SSIDText.inline) ?? "?" }
}

/// A peer's connection and its SO_PEERCRED credentials (docs/TRACE.md, "peer fields"). Inline.
public struct TracePeer: JSONInlineFields, Sendable, Hashable {
    public var connection: Int?
    public var pid: Int?
    public var uid: Int?
    public var gid: Int?

    public init(connection: Int? = nil, pid: Int? = nil, uid: Int? = nil, gid: Int? = nil) {
        self.connection = connection
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

/// A network object of a record, in its wire form (docs/PROTOCOL.md): a command's or an answer's network, a
/// cache or auto-join entry (`ssid`, `security` only), an association.
public struct TraceNetwork: Codable, Sendable, Hashable {
    public var ssid: TraceSSID
    public var bssid: String?
    public var signalStrength: Double?
    public var security: String?
    public var isSecure: Bool?
    public var didAutoJoin: Bool?
    public var didJustJoin: Bool?
    public var isChosenHelper: Bool?
    /// 0 none, 1 low, 2 high (`Confidence`).
    public var confidence: Int?
    public var password: String?

    public init(ssid: TraceSSID, bssid: String? = nil, signalStrength: Double? = nil, security: String? = nil, isSecure: Bool? = nil,
                didAutoJoin: Bool? = nil, didJustJoin: Bool? = nil, isChosenHelper: Bool? = nil, confidence: Int? = nil,
                password: String? = nil) {
        self.ssid = ssid
        self.bssid = bssid
        self.signalStrength = signalStrength
        self.security = security
        self.isSecure = isSecure
        self.didAutoJoin = didAutoJoin
        self.didJustJoin = didJustJoin
        self.isChosenHelper = isChosenHelper
        self.confidence = confidence
        self.password = password
    }

    /// The form of `HotspotNetwork.wire`.
    public init(_ n: HotspotNetwork) {
        self.init(ssid: TraceSSID(n.rawSSID), bssid: n.bssid, signalStrength: n.signalStrength, security: n.security.rawValue,
                  isSecure: n.isSecure, didAutoJoin: n.didAutoJoin, didJustJoin: n.didJustJoin, isChosenHelper: n.isChosenHelper,
                  confidence: n.confidence.rawValue, password: n.password)
    }

    /// The form of `NetworkIdentity.wire`: `ssid` and `security`.
    public init(_ n: NetworkIdentity) {
        self.init(ssid: TraceSSID(n.rawSSID), security: n.security.rawValue)
    }

    /// The network as the protocol reads it (`HotspotNetwork(wire:)`: its defaults for what is absent); nil when
    /// it is not a valid network object.
    public var hotspotNetwork: HotspotNetwork? {
        guard let json = try? JSONCoding.encode(self) else { return nil }
        return try? HotspotNetwork(wire: json)
    }

    /// Its confidence, named (`none`, `low`, `high`).
    public var confidenceName: String? { confidence.flatMap { Confidence(rawValue: $0)?.description } }
}

/// One entry of a shown scan list (`scanList` records, the `scanListShown` event): the network and how the
/// helpers annotated it. `annotation`, `claimedBy` and `password` are written as null when unset.
public struct TraceScanListEntry: Codable, Sendable, Hashable {
    public var network: TraceNetwork
    public var annotation: String?
    public var claimedBy: String?

    enum CodingKeys: String, CodingKey { case network, annotation, claimedBy, password }

    public init(network: TraceNetwork, annotation: String?, claimedBy: String?) {
        self.network = network
        self.annotation = annotation
        self.claimedBy = claimedBy
    }

    public init(_ n: AnnotatedNetwork) {
        var network = TraceNetwork(n.network)
        network.password = n.password
        self.init(network: network, annotation: n.annotation, claimedBy: n.claimedBy)
    }

    public init(from decoder: any Decoder) throws {
        network = try TraceNetwork(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        annotation = try c.decodeIfPresent(String.self, forKey: .annotation)
        claimedBy = try c.decodeIfPresent(String.self, forKey: .claimedBy)
    }

    public func encode(to encoder: any Encoder) throws {
        var bare = network
        bare.password = nil
        try bare.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(annotation, forKey: .annotation)
        try c.encode(claimedBy, forKey: .claimedBy)
        try c.encode(network.password, forKey: .password)
    }
}
