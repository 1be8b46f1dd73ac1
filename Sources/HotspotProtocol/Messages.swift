import HotspotCore

// The messages of both protocols (docs/PROTOCOL.md). Every message is a JSON object with a `type`.
// Decoding is strict about what it needs and names the field that is wrong; unknown fields are ignored
// (so a newer peer can add fields without breaking an older one).

// MARK: field access with errors naming the field

struct Fields {
    let object: [String: JSON]
    let path: String

    init(_ json: JSON, path: String) throws(ProtocolError) {
        guard case .object(let o) = json else {
            throw ProtocolError(.invalidField, "\(path): expected a JSON object")
        }
        object = o
        self.path = path
    }

    func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func has(_ key: String) -> Bool {
        if let v = object[key], v != .null { return true }
        return false
    }

    func string(_ key: String) throws(ProtocolError) -> String {
        guard let v = object[key] else { throw ProtocolError(.invalidField, "\(name(key)): missing (expected a string)") }
        guard let s = v.stringValue else { throw ProtocolError(.invalidField, "\(name(key)): expected a string") }
        return s
    }

    func optionalString(_ key: String) throws(ProtocolError) -> String? {
        guard has(key) else { return nil }
        return try string(key)
    }

    func bool(_ key: String, default value: Bool) throws(ProtocolError) -> Bool {
        guard has(key) else { return value }
        guard let b = object[key]!.boolValue else { throw ProtocolError(.invalidField, "\(name(key)): expected true or false") }
        return b
    }

    func int(_ key: String) throws(ProtocolError) -> Int {
        guard let v = object[key] else { throw ProtocolError(.invalidField, "\(name(key)): missing (expected an integer)") }
        guard let i = v.intValue else { throw ProtocolError(.invalidField, "\(name(key)): expected an integer") }
        return i
    }

    func optionalInt(_ key: String) throws(ProtocolError) -> Int? {
        guard has(key) else { return nil }
        return try int(key)
    }

    /// An SSID: `ssid_hex` (its bytes as hex digits, lossless) when present, else `ssid` (text, its UTF-8 bytes).
    func ssid() throws(ProtocolError) -> SSID {
        if let hex = try optionalString("ssid_hex") {
            guard let ssid = SSID(hex: hex) else {
                throw ProtocolError(.invalidField, "\(name("ssid_hex")): expected hex digits, two a byte, got \"\(hex.prefix(80))\"")
            }
            if ssid.bytes.count > SSID.maximumBytes {
                throw ProtocolError(.invalidField, "\(name("ssid_hex")): \(ssid.bytes.count) bytes; IEEE 802.11 allows at most \(SSID.maximumBytes)")
            }
            return ssid
        }
        return SSID(try string("ssid"))
    }

    func network(_ key: String) throws(ProtocolError) -> HotspotNetwork {
        guard let v = object[key] else { throw ProtocolError(.invalidField, "\(name(key)): missing (expected a network object)") }
        return try HotspotNetwork(wire: v, path: name(key))
    }

    func optionalNetwork(_ key: String) throws(ProtocolError) -> HotspotNetwork? {
        guard has(key) else { return nil }
        return try network(key)
    }

    func networks(_ key: String) throws(ProtocolError) -> [HotspotNetwork] {
        guard let v = object[key] else { throw ProtocolError(.invalidField, "\(name(key)): missing (expected an array of networks)") }
        guard let a = v.arrayValue else { throw ProtocolError(.invalidField, "\(name(key)): expected an array of networks") }
        var out: [HotspotNetwork] = []
        out.reserveCapacity(a.count)
        for (k, n) in a.enumerated() { out.append(try HotspotNetwork(wire: n, path: "\(name(key))[\(k)]")) }
        return out
    }

    func optionalNetworks(_ key: String) throws(ProtocolError) -> [HotspotNetwork]? {
        guard has(key) else { return nil }
        return try networks(key)
    }
}

// MARK: networks

extension HotspotNetwork {
    /// The wire form: `ssid`, `bssid` required; the rest optional with defaults (see docs/PROTOCOL.md).
    public init(wire json: JSON, path: String = "network") throws(ProtocolError) {
        let f = try Fields(json, path: path)
        let ssid = try f.ssid()
        let bssid = try f.string("bssid")
        var signal = 1.0
        if f.has("signalStrength") {
            guard let d = f.object["signalStrength"]!.doubleValue, d >= 0, d <= 1 else {
                throw ProtocolError(.invalidField, "\(f.name("signalStrength")): expected a number from 0.0 to 1.0")
            }
            signal = d
        }
        var security = SecurityType.open
        if let s = try f.optionalString("security") {
            guard let t = SecurityType(rawValue: s) else {
                throw ProtocolError(.invalidField, "\(f.name("security")): expected \"open\", \"wpa2-psk\" or \"wpa2-enterprise\", got \"\(s)\"")
            }
            security = t
        } else if try f.bool("isSecure", default: false) {
            security = .wpa2Personal
        }
        var confidence = Confidence.none
        if f.has("confidence") {
            let v = f.object["confidence"]!
            if let i = v.intValue, let c = Confidence(rawValue: i) {
                confidence = c
            } else if let s = v.stringValue, let c = Confidence.allCases.first(where: { $0.description == s }) {
                confidence = c
            } else {
                throw ProtocolError(.invalidField, "\(f.name("confidence")): expected 0 (none), 1 (low) or 2 (high)")
            }
        }
        self.init(
            rawSSID: ssid, bssid: bssid, signalStrength: signal, security: security,
            didAutoJoin: try f.bool("didAutoJoin", default: false),
            didJustJoin: try f.bool("didJustJoin", default: false),
            isChosenHelper: try f.bool("isChosenHelper", default: false),
            confidence: confidence, password: try f.optionalString("password"))
    }

    public var wire: JSON {
        var o: [String: JSON] = [
            "bssid": .string(bssid), "signalStrength": .number(signalStrength),
            "security": .string(security.rawValue), "isSecure": .bool(isSecure),
            "didAutoJoin": .bool(didAutoJoin), "didJustJoin": .bool(didJustJoin),
            "isChosenHelper": .bool(isChosenHelper), "confidence": .number(Double(confidence.rawValue)),
        ]
        if let password { o["password"] = .string(password) }
        rawSSID.addWireFields(to: &o)
        return .object(o)
    }
}

extension SSID {
    /// The wire form (docs/PROTOCOL.md): `ssid`, the text (exact for UTF-8 bytes, lossy otherwise, for peers
    /// that read only it), and `ssid_hex`, the bytes as hex, when the text is not exact or not safe for C
    /// strings: bytes that are not UTF-8, or a NUL byte (a reader takes `ssid_hex` first).
    public func addWireFields(to object: inout [String: JSON]) {
        object["ssid"] = .string(text)
        if needsHexOnTheWire { object["ssid_hex"] = .string(hex) }
    }

    /// The wire form carries `ssid_hex` beside `ssid`: the bytes are not UTF-8 or hold a NUL byte.
    public var needsHexOnTheWire: Bool { !isUTF8 || bytes.contains(0) }

    /// `ssid` and, for bytes that are not UTF-8, `ssid_hex` (`addWireFields`), for a trace record.
    public var wireFields: [String: JSON] {
        var o: [String: JSON] = [:]
        addWireFields(to: &o)
        return o
    }

    /// The SSID of a wire object: `ssid_hex` when present, else `ssid`; nil when neither reads.
    /// (`SSIDText.inline(wire:)` prints it.)
    public init?(wire json: JSON) {
        guard let f = try? Fields(json, path: ""), let ssid = try? f.ssid() else { return nil }
        self = ssid
    }
}

extension NetworkIdentity {
    public init(wire json: JSON, path: String) throws(ProtocolError) {
        let f = try Fields(json, path: path)
        let ssid = try f.ssid()
        let s = try f.optionalString("security") ?? "open"
        guard let t = SecurityType(rawValue: s) else {
            throw ProtocolError(.invalidField, "\(f.name("security")): expected \"open\", \"wpa2-psk\" or \"wpa2-enterprise\", got \"\(s)\"")
        }
        self.init(rawSSID: ssid, security: t)
    }

    public var wire: JSON {
        var o: [String: JSON] = ["security": .string(security.rawValue)]
        rawSSID.addWireFields(to: &o)
        return .object(o)
    }
}

func messageType(_ json: JSON, side: String) throws(ProtocolError) -> (String, Fields) {
    guard case .object = json else { throw ProtocolError(.malformedJSON, "a message must be a JSON object") }
    let f = try Fields(json, path: "")
    guard let t = json["type"] else { throw ProtocolError(.unknownType, "message has no \"type\" field") }
    guard let type = t.stringValue else { throw ProtocolError(.unknownType, "\"type\" must be a string") }
    return (type, f)
}

// MARK: helper -> daemon

/// What a helper sends to hotspotd.
public enum HelperMessage: Sendable, Hashable {
    case register(identifier: String, displayName: String, version: Int)
    case response(command: CommandID, result: HelperResult, network: HotspotNetwork?, networkList: [HotspotNetwork]?)
    case logoff(requestID: Int?, network: HotspotNetwork)
    case supportedNetworkInterfaces(requestID: Int?)
    case notify(title: String, body: String)
    /// What the SDK refused on the helper's side (a second `deliver()`, an answer to a withdrawn command, an
    /// invalid field): nothing else was sent for it. hotspotd answers nothing and traces it as `helperReport`.
    case report(kind: HelperReportKind, command: CommandID?, message: String)

    public static let types = ["register", "response", "logoff", "supportedNetworkInterfaces", "notify", "report"]

    public init(json: JSON) throws(ProtocolError) {
        let (type, f) = try messageType(json, side: "helper")
        switch type {
        case "register":
            self = .register(identifier: try f.string("identifier"), displayName: try f.string("displayName"), version: try f.int("version"))
        case "response":
            let id = try f.int("command")
            guard id >= 0 else { throw ProtocolError(.invalidField, "command: expected a command id (a non-negative integer)") }
            let r = try f.int("result")
            guard let result = HelperResult(rawValue: r) else {
                throw ProtocolError(.invalidField, "result: \(r) is not a result (0 success ... 6 temporaryFailure)")
            }
            self = .response(
                command: CommandID(id), result: result, network: try f.optionalNetwork("network"),
                networkList: try f.optionalNetworks("networkList"))
        case "logoff":
            self = .logoff(requestID: try f.optionalInt("requestID"), network: try f.network("network"))
        case "supportedNetworkInterfaces":
            self = .supportedNetworkInterfaces(requestID: try f.optionalInt("requestID"))
        case "notify":
            self = .notify(title: try f.string("title"), body: try f.string("body"))
        case "report":
            let kind = try f.string("kind")
            guard !kind.isEmpty else { throw ProtocolError(.invalidField, "kind: expected the name of what was refused, got an empty string") }
            let command = try f.optionalInt("command")
            if let command, command < 0 { throw ProtocolError(.invalidField, "command: expected a command id (a non-negative integer)") }
            self = .report(kind: HelperReportKind(rawValue: kind), command: command.map { CommandID($0) }, message: try f.string("message"))
        default:
            throw ProtocolError(.unknownType, "unknown message type \"\(type)\" (expected one of \(HelperMessage.types.joined(separator: ", ")))")
        }
    }

    public init(bytes: [UInt8]) throws(ProtocolError) {
        try self.init(json: JSON.parse(bytes))
    }

    public var json: JSON {
        switch self {
        case .register(let id, let name, let version):
            return ["type": "register", "identifier": .string(id), "displayName": .string(name), "version": .number(Double(version))]
        case .response(let command, let result, let network, let list):
            var o: [String: JSON] = [
                "type": "response", "command": .number(Double(command)), "result": .number(Double(result.rawValue)),
                "resultName": .string(result.description),
            ]
            if let network { o["network"] = network.wire }
            if let list { o["networkList"] = .array(list.map(\.wire)) }
            return .object(o)
        case .logoff(let rid, let network):
            var o: [String: JSON] = ["type": "logoff", "network": network.wire]
            if let rid { o["requestID"] = .number(Double(rid)) }
            return .object(o)
        case .supportedNetworkInterfaces(let rid):
            var o: [String: JSON] = ["type": "supportedNetworkInterfaces"]
            if let rid { o["requestID"] = .number(Double(rid)) }
            return .object(o)
        case .notify(let title, let body):
            return ["type": "notify", "title": .string(title), "body": .string(body)]
        case .report(let kind, let command, let message):
            var o: [String: JSON] = ["type": "report", "kind": .string(kind.rawValue), "message": .string(message)]
            if let command { o["command"] = .number(Double(command)) }
            return .object(o)
        }
    }

    /// The message as one frame (length prefix + JSON).
    public var framed: [UInt8] { frame(json.bytes) }
}

/// What the SDK refused on the helper's side (the `report` message's `kind`). An open set: hotspotd traces any
/// non-empty name, so a newer SDK can report a new kind to an older daemon.
public struct HelperReportKind: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }
    public var description: String { rawValue }

    /// `deliver()` called a second time on the same response.
    public static let secondDelivery: HelperReportKind = "secondDelivery"
    /// `deliver()` of a response to a command hotspotd withdrew (`cancel`).
    public static let withdrawnCommand: HelperReportKind = "withdrawnCommand"
    /// A response the SDK would not send because a field is invalid (hotspotd would refuse the frame).
    public static let invalidField: HelperReportKind = "invalidField"
    /// A provider called `deliver()` itself (its response is the value `handleCommand` returns).
    public static let deliverCalledByProvider: HelperReportKind = "deliverCalledByProvider"
}

// MARK: daemon -> helper

/// What hotspotd sends to a helper.
public enum DaemonMessage: Sendable, Hashable {
    case registered(identifier: String, version: Int)
    case command(Command)
    /// The command was withdrawn (another helper won, or the state was left): an answer is no longer wanted.
    case cancel(CommandID)
    case logoffResult(requestID: Int?, accepted: Bool)
    case interfaces(requestID: Int?, networks: [HotspotNetwork])
    case error(ProtocolError, offending: String?)

    public init(json: JSON) throws(ProtocolError) {
        let (type, f) = try messageType(json, side: "daemon")
        switch type {
        case "registered":
            self = .registered(identifier: try f.string("identifier"), version: try f.int("version"))
        case "command":
            let id = try f.int("id")
            let raw = try f.int("commandType")
            guard let t = CommandType(rawValue: raw) else {
                throw ProtocolError(.invalidField, "commandType: \(raw) is not a command type (0 ... 6)")
            }
            var deadline: Duration?
            if let ms = f.object["deadline_ms"]?.doubleValue {
                // Whole microseconds, rounded: the writer prints microseconds / 1000, and truncating its decimal text
                // back (2.002 * 1000 = 2001.99...) lost one microsecond per round trip (found by ci/fuzz.sh).
                guard ms.isFinite, ms >= 0, ms <= 1e12 else {
                    throw ProtocolError(.invalidField, "deadline_ms: \(ms) is not a deadline in milliseconds (0 ... 1e12)")
                }
                deadline = .microseconds(Int64((ms * 1000).rounded()))
            }
            self = .command(Command(
                id: CommandID(max(0, id)), type: t, helper: try f.optionalString("helper") ?? "",
                network: try f.optionalNetwork("network"), networkList: try f.optionalNetworks("networkList"),
                deadline: deadline))
        case "cancel":
            self = .cancel(CommandID(max(0, try f.int("id"))))
        case "logoffResult":
            self = .logoffResult(requestID: try f.optionalInt("requestID"), accepted: try f.bool("accepted", default: false))
        case "interfaces":
            self = .interfaces(requestID: try f.optionalInt("requestID"), networks: try f.networks("networks"))
        case "error":
            let c = try f.string("code")
            let code = ProtocolError.Code(rawValue: c) ?? .requestFailed
            self = .error(ProtocolError(code, try f.string("message")), offending: try f.optionalString("offending"))
        default:
            throw ProtocolError(.unknownType, "unknown message type \"\(type)\"")
        }
    }

    public init(bytes: [UInt8]) throws(ProtocolError) {
        try self.init(json: JSON.parse(bytes))
    }

    public var json: JSON {
        switch self {
        case .registered(let id, let version):
            return ["type": "registered", "identifier": .string(id), "version": .number(Double(version))]
        case .command(let c):
            var o: [String: JSON] = [
                "type": "command", "id": .number(Double(c.id)), "commandType": .number(Double(c.type.rawValue)),
                "commandName": .string(c.type.description), "helper": .string(c.helper),
            ]
            if let n = c.network { o["network"] = n.wire }
            if let l = c.networkList { o["networkList"] = .array(l.map(\.wire)) }
            if let d = c.deadline { o["deadline_ms"] = .number(d.milliseconds) }
            return .object(o)
        case .cancel(let id):
            return ["type": "cancel", "id": .number(Double(id))]
        case .logoffResult(let rid, let accepted):
            var o: [String: JSON] = ["type": "logoffResult", "accepted": .bool(accepted)]
            if let rid { o["requestID"] = .number(Double(rid)) }
            return .object(o)
        case .interfaces(let rid, let networks):
            var o: [String: JSON] = ["type": "interfaces", "networks": .array(networks.map(\.wire))]
            if let rid { o["requestID"] = .number(Double(rid)) }
            return .object(o)
        case .error(let e, let offending):
            var o: [String: JSON] = ["type": "error", "code": .string(e.code.rawValue), "message": .string(e.message)]
            if let offending { o["offending"] = .string(offending) }
            return .object(o)
        }
    }

    public var framed: [UInt8] { frame(json.bytes) }
}

extension Duration {
    /// The duration in (fractional) milliseconds.
    public var milliseconds: Double {
        let c = components
        return Double(c.seconds) * 1000 + Double(c.attoseconds) / 1e15
    }
}

// MARK: control

/// What a control client (the lab, `hotspot-lab ctl`) sends to hotspotd's control socket.
public enum ControlRequest: Sendable, Hashable {
    case associate(HotspotNetwork)
    case disassociate
    /// The associated network's signal strength changed (0.0-1.0); no transition (Event.signalChanged).
    case signal(Double)
    case ipUp
    case ipDown
    /// The scan list is shown; with `repeating`, filterScanList is sent again every refresh interval until `hideScanList`.
    case showScanList([HotspotNetwork], repeating: Bool)
    case hideScanList
    /// `logoff(network)` on behalf of a helper (network nil: the current association).
    case logoff(helper: String, network: NetworkIdentity?)
    /// The user brought a helper to the foreground (nil: none).
    case foreground(helper: String?)
    case status
    /// Stream every trace record to this connection from now on.
    case subscribeTrace
    /// Station (hotspotd with `--wpa-supplicant`): the user joins `ssid` by hand (didAutoJoin false). Without
    /// `password`, a secure network uses the password a helper set in its filterScanList answer.
    case join(ssid: SSID, password: String?)
    /// Station: the user leaves the current network (no automatic re-join until `autoJoin`).
    case leave
    /// Station: let the device join known networks on its own (didAutoJoin true), except those whose
    /// auto-join a failure disabled.
    case autoJoin
    /// A note for the trace (`labAction`): what the lab did to the world that hotspotd cannot see (a step of
    /// a scenario, the user typing into a helper's UI), so a replay can do it again.
    case record(JSON)
    /// Sets an app's manager configuration (`NEHotspotManager.saveToPreferences`).
    case setManager(app: String, ManagerConfiguration)
    /// Reads an app's manager configuration (`loadFromPreferences`); the reply is `manager`.
    case getManager(app: String)
    /// The armed maintain timer fires now (the lab's clock jumps to it: the platform's interval is 300 s), exactly as
    /// when it runs out; an error when none is armed (hotspotd arms it on entering Authenticated), its message
    /// containing `noMaintainTimerArmed`.
    case fireMaintainTimer

    /// Words of the `requestFailed` error `fireMaintainTimer` gets when no maintain timer is armed (certify tells it
    /// from a lab failure by them).
    public static let noMaintainTimerArmed = "no maintain timer is armed"

    public static let types = [
        "associate", "disassociate", "signal", "ipUp", "ipDown", "showScanList", "hideScanList", "logoff", "foreground",
        "status", "subscribeTrace", "join", "leave", "autoJoin", "record", "setManager", "getManager", "fireMaintainTimer",
    ]

    public init(json: JSON) throws(ProtocolError) {
        let (type, f) = try messageType(json, side: "control")
        switch type {
        case "associate": self = .associate(try f.network("network"))
        case "disassociate": self = .disassociate
        case "signal":
            guard let v = f.object["signalStrength"] else { throw ProtocolError(.invalidField, "signalStrength: missing (expected a number in 0...1)") }
            guard let strength = v.doubleValue, strength >= 0, strength <= 1 else {
                throw ProtocolError(.invalidField, "signalStrength: expected a number in 0...1")
            }
            self = .signal(strength)
        case "ipUp": self = .ipUp
        case "ipDown": self = .ipDown
        case "showScanList": self = .showScanList(try f.networks("networks"), repeating: try f.bool("repeating", default: false))
        case "hideScanList": self = .hideScanList
        case "logoff":
            var identity: NetworkIdentity?
            if f.has("network") { identity = try NetworkIdentity(wire: f.object["network"]!, path: "network") }
            self = .logoff(helper: try f.string("helper"), network: identity)
        case "foreground": self = .foreground(helper: try f.optionalString("helper"))
        case "status": self = .status
        case "subscribeTrace": self = .subscribeTrace
        case "join": self = .join(ssid: try f.ssid(), password: try f.optionalString("password"))
        case "leave": self = .leave
        case "autoJoin": self = .autoJoin
        case "record":
            guard let what = f.object["what"], case .object = what else {
                throw ProtocolError(.invalidField, "what: missing or not an object (expected the lab action to record)")
            }
            self = .record(what)
        case "setManager": self = .setManager(app: try f.string("app"), try ManagerConfiguration(json: json))
        case "getManager": self = .getManager(app: try f.string("app"))
        case "fireMaintainTimer": self = .fireMaintainTimer
        default:
            throw ProtocolError(.unknownType, "unknown control request \"\(type)\" (expected one of \(ControlRequest.types.joined(separator: ", ")))")
        }
    }

    public var json: JSON {
        switch self {
        case .associate(let n): return ["type": "associate", "network": n.wire]
        case .disassociate: return ["type": "disassociate"]
        case .signal(let strength): return ["type": "signal", "signalStrength": .number(strength)]
        case .ipUp: return ["type": "ipUp"]
        case .ipDown: return ["type": "ipDown"]
        case .showScanList(let l, let r): return ["type": "showScanList", "networks": .array(l.map(\.wire)), "repeating": .bool(r)]
        case .hideScanList: return ["type": "hideScanList"]
        case .logoff(let h, let n):
            var o: [String: JSON] = ["type": "logoff", "helper": .string(h)]
            if let n { o["network"] = n.wire }
            return .object(o)
        case .foreground(let h): return ["type": "foreground", "helper": h.map(JSON.string) ?? .null]
        case .status: return ["type": "status"]
        case .subscribeTrace: return ["type": "subscribeTrace"]
        case .join(let ssid, let password):
            var o: [String: JSON] = ["type": "join"]
            ssid.addWireFields(to: &o)
            if let password { o["password"] = .string(password) }
            return .object(o)
        case .leave: return ["type": "leave"]
        case .autoJoin: return ["type": "autoJoin"]
        case .record(let what): return ["type": "record", "what": what]
        case .setManager(let app, let config):
            var o = config.fields
            o["type"] = "setManager"
            o["app"] = .string(app)
            if config.evaluationProviderBundleIdentifier == nil { o["evaluationProviderBundleIdentifier"] = nil }
            return .object(o)
        case .getManager(let app): return ["type": "getManager", "app": .string(app)]
        case .fireMaintainTimer: return ["type": "fireMaintainTimer"]
        }
    }

    public var framed: [UInt8] { frame(json.bytes) }
}

/// Replies on the control socket are JSON objects with a `type`: `ok`, `logoffResult`, `status`, `trace`
/// (one per trace record after `subscribeTrace`) or `error`; each echoes the request's `requestID` if given.
public enum ControlReply {
    public static func ok(requestID: JSON?) -> JSON { with(["type": "ok"], requestID) }
    public static func error(_ e: ProtocolError, requestID: JSON?) -> JSON {
        with(["type": "error", "code": .string(e.code.rawValue), "message": .string(e.message)], requestID)
    }

    public static func with(_ object: [String: JSON], _ requestID: JSON?) -> JSON {
        var o = object
        if let requestID { o["requestID"] = requestID }
        return .object(o)
    }
}

extension SSIDText {
    /// The SSID of a wire object or trace record (`ssid_hex` first, else `ssid`) as it may appear in a line of
    /// output (`inline`: escaped when anything in it could break the line or drive a terminal); `?` if none.
    public static func inline(wire json: JSON?) -> String {
        json.flatMap(SSID.init(wire:)).map(inline) ?? "?"
    }
}
