#if canImport(Glibc)
import Glibc
#endif
import HotspotProtocol
import HotspotSystem

/// An app's manager configuration in hotspotd (Apple's `NEHotspotManager` state): whether its providers take
/// part, the SSIDs it pre-evaluated (at most 2), and its evaluation provider. Set with `setManager`, read with
/// `getManager` on hotspotd's control socket (docs/PROTOCOL.md).
public struct HotspotManagerConfiguration: Sendable, Equatable {
    public var app: String
    public var isEnabled: Bool
    public var evaluatedSSIDs: [String]
    public var evaluationProviderBundleIdentifier: String?

    public init(app: String, isEnabled: Bool = false, evaluatedSSIDs: [String] = [], evaluationProviderBundleIdentifier: String? = nil) {
        self.app = app
        self.isEnabled = isEnabled
        self.evaluatedSSIDs = evaluatedSSIDs
        self.evaluationProviderBundleIdentifier = evaluationProviderBundleIdentifier
    }

    /// The most SSIDs `evaluatedSSIDs` may hold (Apple's limit).
    public static let maximumEvaluatedSSIDs = 2

    /// The first thing wrong with the configuration, checked before it is sent (hotspotd checks again):
    /// `evaluatedSSIDs: at most 2 SSIDs, got 3`, an empty SSID or one over 32 bytes.
    public func problem() -> String? {
        if evaluatedSSIDs.count > Self.maximumEvaluatedSSIDs {
            return "evaluatedSSIDs: at most \(Self.maximumEvaluatedSSIDs) SSIDs, got \(evaluatedSSIDs.count)"
        }
        for (i, ssid) in evaluatedSSIDs.enumerated() where ssid.isEmpty || ssid.utf8.count > 32 {
            return "evaluatedSSIDs[\(i)]: an SSID is 1 to 32 bytes, got \(ssid.utf8.count) (\"\(ssid)\")"
        }
        if app.isEmpty { return "app: the app's bundle identifier must not be empty" }
        return nil
    }

    /// `{"type":"setManager", ...}` (without requestID).
    public var setManagerJSON: JSON {
        var o: [String: JSON] = [
            "type": "setManager", "app": .string(app), "isEnabled": .bool(isEnabled),
            "evaluatedSSIDs": .array(evaluatedSSIDs.map(JSON.string)),
        ]
        if let id = evaluationProviderBundleIdentifier { o["evaluationProviderBundleIdentifier"] = .string(id) }
        return .object(o)
    }

    /// Reads a `manager` reply; the error names the field that is missing or wrong.
    public init(managerReply json: JSON, app: String) throws(HotspotHelperError) {
        guard json["type"]?.stringValue == "manager" else {
            throw HotspotHelperError("getManager for \(app): expected a \"manager\" reply, got \(json.text)")
        }
        guard let enabled = json["isEnabled"]?.boolValue else {
            throw HotspotHelperError("getManager for \(app): isEnabled: missing or not true/false in \(json.text)")
        }
        var ssids: [String] = []
        if let list = json["evaluatedSSIDs"], list != .null {
            guard let items = list.arrayValue else { throw HotspotHelperError("getManager for \(app): evaluatedSSIDs: expected an array of strings") }
            for (i, item) in items.enumerated() {
                guard let s = item.stringValue else { throw HotspotHelperError("getManager for \(app): evaluatedSSIDs[\(i)]: expected a string") }
                ssids.append(s)
            }
        }
        self.init(app: json["app"]?.stringValue ?? app, isEnabled: enabled, evaluatedSSIDs: ssids,
                  evaluationProviderBundleIdentifier: json["evaluationProviderBundleIdentifier"]?.stringValue)
    }
}

/// One request and its reply on hotspotd's control socket (what `NEHotspotManager` uses).
public enum HotspotManagerControl {
    public static let socketVariable = "HOTSPOT_CONTROL_SOCKET"
    public static let defaultSocketPath = "/run/hotspotd/control.sock"

    /// `$HOTSPOT_CONTROL_SOCKET`, else /run/hotspotd/control.sock.
    public static var socketPath: String { HotspotHelperEnvironment.variable(socketVariable) ?? defaultSocketPath }

    /// `getManager` for `app`.
    public static func load(app: String, socketPath: String? = nil, timeout: Duration = .seconds(5)) throws(HotspotHelperError) -> HotspotManagerConfiguration {
        let reply = try request(["type": "getManager", "app": .string(app)], what: "getManager for \(app)", socketPath: socketPath, timeout: timeout)
        return try HotspotManagerConfiguration(managerReply: reply, app: app)
    }

    /// `setManager` with `configuration` (checked here first: `problem()`).
    public static func save(_ configuration: HotspotManagerConfiguration, socketPath: String? = nil, timeout: Duration = .seconds(5)) throws(HotspotHelperError) {
        if let problem = configuration.problem() {
            throw HotspotHelperError("setManager for \(configuration.app): \(problem)")
        }
        let what = "setManager for \(configuration.app)"
        let reply = try request(configuration.setManagerJSON, what: what, socketPath: socketPath, timeout: timeout)
        guard reply["type"]?.stringValue == "ok" else { throw HotspotHelperError("\(what): expected ok, got \(reply.text)") }
    }

    /// Sends `json` and returns the reply; an `error` reply is thrown with hotspotd's code and message.
    static func request(_ json: JSON, what: String, socketPath: String?, timeout: Duration) throws(HotspotHelperError) -> JSON {
        let path = socketPath ?? self.socketPath
        let socket: UnixSocket
        do { socket = try UnixSocket.connect(path: path) } catch { throw HotspotHelperError("\(what): connect to hotspotd's control socket \(path): \(error)") }
        defer { socket.close() }
        do { try socket.writeAll(frame(json.bytes)) } catch { throw HotspotHelperError("\(what): send to \(path): \(error)") }
        var decoder = FrameDecoder(maximumLength: 16 << 20)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let end = SystemMonotonicClock.read() + timeout
        while true {
            let payload: [UInt8]?
            do { payload = try decoder.nextFrame() } catch { throw HotspotHelperError("\(what): bad reply from \(path): \(error)") }
            if let payload {
                let reply: JSON
                do { reply = try JSON.parse(payload) } catch { throw HotspotHelperError("\(what): bad reply from \(path): \(error)") }
                if reply["type"]?.stringValue == "trace" { continue }
                if reply["type"]?.stringValue == "error" {
                    throw HotspotHelperError("\(what): hotspotd refused: \(reply["code"]?.stringValue ?? "?"): \(reply["message"]?.stringValue ?? "")")
                }
                return reply
            }
            let left = end - SystemMonotonicClock.read()
            guard left > .zero else { throw HotspotHelperError("\(what): no reply from hotspotd at \(path) within \(timeout)") }
            guard socket.waitReadable(timeout: left) else { continue }
            let outcome: ReadOutcome
            do { outcome = try buffer.withUnsafeMutableBytes { p throws(SystemError) in try socket.read(into: p) } } catch {
                throw HotspotHelperError("\(what): read from \(path): \(error)")
            }
            switch outcome {
            case .bytes(let n): decoder.append(buffer[0..<n])
            case .wouldBlock: continue
            case .endOfFile: throw HotspotHelperError("\(what): hotspotd closed the control connection \(path) without a reply")
            }
        }
    }
}
