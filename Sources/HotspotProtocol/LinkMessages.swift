import HotspotCore

// The native tier's link protocol (docs/STATION.md, "The native tier"): hotspotd's `LinkStation` and the lab's
// link controller (`StationLink`, LabKit), over a Unix socket the lab serves (`hotspotd --link-control PATH`).
// Frames as in the other protocols (4-byte length + one JSON object with a `type`). What wpa_supplicant is to a
// radio station, the lab is to a linked one: hotspotd asks to join or leave, the lab moves the station's link into
// or out of a hotspot's segment and reports the association with the topology's SSID, BSSID, security and signal.

/// hotspotd -> the lab: what the device asks of its Wi-Fi link.
public enum LinkRequest: Sendable, Hashable {
    /// The user joins `ssid` (didAutoJoin false); `password` for a secure network (given, or from filterScanList).
    case join(ssid: SSID, password: String?)
    /// The device joins a known network of its own choice, except `except` (networks whose auto-join a failure
    /// disabled).
    case autoJoin(except: [NetworkIdentity])
    /// Leave the current network (the user's leave, or the state machine's disassociate).
    case disconnect

    public static let types = ["join", "autoJoin", "disconnect"]

    public init(json: JSON) throws(ProtocolError) {
        let (type, f) = try messageType(json, side: "link")
        switch type {
        case "join": self = .join(ssid: try f.ssid(), password: try f.optionalString("password"))
        case "autoJoin":
            guard let list = f.object["except"]?.arrayValue else {
                throw ProtocolError(.invalidField, "except: missing (expected an array of networks)")
            }
            var identities: [NetworkIdentity] = []
            for (k, item) in list.enumerated() { identities.append(try NetworkIdentity(wire: item, path: "except[\(k)]")) }
            self = .autoJoin(except: identities)
        case "disconnect": self = .disconnect
        default:
            throw ProtocolError(.unknownType, "unknown link request \"\(type)\" (expected one of \(LinkRequest.types.joined(separator: ", ")))")
        }
    }

    public var json: JSON {
        switch self {
        case .join(let ssid, let password):
            var o: [String: JSON] = ["type": "join"]
            ssid.addWireFields(to: &o)
            if let password { o["password"] = .string(password) }
            return .object(o)
        case .autoJoin(let except): return ["type": "autoJoin", "except": .array(except.map(\.wire))]
        case .disconnect: return ["type": "disconnect"]
        }
    }

    public var framed: [UInt8] { frame(json.bytes) }
}

/// The lab -> hotspotd: what happened to the station's link.
public enum LinkEvent: Sendable, Hashable {
    /// The link is in the segment of `network` (its SSID, BSSID, security and signal as the topology has them);
    /// `rssi` in dBm. A new BSSID of the same SSID without `disassociated` in between is a roam.
    case associated(network: HotspotNetwork, rssi: Double, hotspot: String)
    /// The link left the segment (`reason`: the request, or the lab's fault).
    case disassociated(reason: String)
    /// A join or auto-join that could not happen (no such network, wrong password, nothing known in range).
    case rejected(reason: String)
    /// The signal of the current association changed (`rssi` in dBm).
    case signal(rssi: Double)

    public static let types = ["associated", "disassociated", "rejected", "signal"]

    public init(json: JSON) throws(ProtocolError) {
        let (type, f) = try messageType(json, side: "link")
        switch type {
        case "associated":
            guard let rssi = f.object["rssi"]?.doubleValue else { throw ProtocolError(.invalidField, "rssi: missing (expected dBm as a number)") }
            self = .associated(network: try f.network("network"), rssi: rssi, hotspot: try f.string("hotspot"))
        case "disassociated": self = .disassociated(reason: try f.string("reason"))
        case "rejected": self = .rejected(reason: try f.string("reason"))
        case "signal":
            guard let rssi = f.object["rssi"]?.doubleValue else { throw ProtocolError(.invalidField, "rssi: missing (expected dBm as a number)") }
            self = .signal(rssi: rssi)
        default:
            throw ProtocolError(.unknownType, "unknown link event \"\(type)\" (expected one of \(LinkEvent.types.joined(separator: ", ")))")
        }
    }

    public var json: JSON {
        switch self {
        case .associated(let network, let rssi, let hotspot):
            return ["type": "associated", "network": network.wire, "rssi": .number(rssi), "hotspot": .string(hotspot)]
        case .disassociated(let reason): return ["type": "disassociated", "reason": .string(reason)]
        case .rejected(let reason): return ["type": "rejected", "reason": .string(reason)]
        case .signal(let rssi): return ["type": "signal", "rssi": .number(rssi)]
        }
    }

    public var framed: [UInt8] { frame(json.bytes) }
}
