#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import HotspotCore
import HotspotProtocol
import HotspotSystem

/// Registration options (`kNEHotspotHelperOptionDisplayName` and where to find hotspotd).
public struct HotspotHelperOptions: Sendable {
    /// Shown next to the networks this helper claims; 1 to 15 characters.
    public var displayName: String
    /// The helper's stable identity (like a bundle identifier); default: $HOTSPOT_HELPER_IDENTIFIER, else the program name.
    public var identifier: String?
    /// hotspotd's helper socket; default: $HOTSPOT_HELPER_SOCKET, else /run/hotspotd/helper.sock.
    public var socketPath: String?
    /// How long `register` waits for the daemon's answer (`defaultRegistrationTimeout` unless given).
    public var registrationTimeout: Duration

    /// 60 s, for helpers and providers alike: on iOS registration answers at once; here hotspotd answers, and a loaded
    /// machine can starve it for seconds (it was 5 s, which made a correct helper exit as if it had failed). The bound is
    /// for a socket whose peer never answers; the lab bounds a helper's registration itself, by the CPU it spends.
    public static let defaultRegistrationTimeout: Duration = .seconds(60)

    public init(displayName: String, identifier: String? = nil, socketPath: String? = nil,
                registrationTimeout: Duration = defaultRegistrationTimeout)
    {
        self.displayName = displayName
        self.identifier = identifier
        self.socketPath = socketPath
        self.registrationTimeout = registrationTimeout
    }
}

/// The helper SDK, shaped like Apple's `NEHotspotHelper`: register once with a handler, answer commands,
/// ask for logoff, read the current network.
public enum HotspotHelper {
    /// The closure given to `register`: called on the registration's queue for every command.
    public typealias Handler = (HotspotHelperCommand) -> Void

    public static let defaultSocketPath = "/run/hotspotd/helper.sock"
    public static let socketEnvironmentVariable = "HOTSPOT_HELPER_SOCKET"
    public static let identifierEnvironmentVariable = "HOTSPOT_HELPER_IDENTIFIER"

    /// Registers this process as a helper. The handler is called on `queue` for every command.
    /// False on a second call in the same process, for a display name that is empty or longer than 15
    /// characters, or when hotspotd cannot be reached or refuses (see `lastError`).
    @discardableResult
    public static func register(options: HotspotHelperOptions, queue: DispatchQueue, handler: @escaping Handler) -> Bool {
        HelperClient.register(options: options, queue: queue, handler: handler)
    }

    /// Asks hotspotd to log off `network`. True (and a logoff command follows) only when it is the current
    /// authenticated network, this helper authenticated it, and this helper is in the foreground.
    public static func logoff(_ network: HotspotNetwork) -> Bool {
        HelperClient.shared?.logoff(network.snapshot) ?? false
    }

    /// The current network, with `isChosenHelper` true only when this helper is the chosen one. Empty when not
    /// associated or not registered.
    public static func supportedNetworkInterfaces() -> [HotspotNetwork] {
        HelperClient.shared?.supportedNetworkInterfaces() ?? []
    }

    /// Posts a user notification (what a helper does before answering authenticate with uiRequired).
    @discardableResult
    public static func postNotification(title: String, body: String) -> Bool {
        HelperClient.shared?.send(.notify(title: title, body: body)) ?? false
    }

    /// The last error the SDK saw (a refused registration, an error from the daemon, a second deliver()).
    public static var lastError: String? { HelperClient.lastError.withLock { $0 } }

    /// Whether this process is registered and connected.
    public static var isConnected: Bool { HelperClient.shared?.isConnected ?? false }
}

/// The connection to hotspotd: a blocking socket, a reader thread, requests matched by id.
public final class HelperClient: @unchecked Sendable {  // @unchecked: replies, nextRequest and connected are touched only with condMutex held; decoder, buffer and the hooks are set before the reader thread starts, then used by it alone
    /// The registered connection (set by `register`, or by a provider's runtime), nil before.
    static var shared: HelperClient? {
        get { sharedClient.withLock { $0 } }
        set { sharedClient.withLock { $0 = newValue } }
    }
    private static let sharedClient = Locked<HelperClient?>(nil)
    /// Whether `register` succeeded in this process; registering is done with this lock held.
    private static let registered = Locked(false)
    /// The last error the SDK saw (`HotspotHelper.lastError`).
    static let lastError = Locked<String?>(nil)

    let socket: UnixSocket
    let queue: DispatchQueue
    let handler: HotspotHelper.Handler
    let identifier: String
    private let writeLock = Mutex()
    private let cond = Condition()
    private let condMutex = Mutex()
    private var replies: [Int: DaemonMessage] = [:]
    private var nextRequest = 1
    /// Commands hotspotd cancelled (the reader thread adds, handlers ask).
    private let cancelled = Locked<Set<UInt64>>([])
    private var connected = true
    /// Whether the connection to hotspotd is up (false once the reader thread saw it end).
    var isConnected: Bool { condMutex.withLock { connected } }
    var decoder = FrameDecoder()
    /// The provider runtime (Providers/): sees every message first and takes the ones it handles (start, stop).
    var messageInterceptor: (@Sendable (JSON) -> Bool)?
    /// The provider runtime: told once when the connection to hotspotd ends.
    var onDisconnect: (@Sendable () -> Void)?
    /// Set for a provider (Providers/): `deliver()` is refused unless the runtime delivers (docs/PROVIDERS.md).
    var deliveryGate: ProviderDeliveryGate?

    init(socket: UnixSocket, queue: DispatchQueue, identifier: String, handler: @escaping HotspotHelper.Handler) {
        self.socket = socket
        self.queue = queue
        self.identifier = identifier
        self.handler = handler
    }

    static func setError(_ s: String) { lastError.withLock { $0 = s } }

    func report(_ e: HotspotHelperError) {
        HelperClient.setError(e.description)
        logLine("HotspotHelper: \(e.description)")
    }

    static func register(options: HotspotHelperOptions, queue: DispatchQueue, handler: @escaping HotspotHelper.Handler) -> Bool {
        registered.withLock { registered -> Bool in
            guard !registered else {
                setError("register called a second time in this process")
                return false
            }
            let name = options.displayName
            guard !name.isEmpty, name.count <= maximumDisplayNameLength else {
                setError("display name \"\(name)\" must be 1 to \(maximumDisplayNameLength) characters")
                return false
            }
            let env = { (k: String) -> String? in getenv(k).map { String(cString: $0) } }
            let path = options.socketPath ?? env(HotspotHelper.socketEnvironmentVariable) ?? HotspotHelper.defaultSocketPath
            let programName: String = CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? "helper") } ?? "helper"
            let id: String = options.identifier ?? env(HotspotHelper.identifierEnvironmentVariable) ?? programName
            do {
                let s = try UnixSocket.connect(path: path)
                let client = HelperClient(socket: s, queue: queue, identifier: id, handler: handler)
                try s.writeAll(HelperMessage.register(identifier: id, displayName: name, version: protocolVersion).framed)
                // The first message is the answer to register.
                guard let first = try client.readMessage(timeout: options.registrationTimeout) else {
                    setError("no answer from hotspotd at \(path) to register within \(options.registrationTimeout)")
                    return false
                }
                switch first {
                case .registered:
                    break
                case .error(let e, _):
                    setError("hotspotd refused registration of \"\(id)\": \(e.description)")
                    return false
                default:
                    setError("unexpected first message from hotspotd: \(first.json.text)")
                    return false
                }
                registered = true
                shared = client
                try client.startReader()
                return true
            } catch {
                setError("register with hotspotd at \(path): \(error)")
                return false
            }
        }
    }

    private var buffer = [UInt8](repeating: 0, count: 65_536)

    /// Blocking read of the next message (nil on timeout); throws on end of file or bad data.
    func readMessage(timeout: Duration?) throws -> DaemonMessage? {
        while true {
            if let payload = try decoder.nextFrame() {
                guard let intercept = messageInterceptor else { return try DaemonMessage(bytes: payload) }
                let json = try JSON.parse(payload)
                if intercept(json) { continue }
                return try DaemonMessage(json: json)
            }
            if let timeout {
                guard socket.waitReadable(timeout: timeout) else { return nil }
            }
            let outcome = try buffer.withUnsafeMutableBytes { p in try socket.read(into: p) }
            switch outcome {
            case .bytes(let n): decoder.append(buffer[0..<n])
            case .wouldBlock: continue
            case .endOfFile: throw HotspotHelperError("hotspotd closed the connection")
            }
        }
    }

    func startReader() throws {
        try SystemThread.detach("read hotspotd's messages") { [self] in readLoop() }
    }

    private func readLoop() {
        while true {
            let m: DaemonMessage?
            do {
                m = try readMessage(timeout: nil)
            } catch {
                report(HotspotHelperError("connection to hotspotd lost: \(error)"))
                break
            }
            guard let m else { continue }
            switch m {
            case .command(let c):
                let command = HotspotHelperCommand(c, client: self)
                let box = HandlerBox(handler: handler, command: command)
                queue.async { box.handler(box.command) }
            case .cancel(let id):
                cancelled.withLock { _ = $0.insert(id) }
            case .logoffResult(let rid, _), .interfaces(let rid, _):
                if let rid { fulfil(rid, m) }
            case .error(let e, _):
                report(HotspotHelperError("hotspotd: \(e.description)"))
            case .registered:
                break
            }
        }
        condMutex.lock()
        connected = false
        cond.broadcast()
        condMutex.unlock()
        onDisconnect?()
    }

    func isCancelled(_ id: UInt64) -> Bool { cancelled.withLock { $0.contains(id) } }

    @discardableResult
    func send(_ message: HelperMessage) -> Bool {
        send(json: message.json)
    }

    /// Sends one message as a frame (also the provider messages HelperMessage does not spell: started, stopped).
    @discardableResult
    func send(json: JSON) -> Bool {
        writeLock.withLock { () -> Bool in
            do {
                try socket.writeAll(frame(json.bytes))
                return true
            } catch {
                report(HotspotHelperError("send \(json["type"]?.stringValue ?? "?") to hotspotd: \(error)"))
                return false
            }
        }
    }

    /// Tells hotspotd what the SDK refused on this side (nothing else was sent for it): a `report` message,
    /// traced as `helperReport` so that a certification sees it (docs/PROTOCOL.md, "report"). Also logged to
    /// stderr and kept as `HotspotHelper.lastError`. False when it could not be sent.
    @discardableResult
    public func sendReport(kind: HelperReportKind, command: UInt64?, message: String) -> Bool {
        report(HotspotHelperError(message))
        return send(.report(kind: kind, command: command, message: message))
    }

    func respond(_ id: UInt64, result: HotspotHelperResult, network: HotspotCore.HotspotNetwork?, networkList: [HotspotCore.HotspotNetwork]?) -> Bool {
        send(.response(command: id, result: HelperResult(rawValue: result.rawValue) ?? .failure, network: network, networkList: networkList))
    }

    private func fulfil(_ rid: Int, _ m: DaemonMessage) {
        condMutex.lock()
        replies[rid] = m
        cond.broadcast()
        condMutex.unlock()
    }

    /// Sends a request carrying a fresh requestID and waits for its reply.
    private func call(_ make: (Int) -> HelperMessage, timeout: Duration = .seconds(10)) -> DaemonMessage? {
        condMutex.lock()
        let rid = nextRequest
        nextRequest += 1
        condMutex.unlock()
        guard send(make(rid)) else { return nil }
        let deadline = SystemMonotonicClock.read() + timeout
        condMutex.lock()
        defer { condMutex.unlock() }
        while replies[rid] == nil, connected {
            let left = deadline - SystemMonotonicClock.read()
            if left <= .zero { break }
            cond.wait(condMutex, timeout: min(left, .seconds(1)))
        }
        return replies.removeValue(forKey: rid)
    }

    func logoff(_ network: HotspotCore.HotspotNetwork) -> Bool {
        if case .logoffResult(_, let accepted)? = call({ .logoff(requestID: $0, network: network) }) { return accepted }
        return false
    }

    func supportedNetworkInterfaces() -> [HotspotNetwork] {
        if case .interfaces(_, let networks)? = call({ .supportedNetworkInterfaces(requestID: $0) }) {
            return networks.map(HotspotNetwork.init)
        }
        return []
    }
}

func logLine(_ s: String) {
    var b = Array(s.utf8)
    b.append(0x0A)
    b.withUnsafeBytes { p in _ = write(2, p.baseAddress, p.count) }
}

/// Carries the (non-Sendable, as in Apple's API) handler to the helper's queue.
struct HandlerBox: @unchecked Sendable {  // @unchecked: carries the vendor's handler (not declared Sendable, as Apple's is not) to the queue that calls it
    let handler: HotspotHelper.Handler
    let command: HotspotHelperCommand
}
