#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import HotspotProtocol
import HotspotSystem

/// Where a provider registers and as what. hotspotd sets all of it in the environment when it launches a
/// declared provider (docs/PROTOCOL.md, "Lifecycle"); tests pass it directly.
public struct HotspotProviderOptions: Sendable {
    /// `$HOTSPOT_HELPER_SOCKET`.
    public var socketPath: String
    /// The provider's declared identifier, `$HOTSPOT_HELPER_IDENTIFIER` (`com.example.portal.evaluation`).
    public var identifier: String
    /// The app's bundle identifier, `$HOTSPOT_APP` (`com.example.portal`).
    public var app: String
    /// `$HOTSPOT_PROVIDER_ROLE`; nil: the provider type's role. A role that is not the type's is refused.
    public var role: HotspotProviderRole?
    /// The `displayName` of `register` (hotspotd shows the app's declared name); default: the app identifier's
    /// last component, cut to 15 characters.
    public var displayName: String?
    /// How long registration waits for hotspotd's answer (`HotspotHelperOptions.defaultRegistrationTimeout` unless given).
    public var registrationTimeout: Duration

    public static let roleVariable = "HOTSPOT_PROVIDER_ROLE"
    public static let appVariable = "HOTSPOT_APP"

    public init(socketPath: String, identifier: String, app: String, role: HotspotProviderRole? = nil,
                displayName: String? = nil, registrationTimeout: Duration = HotspotHelperOptions.defaultRegistrationTimeout)
    {
        self.socketPath = socketPath
        self.identifier = identifier
        self.app = app
        self.role = role
        self.displayName = displayName
        self.registrationTimeout = registrationTimeout
    }

    /// The options hotspotd's environment gives, or the error naming the variable that is missing or wrong.
    public static func fromEnvironment() -> Result<HotspotProviderOptions, HotspotHelperError> {
        let env = HotspotHelperEnvironment.variable
        guard let app = env(appVariable) else {
            return .failure(HotspotHelperError("\(appVariable) is not set: a provider is launched by hotspotd for a declared app (docs/PROVIDERS.md)"))
        }
        guard let identifier = env(HotspotHelper.identifierEnvironmentVariable) else {
            return .failure(HotspotHelperError("\(HotspotHelper.identifierEnvironmentVariable) is not set: hotspotd sets the provider's declared identifier"))
        }
        var role: HotspotProviderRole?
        if let text = env(roleVariable) {
            guard let r = HotspotProviderRole(rawValue: text) else {
                let known = HotspotProviderRole.allCases.map(\.rawValue).joined(separator: " or ")
                return .failure(HotspotHelperError("\(roleVariable) is \"\(text)\": expected \(known)"))
            }
            role = r
        }
        let socket = env(HotspotHelper.socketEnvironmentVariable) ?? HotspotHelper.defaultSocketPath
        return .success(HotspotProviderOptions(socketPath: socket, identifier: identifier, app: app, role: role))
    }
}

/// How a provider's run ended.
public enum HotspotProviderExit: Sendable, Equatable, CustomStringConvertible {
    /// hotspotd stopped it (`stop`), it answered `stopped`.
    case stopped(HotspotProviderStopReason)
    /// The connection ended before a stop.
    case disconnected(String)
    /// It could not register (no daemon, refused, bad environment).
    case registrationFailed(String)

    /// 0 after stop, 1 when hotspotd went away first, 2 when registration failed.
    public var exitCode: Int32 {
        switch self {
        case .stopped: 0
        case .disconnected: 1
        case .registrationFailed: 2
        }
    }

    public var description: String {
        switch self {
        case .stopped(let reason): "stopped (\(reason))"
        case .disconnected(let why): "disconnected before stop: \(why)"
        case .registrationFailed(let why): "registration failed: \(why)"
        }
    }
}

/// Runs a provider against hotspotd: register with role and app, answer `start` with the provider's `start()`,
/// hand it the commands and deliver what it returns, refuse (and report) its own `deliver()`, answer `stop`
/// with its `stop(reason:)` and `stopped`, then return. `HotspotProvider.main()` calls it and exits.
public enum HotspotProviderRuntime {
    /// `installAsShared`: make this connection the process's (for `HotspotHelper.postNotification`,
    /// `supportedNetworkInterfaces`, `logoff`). The `@main` entry does; in-process tests may not.
    public static func run<P: HotspotProvider>(_ type: P.Type, options: Result<HotspotProviderOptions, HotspotHelperError>,
                                               installAsShared: Bool = true) async -> HotspotProviderExit
    {
        switch options {
        case .failure(let error):
            logLine("HotspotHelper: provider \(P.self): \(error.description)")
            return .registrationFailed(error.description)
        case .success(let options):
            return await run(type, options: options, installAsShared: installAsShared)
        }
    }

    public static func run<P: HotspotProvider>(_ type: P.Type, options: HotspotProviderOptions,
                                               installAsShared: Bool = true) async -> HotspotProviderExit
    {
        let role = P.providerRole
        let name = "\(role) \(options.identifier) of \(options.app)"
        func failed(_ why: String) -> HotspotProviderExit {
            let text = "register \(name) with hotspotd at \(options.socketPath): \(why)"
            HelperClient.setError(text)
            logLine("HotspotHelper: \(text)")
            return .registrationFailed(text)
        }
        if let declared = options.role, declared != role {
            return failed("\(HotspotProviderOptions.roleVariable) is \(declared) but \(P.self) is an \(role)")
        }
        guard !options.app.isEmpty, !options.identifier.isEmpty else { return failed("the app and the identifier must not be empty") }
        let displayName = options.displayName ?? String((options.app.split(separator: ".").last.map(String.init) ?? options.app).prefix(15))

        let (events, sink) = AsyncStream<ProviderEvent>.makeStream()
        let socket: UnixSocket
        do { socket = try UnixSocket.connect(path: options.socketPath) } catch { return failed("\(error)") }
        let queue = DispatchQueue(label: "hotspot-provider", attributes: .concurrent)
        let client = HelperClient(socket: socket, queue: queue, identifier: options.identifier) { command in
            sink.yield(.command(command))
        }
        let wireRole: ProviderRole = role == .evaluationProvider ? .evaluationProvider : .authenticationProvider
        let register = Registration(identifier: options.identifier, displayName: displayName, version: protocolVersion,
                                    role: wireRole, app: options.app).json
        // hotspotd's error codes for providers (unknownApp, undeclaredRole) may be newer than this SDK's
        // ProtocolError.Code: keep the code as sent.
        let rawError = ProviderRawBox()
        client.messageInterceptor = { json in
            if json["type"]?.stringValue == "error" { rawError.set(json) }
            return false
        }
        do {
            try socket.writeAll(frame(register.bytes))
            guard let first = try client.readMessage(timeout: options.registrationTimeout) else {
                socket.close()
                return failed("no answer within \(options.registrationTimeout)")
            }
            switch first {
            case .registered: break
            case .error(let e, _):
                socket.close()
                let raw = rawError.get()
                let code = raw?["code"]?.stringValue ?? e.code.rawValue
                return failed("refused: \(code): \(raw?["message"]?.stringValue ?? e.message)")
            default:
                socket.close()
                return failed("unexpected first message \(first.json.text)")
            }
        } catch {
            socket.close()
            return failed("\(error)")
        }

        let gate = ProviderDeliveryGate(describe: name, role: role, client: client)
        client.deliveryGate = gate
        client.messageInterceptor = { json in
            switch json["type"]?.stringValue {
            case "start":
                sink.yield(.start)
                return true
            case "stop":
                // A reason this SDK does not know is still a stop (as .none); the name is logged as sent.
                let text = json["reason"]?.stringValue ?? "none"
                let known = (try? LifecycleMessage(json: json)).flatMap { m -> HotspotProviderStopReason? in
                    if case .stop(let r) = m { return HotspotProviderStopReason(name: r.rawValue) }
                    return nil
                }
                sink.yield(.stop(known ?? .none, text))
                return true
            default:
                return false
            }
        }
        client.onDisconnect = { sink.yield(.disconnected) }
        if installAsShared { HelperClient.shared = client }
        do { try client.startReader() } catch { return failed("\(error)") }
        logLine("HotspotHelper: registered \(name)")

        let provider = ProviderBox(P())
        var started = false
        var startAnswered = false
        var iterator = events.makeAsyncIterator()
        while true {
            // The stream only ends when the sink is dropped, which is after this loop.
            guard let event = await iterator.next() else { return .disconnected("the event stream ended") }
            switch event {
            case .start:
                guard !startAnswered else {
                    logLine("HotspotHelper: \(name): a second start ignored")
                    continue
                }
                startAnswered = true
                started = await provider.value.start()
                logLine("HotspotHelper: \(name): start() returned \(started)")
                client.send(json: LifecycleMessage.started(ok: started).json)
            case .command(let command):
                guard started, !gate.isStopped else {
                    let why = gate.isStopped ? "after stop" : startAnswered ? "start() returned false" : "before start"
                    logLine("HotspotHelper: \(name): \(command.commandType) command \(command.identifier) \(why): not handled")
                    continue
                }
                guard role.commandTypes.contains(command.commandType) else {
                    logLine("HotspotHelper: \(name): \(command.commandType) command \(command.identifier) is not for an \(role): commandNotRecognized")
                    gate.deliver(command.createResponse(.commandNotRecognized), for: command)
                    continue
                }
                Task {
                    let response = await provider.value.handleCommand(command)
                    gate.deliver(response, for: command)
                }
            case .stop(let reason, let text):
                gate.stop()
                logLine("HotspotHelper: \(name): stop (\(text))")
                await provider.value.stop(reason: reason)
                client.send(json: LifecycleMessage.stopped.json)
                client.socket.shutdownWrite()
                return .stopped(reason)
            case .disconnected:
                gate.stop()
                logLine("HotspotHelper: \(name): hotspotd closed the connection before stop")
                return .disconnected("hotspotd closed the connection before stop")
            }
        }
    }
}

final class ProviderRawBox: @unchecked Sendable {  // @unchecked: `value` is touched only with `lock` held
    private let lock = Mutex()
    private var value: JSON?
    func set(_ json: JSON) { lock.withLock { value = json } }
    func get() -> JSON? { lock.withLock { value } }
}

enum ProviderEvent: Sendable {
    case start
    case stop(HotspotProviderStopReason, String)
    case command(HotspotHelperCommand)
    case disconnected
}

/// The provider instance, handed to the tasks that run its commands (Apple's providers are not Sendable either:
/// the framework calls them from its own queue).
struct ProviderBox: @unchecked Sendable {  // @unchecked: carries the vendor's provider (not declared Sendable, as Apple's are not) to the one task that calls it
    let value: any HotspotProvider
    init(_ value: any HotspotProvider) { self.value = value }
}

/// Lets the runtime's delivery through and refuses the provider's own `deliver()` (reported as
/// `deliverCalledByProvider`); after stop nothing is delivered.
final class ProviderDeliveryGate: @unchecked Sendable {  // @unchecked: its sets and flags are touched only with `lock` held
    private let lock = Mutex()
    private var admitted: Set<ObjectIdentifier> = []
    private var stopped = false
    private let describe: String
    private let role: HotspotProviderRole
    private weak var client: HelperClient?

    init(describe: String, role: HotspotProviderRole, client: HelperClient) {
        self.describe = describe
        self.role = role
        self.client = client
    }

    /// The report kind for traffic an evaluation provider attempts through the SDK.
    static let evaluationTrafficKind: HelperReportKind = "networkFromEvaluationProvider"

    /// Called before every command socket the SDK opens for `command` (`command.http`, `createTCPConnection`, ...):
    /// an evaluation provider has no network (hotspotd runs it in a namespace with only `lo`), so its attempt is
    /// reported (`report` `networkFromEvaluationProvider`) and then fails on its own (no route).
    func noteTraffic(_ command: HotspotHelperCommand, _ operation: String, _ target: String) {
        guard role == .evaluationProvider else { return }
        let text = "the \(describe) tried \(operation) \(target) for \(command.commandType) command \(command.identifier): "
            + "an evaluation provider has no network (it decides from the network and the scan list)"
        client?.sendReport(kind: Self.evaluationTrafficKind, command: command.identifier, message: text)
    }

    var isStopped: Bool { lock.withLock { stopped } }

    func stop() { lock.withLock { stopped = true } }

    /// Called by `HotspotHelperResponse.deliver()`: true only for the runtime's own delivery.
    func admits(_ response: HotspotHelperResponse) -> Bool {
        if lock.withLock({ admitted.remove(ObjectIdentifier(response)) != nil }) { return true }
        let command = response.command
        let text = "deliver() called by the \(describe) on its \(response.result) response to \(command.commandType) command "
            + "\(command.identifier): refused (a provider returns its response from handleCommand and the SDK delivers it)"
        client?.sendReport(kind: .deliverCalledByProvider, command: command.identifier, message: text)
        return false
    }

    /// Delivers what `handleCommand` returned for `command`, unless the provider was stopped meanwhile, hotspotd
    /// withdrew the command, or the response is another command's.
    func deliver(_ response: HotspotHelperResponse, for command: HotspotHelperCommand) {
        let label = "\(command.commandType) command \(command.identifier)"
        guard response.command === command else {
            let text = "handleCommand for \(label) of the \(describe) returned a response made for command "
                + "\(response.command.identifier): not delivered"
            client?.sendReport(kind: .invalidField, command: command.identifier, message: text)
            return
        }
        let go = lock.withLock { () -> Bool in
            guard !stopped else { return false }
            admitted.insert(ObjectIdentifier(response))
            return true
        }
        guard go else {
            logLine("HotspotHelper: \(describe): the response to \(label) came after stop: not delivered")
            return
        }
        if command.isCancelled {
            lock.withLock { _ = admitted.remove(ObjectIdentifier(response)) }
            logLine("HotspotHelper: \(describe): \(label) was withdrawn by hotspotd: its response is not delivered")
            return
        }
        if !response.deliver() {
            logLine("HotspotHelper: \(describe): the response to \(label) could not be delivered: \(HotspotHelper.lastError ?? "?")")
        }
    }
}
