// `NSMutableURLRequest.bind(to:)` with `URLSession` (FoundationNetworking): a request bound to a command goes
// over the SDK's marked sockets (SO_MARK 0x4853), so it gets through the station's IP suppression; a request
// that is not bound goes the ordinary way and stays blocked until Authenticated.
//
// Where the binding lives. On iOS the binding belongs to the request and survives every change to it. On Linux a
// request copies only its own fields (URL, `mainDocumentURL`, cache policy, timeout, method, headers, body, service
// type, cellular, cookies and pipelining flags): `URLProtocol.setProperty(_:forKey:in:)` properties are dropped by
// every copy (`as URLRequest`, any change to a `URLRequest`: NSURLRequest's copy does not carry them; checked by
// `URLSessionFidelityTests.protocolPropertiesDoNotSurvive`). So `bind(to:)` writes the binding into
// `mainDocumentURL` (`x-hotspot-bound:<token>`, the one copied field a helper does not use to talk to a portal),
// and `url`, method, headers and body stay as the helper wrote them: setting a new `url` keeps the binding.
// `HotspotCommandURLProtocol`, first in the sessions of SessionRouting.swift, claims such requests and serves
// them as URLSession does (BoundURLLoader.swift).
@_spi(Compat) import HotspotHelper
import Synchronization

extension NSMutableURLRequest {
    /// Binds the request to `command` (Apple's `bind(to:)`): a `URLSession` task made from it runs over the
    /// command's marked sockets and within the command's deadline, whatever its URL, method, headers or body
    /// become afterwards. `mainDocumentURL` carries the binding (see the top of this file).
    public func bind(to command: NEHotspotHelperCommand) {
        HotspotCommandURLProtocol.registerOnce()
        mainDocumentURL = BoundRequests.shared.add(command)
    }
}

extension URLRequest {
    /// `bind(to:)` for a `URLRequest` (Apple has it on `NSMutableURLRequest` only).
    public mutating func bind(to command: NEHotspotHelperCommand) {
        HotspotCommandURLProtocol.registerOnce()
        mainDocumentURL = BoundRequests.shared.add(command)
    }

    /// Whether the request is bound to a command. Not Apple's.
    public var isBoundToHotspotCommand: Bool { BoundRequests.shared.binding(self) != nil }
}

/// The bindings requests carry (a token in `mainDocumentURL`), and their commands (weakly: a finished command
/// is not kept alive; its requests stay bound: they still go over marked sockets). Bounded: the oldest are
/// forgotten first.
final class BoundRequests: Sendable {
    static let shared = BoundRequests()
    static let capacity = 4096
    /// The scheme of the `mainDocumentURL` that carries a binding.
    static let scheme = "x-hotspot-bound"
    /// The bindings by key, their keys oldest first, and the last key's number.
    private struct State {
        var bindings: [String: Binding] = [:]
        var order: [String] = []
        var next: UInt64 = 0
    }

    private let state = Mutex(State())

    struct Binding {
        weak var command: HotspotHelperCommand?
    }

    /// A new binding to `command`: the URL that carries it.
    func add(_ command: HotspotHelperCommand) -> URL {
        state.withLock { state in
            state.next += 1
            let key = "\(ProcessInfo.processInfo.processIdentifier)-\(state.next)"
            state.bindings[key] = Binding(command: command)
            state.order.append(key)
            if state.order.count > Self.capacity {
                for old in state.order.prefix(state.order.count - Self.capacity) { state.bindings[old] = nil }
                state.order.removeFirst(state.order.count - Self.capacity)
            }
            return URL(string: "\(Self.scheme):\(key)")!
        }
    }

    /// Whether `request` carries a binding (what `HotspotCommandURLProtocol` claims).
    static func carriesBinding(_ request: URLRequest) -> Bool { request.mainDocumentURL?.scheme == scheme }

    /// The binding `request` carries, nil when it is not bound (or its binding was forgotten).
    func binding(_ request: URLRequest) -> Binding? {
        guard let mark = request.mainDocumentURL, mark.scheme == Self.scheme else { return nil }
        let key = String(mark.absoluteString.dropFirst(Self.scheme.count + 1))
        return state.withLock { $0.bindings[key] }
    }
}
