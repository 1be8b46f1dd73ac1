import Foundation
import HotspotCore
import Yams

/// A scenario file (`topologies/scenarios/*.yaml`, docs/SCENARIOS.md): a topology and the steps a person
/// (or the device) takes, with what must be seen after each.
public struct Scenario: Sendable {
    public var name: String
    public var description: String
    public var file: String
    /// The topology file, resolved relative to the scenario file.
    public var topologyPath: String
    /// The station that acts (nil: the topology's first).
    public var station: String?
    /// hotspotd's maintain interval in seconds (300 on the platform).
    public var maintainInterval: Double
    public var timeScale: Double
    /// Helper commands replacing the topology's (a deliberately broken helper, a test helper).
    public var helpers: [String]?
    public var steps: [ScenarioStep]
}

/// One step, where it stands in the file.
public struct ScenarioStep: Sendable {
    public var line: Int
    public var column: Int
    /// The step as written (`wait-state: Authenticated`).
    public var text: String
    public var action: ScenarioAction
}

public enum Connectivity: String, Sendable { case allowed, blocked }

public enum ScenarioAction: Sendable {
    /// Scan and show the list (filterScanList to every helper); optionally the annotations expected (nil: none).
    case showScanList(expect: [(ssid: String, annotation: String?)])
    case join(ssid: String, password: String?)
    case autoJoin
    case leave
    case waitState(String, timeout: Double)
    /// The states entered since the previous `expect-states` (or the start), exactly.
    case expectStates([String])
    /// A command sent since the start (optionally to `helper`, answered with `result`, with didJustJoin, with the
    /// network's signalStrength in `signal`); `absent`: none.
    case expectCommand(command: String, result: String?, helper: String?, didJustJoin: Bool?, absent: Bool,
                       signal: ClosedRange<Double>? = nil, count: Int? = nil)
    case expectNotification(helper: String?)
    case foreground(helper: String?)
    case type(helper: String, text: String)
    case expireSession(hotspot: String?)
    case logoff(helper: String, expectAccepted: Bool)
    case killHelper(String)
    /// SIGKILL hotspotd and start it again; the helpers come back `helperDelay` seconds later.
    case restartHotspotd(helperDelay: Double)
    case application(expect: Connectivity, url: String?)
    case expectAutoJoinDisabled(ssid: String, disabled: Bool)
    case expectCache(ssid: String, entry: String?)
    case sleep(Double)
    /// The hotspot's captive gate holds (or does not hold) the station in its authenticated set.
    case gate(authenticated: Bool, hotspot: String?)
    /// The portal changes on the server side: the hotspot's portal server is replaced by another kind.
    case portal(kind: String, hotspot: String?, settings: [String: String])
    /// The access point disappears (hostapd disabled) or comes back.
    case accessPoint(up: Bool, hotspot: String?)
    /// The hotspot's uplink to the internet goes down (a total outage) or comes back.
    case uplink(up: Bool, hotspot: String?)
    /// Latency, jitter, loss and a rate limit on the hotspot's uplink or radio side (netem); all zero: none.
    case linkQuality(hotspot: String?, side: LinkSide, latencyMS: Int, jitterMS: Int, lossPercent: Double, rateKbit: Int)
    /// The hotspot's DNS: no-answer, refused, servfail, hijack (every name answers with the gateway), private
    /// (public names answer with an RFC 1918 address) or normal (`HotspotLab.dnsModes`).
    case dns(mode: String, hotspot: String?)
    /// SIGSTOP (a hung helper) or SIGCONT.
    case stopHelper(String, stop: Bool)
    /// The station drops and re-joins `count` times at seeded random intervals, as devices do when they sleep.
    case flap(count: Int, minSeconds: Double, maxSeconds: Double, seed: UInt64)
    /// What stations receive from the hotspot's access points (or the one with `bssid`), in dBm; nil: normal.
    case signal(hotspot: String?, bssid: String?, dbm: Int?)
    /// The station's wpa_supplicant moves to the access point `bssid` of the same SSID (ROAM).
    case roam(bssid: String, timeout: Double)
}

/// Parses scenario files with the topology parser's YAML reader: every error is `file:line:column`.
public enum ScenarioParser {
    public static let stepKinds = [
        "show-scan-list", "join", "auto-join", "leave", "wait-state", "expect-states", "expect-command", "expect-notification",
        "foreground", "type", "expire-session", "logoff", "kill-helper", "restart-hotspotd", "application",
        "expect-auto-join-disabled", "expect-cache", "sleep", "gate", "portal", "ap", "uplink", "link", "stop-helper", "continue-helper",
        "flap", "dns", "signal", "roam",
    ]
    static let states = HotspotState.allCases.map(\.rawValue)
    static let commands = CommandType.allCases.map(\.description)
    static let results = HelperResult.allCases.map(\.description)

    public static func load(path: String) throws -> Scenario {
        guard let data = FileManager.default.contents(atPath: path) else {
            let code = errno
            throw TopologyError(file: path, line: 0, column: 0, field: "", message: "cannot read the file: \(String(cString: strerror(code)))")
        }
        return try parse(String(decoding: data, as: UTF8.self), file: path)
    }

    public static func parse(_ yaml: String, file: String) throws -> Scenario {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            throw TopologyParser.convert(error, file: file)
        }
        guard let root else {
            throw TopologyError(file: file, line: 1, column: 1, field: "", message: "the file is empty; expected a mapping with `topology:` and `steps:`")
        }
        let top = Field(node: root, path: "", file: file)
        let keys = try top.mapping(allowed: ["name", "description", "topology", "station", "maintain-interval", "time-scale", "helpers", "steps"],
                                   required: ["topology", "steps"])
        let name = try keys["name"]?.nonEmptyString() ?? ((file as NSString).lastPathComponent as NSString).deletingPathExtension
        let topology = try keys["topology"]!.nonEmptyString()
        let base = (file as NSString).deletingLastPathComponent
        let topologyPath = topology.hasPrefix("/") ? topology : (base.isEmpty ? topology : base + "/" + topology)
        let stepFields = try keys["steps"]!.list()
        guard !stepFields.isEmpty else { throw keys["steps"]!.error("expected at least one step") }
        return Scenario(
            name: name, description: try keys["description"]?.string() ?? "", file: file, topologyPath: topologyPath,
            station: try keys["station"]?.nonEmptyString(),
            maintainInterval: try keys["maintain-interval"].map { try number($0, in: 0.1...3600) } ?? 300,
            timeScale: try keys["time-scale"].map { try number($0, in: 0.001...100) } ?? 1,
            helpers: try keys["helpers"].map { try $0.list().map { try $0.nonEmptyString() } },
            steps: try stepFields.map(step))
    }

    static func number(_ field: Field, in range: ClosedRange<Double>) throws -> Double {
        guard case .scalar(let s) = field.node, s.style == .plain, let value = Double(s.string) else {
            throw field.error("expected a number in \(range.lowerBound)...\(range.upperBound), found \(field.kindName)")
        }
        guard range.contains(value) else { throw field.error("expected a number in \(range.lowerBound)...\(range.upperBound), found \(value)") }
        return value
    }

    static func isNull(_ field: Field) -> Bool { field.kindName == "null" }

    /// A BSSID, as written (lower case).
    static func bssid(_ field: Field) throws -> String {
        _ = try field.nonEmptyString()
        return try field.unicastMAC().text.lowercased()
    }

    static func oneOf(_ field: Field, _ allowed: [String], what: String) throws -> String {
        let value = try field.nonEmptyString()
        guard allowed.contains(value) else { throw field.error("unknown \(what) `\(value)`; expected one of: \(allowed.joined(separator: ", "))") }
        return value
    }

    static func step(_ field: Field) throws -> ScenarioStep {
        // A step is a one-key mapping (`wait-state: Authenticated`) or a bare word for steps without arguments.
        let kind: String
        let value: Field
        switch field.node {
        case .scalar:
            kind = try field.nonEmptyString()
            value = Field(node: .scalar(.init("null")), path: field.path + "." + kind, file: field.file)
        case .mapping(let mapping):
            guard mapping.count == 1, let (key, node) = mapping.first.map({ ($0.key, $0.value) }), let name = key.string else {
                throw field.error("expected one step per list item (a mapping with one key: \(stepKinds.joined(separator: ", ")))")
            }
            kind = name
            value = field.child(name, node)
        default:
            throw field.error("expected a step such as `wait-state: Authenticated`, found \(field.kindName)")
        }
        guard stepKinds.contains(kind) else {
            throw field.error("unknown step `\(kind)`; expected one of: \(stepKinds.joined(separator: ", "))")
        }
        var text = Self.render(field.node)
        if text.hasPrefix("{"), text.hasSuffix("}") { text = String(text.dropFirst().dropLast()) }
        let action = try Self.action(kind, value)
        return ScenarioStep(line: field.mark.line, column: field.mark.column, text: text, action: action)
    }

    /// A step in one line, flow style: `expect-command: {command: maintain, result: success}`.
    static func render(_ node: Node) -> String {
        switch node {
        case .scalar(let s): return s.string
        case .sequence(let seq): return "[" + seq.map(render).joined(separator: ", ") + "]"
        case .mapping(let m):
            let pairs = m.map { "\($0.key.string ?? "?"): \(render($0.value))" }
            return "{" + pairs.joined(separator: ", ") + "}"
        case .alias: return "*alias"
        }
    }

    static func action(_ kind: String, _ v: Field) throws -> ScenarioAction {
        switch kind {
        case "show-scan-list":
            if isNull(v) { return .showScanList(expect: []) }
            let keys = try v.mapping(allowed: ["expect"])
            guard let expect = keys["expect"], case .mapping(let m) = expect.node else {
                return .showScanList(expect: [])
            }
            return .showScanList(expect: try m.map { key, value in
                let f = expect.child(key.string ?? "?", value)
                return (ssid: key.string ?? "", annotation: isNull(f) ? nil : try f.string())
            })
        case "join":
            if case .scalar = v.node { return .join(ssid: try v.nonEmptyString(), password: nil) }
            let keys = try v.mapping(allowed: ["ssid", "password"], required: ["ssid"])
            return .join(ssid: try keys["ssid"]!.nonEmptyString(), password: try keys["password"]?.string())
        case "auto-join": return .autoJoin
        case "leave": return .leave
        case "restart-hotspotd":
            if isNull(v) { return .restartHotspotd(helperDelay: 0) }
            let keys = try v.mapping(allowed: ["helper-delay"])
            return .restartHotspotd(helperDelay: try keys["helper-delay"].map { try number($0, in: 0...60) } ?? 0)
        case "wait-state":
            if case .scalar = v.node { return .waitState(try oneOf(v, states, what: "state"), timeout: 30) }
            let keys = try v.mapping(allowed: ["state", "timeout"], required: ["state"])
            return .waitState(try oneOf(keys["state"]!, states, what: "state"), timeout: try keys["timeout"].map { try number($0, in: 0.1...600) } ?? 30)
        case "expect-states":
            return .expectStates(try v.list().map { try oneOf($0, states, what: "state") })
        case "expect-command":
            let keys = try v.mapping(allowed: ["command", "result", "helper", "did-just-join", "absent", "min-signal-strength", "max-signal-strength", "count"],
                                     required: ["command"])
            let low = try keys["min-signal-strength"].map { try number($0, in: 0...1) }
            let high = try keys["max-signal-strength"].map { try number($0, in: 0...1) }
            if let low, let high, low > high {
                throw keys["max-signal-strength"]!.error("expected max-signal-strength >= min-signal-strength (\(low)), found \(high)")
            }
            return .expectCommand(command: try oneOf(keys["command"]!, commands, what: "command"),
                                  result: try keys["result"].map { try oneOf($0, results, what: "result") },
                                  helper: try keys["helper"]?.nonEmptyString(), didJustJoin: try keys["did-just-join"]?.bool(),
                                  absent: try keys["absent"]?.bool() ?? false,
                                  signal: (low == nil && high == nil) ? nil : (low ?? 0)...(high ?? 1),
                                  count: try keys["count"]?.int(in: 1...1000))
        case "expect-notification":
            if isNull(v) { return .expectNotification(helper: nil) }
            return .expectNotification(helper: try v.nonEmptyString())
        case "foreground":
            return .foreground(helper: isNull(v) ? nil : try v.nonEmptyString())
        case "type":
            let keys = try v.mapping(allowed: ["helper", "text"], required: ["helper", "text"])
            return .type(helper: try keys["helper"]!.nonEmptyString(), text: try keys["text"]!.string())
        case "expire-session":
            return .expireSession(hotspot: isNull(v) ? nil : try v.nonEmptyString())
        case "logoff":
            if case .scalar = v.node { return .logoff(helper: try v.nonEmptyString(), expectAccepted: true) }
            let keys = try v.mapping(allowed: ["helper", "expect"], required: ["helper"])
            let expect = try keys["expect"].map { try oneOf($0, ["accepted", "refused"], what: "logoff outcome") } ?? "accepted"
            return .logoff(helper: try keys["helper"]!.nonEmptyString(), expectAccepted: expect == "accepted")
        case "kill-helper": return .killHelper(try v.nonEmptyString())
        case "application":
            if case .scalar = v.node {
                return .application(expect: Connectivity(rawValue: try oneOf(v, ["allowed", "blocked"], what: "connectivity"))!, url: nil)
            }
            let keys = try v.mapping(allowed: ["expect", "url"], required: ["expect"])
            return .application(expect: Connectivity(rawValue: try oneOf(keys["expect"]!, ["allowed", "blocked"], what: "connectivity"))!,
                                url: try keys["url"]?.nonEmptyString())
        case "expect-auto-join-disabled":
            if case .scalar = v.node { return .expectAutoJoinDisabled(ssid: try v.nonEmptyString(), disabled: true) }
            let keys = try v.mapping(allowed: ["ssid", "disabled"], required: ["ssid"])
            return .expectAutoJoinDisabled(ssid: try keys["ssid"]!.nonEmptyString(), disabled: try keys["disabled"]?.bool() ?? true)
        case "expect-cache":
            let keys = try v.mapping(allowed: ["ssid", "helper", "not-captive", "none"], required: ["ssid"])
            var entry: String?
            if let h = keys["helper"] { entry = try h.nonEmptyString() }
            if try keys["not-captive"]?.bool() == true { entry = "not captive" }
            if try keys["none"]?.bool() == true { entry = nil }
            return .expectCache(ssid: try keys["ssid"]!.nonEmptyString(), entry: entry)
        case "sleep":
            return .sleep(try number(v, in: 0...600))
        case "portal":
            if case .scalar = v.node { return .portal(kind: try oneOf(v, PortalCatalog.kinds + ["down"], what: "portal kind"), hotspot: nil, settings: [:]) }
            let keys = try v.mapping(allowed: ["kind", "hotspot", "settings"], required: ["kind"])
            var settings: [String: String] = [:]
            if let s = keys["settings"], case .mapping(let m) = s.node {
                for (key, value) in m {
                    let f = s.child(key.string ?? "?", value)
                    settings[key.string ?? ""] = try f.string()
                    if key.string == PortalTLS.setting, let problem = PortalTLS.problem(try f.string()) { throw f.error(problem) }
                }
            }
            return .portal(kind: try oneOf(keys["kind"]!, PortalCatalog.kinds + ["down"], what: "portal kind"),
                           hotspot: try keys["hotspot"]?.nonEmptyString(), settings: settings)
        case "ap", "uplink":
            let state: String
            var hotspot: String?
            if case .scalar = v.node {
                state = try oneOf(v, ["up", "down"], what: "\(kind) state")
            } else {
                let keys = try v.mapping(allowed: ["state", "hotspot"], required: ["state"])
                state = try oneOf(keys["state"]!, ["up", "down"], what: "\(kind) state")
                hotspot = try keys["hotspot"]?.nonEmptyString()
            }
            return kind == "ap" ? .accessPoint(up: state == "up", hotspot: hotspot) : .uplink(up: state == "up", hotspot: hotspot)
        case "link":
            let keys = try v.mapping(allowed: ["hotspot", "side", "latency-ms", "jitter-ms", "loss-percent", "rate-kbit"])
            let side = try keys["side"].map { LinkSide(rawValue: try oneOf($0, LinkSide.allCases.map(\.rawValue), what: "link side"))! } ?? .uplink
            return .linkQuality(hotspot: try keys["hotspot"]?.nonEmptyString(), side: side,
                                latencyMS: try keys["latency-ms"]?.int(in: 0...60_000) ?? 0, jitterMS: try keys["jitter-ms"]?.int(in: 0...60_000) ?? 0,
                                lossPercent: try keys["loss-percent"].map { try number($0, in: 0...100) } ?? 0,
                                rateKbit: try keys["rate-kbit"]?.int(in: 0...10_000_000) ?? 0)
        case "dns":
            let modes = HotspotLab.dnsModes
            if case .scalar = v.node { return .dns(mode: try oneOf(v, modes, what: "DNS mode"), hotspot: nil) }
            let keys = try v.mapping(allowed: ["mode", "hotspot"], required: ["mode"])
            return .dns(mode: try oneOf(keys["mode"]!, modes, what: "DNS mode"), hotspot: try keys["hotspot"]?.nonEmptyString())
        case "stop-helper": return .stopHelper(try v.nonEmptyString(), stop: true)
        case "continue-helper": return .stopHelper(try v.nonEmptyString(), stop: false)
        case "flap":
            let keys = try v.mapping(allowed: ["count", "min-seconds", "max-seconds", "seed"], required: ["count"])
            let low = try keys["min-seconds"].map { try number($0, in: 0...600) } ?? 1
            let high = try keys["max-seconds"].map { try number($0, in: 0...600) } ?? 5
            guard low <= high else { throw keys["max-seconds"]!.error("expected max-seconds >= min-seconds (\(low)), found \(high)") }
            return .flap(count: try keys["count"]!.int(in: 1...100), minSeconds: low, maxSeconds: high,
                         seed: UInt64(try keys["seed"]?.int(in: 0...Int(Int32.max)) ?? 1))
        case "signal":
            let keys = try v.mapping(allowed: ["hotspot", "bssid", "dbm"], required: ["dbm"])
            let field = keys["dbm"]!
            let range = HotspotLab.signalRange
            var dbm: Int?
            if case .scalar(let s) = field.node, s.string == "normal" {
                dbm = nil
            } else {
                guard case .scalar(let s) = field.node, s.style == .plain, let value = Int(s.string), range.contains(value) else {
                    throw field.error("expected a received signal in \(range.lowerBound)...\(range.upperBound) dBm (mac80211_hwsim gives "
                                      + "-50 dBm + the access point's tx power, 0 to 20 dBm) or `normal`, found \(field.kindName)")
                }
                dbm = value
            }
            return .signal(hotspot: try keys["hotspot"]?.nonEmptyString(), bssid: try keys["bssid"].map(bssid), dbm: dbm)
        case "roam":
            if case .scalar = v.node { return .roam(bssid: try bssid(v), timeout: 30) }
            let keys = try v.mapping(allowed: ["bssid", "timeout"], required: ["bssid"])
            return .roam(bssid: try bssid(keys["bssid"]!), timeout: try keys["timeout"].map { try number($0, in: 1...600) } ?? 30)
        case "gate":
            if case .scalar = v.node {
                return .gate(authenticated: try oneOf(v, ["authenticated", "unauthenticated"], what: "gate state") == "authenticated", hotspot: nil)
            }
            let keys = try v.mapping(allowed: ["expect", "hotspot"], required: ["expect"])
            return .gate(authenticated: try oneOf(keys["expect"]!, ["authenticated", "unauthenticated"], what: "gate state") == "authenticated",
                         hotspot: try keys["hotspot"]?.nonEmptyString())
        default:
            throw v.error("unknown step `\(kind)`")
        }
    }
}
