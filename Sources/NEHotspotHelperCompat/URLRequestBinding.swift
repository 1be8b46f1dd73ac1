// `NSMutableURLRequest.bind(to:)` with `URLSession` (FoundationNetworking): a request bound to a command goes
// over the SDK's marked sockets (SO_MARK 0x4853), so it gets through the station's IP suppression; a request
// that is not bound goes the ordinary way and stays blocked until Authenticated.
//
// How a bound request reaches the SDK. swift-corelibs-foundation picks the URLProtocol of a task from the
// session's configured classes first (its own HTTP class claims a URL whose scheme is exactly `http` or
// `https`), then from the classes registered with `URLProtocol.registerClass`. Nothing else a request carries
// survives into the task (protocol properties are lost when an NSMutableURLRequest is bridged to URLRequest).
// So `bind(to:)` writes the scheme in capitals (`HTTP://`, `HTTPS://`: the same URL, schemes are
// case-insensitive, RFC 3986 3.1) and records the URL as bound; `HotspotCommandURLProtocol` (registered on the
// first bind) claims such URLs. It serves the task as URLSession does (BoundURLLoader.swift): the session's
// cookies, headers, timeouts and cache, the delegate asked about every redirect and every challenge (server
// trust included), upload bodies, NSURLErrorDomain codes; every hop over the command's marked sockets.
@_spi(Compat) import HotspotHelper

extension NSMutableURLRequest {
    /// Binds the request to `command` (Apple's `bind(to:)`): a `URLSession` task made from it runs over the
    /// command's marked sockets and within the command's deadline. Requests that are not http or https are
    /// left as they are. The URL's scheme reads `HTTP`/`HTTPS` afterwards (see the top of this file).
    public func bind(to command: NEHotspotHelperCommand) {
        guard let url, let bound = BoundScheme.bound(url) else { return }
        HotspotCommandURLProtocol.registerOnce()
        BoundRequests.shared.add(bound, command)
        self.url = bound
    }
}

extension URLRequest {
    /// `bind(to:)` for a `URLRequest` (Apple has it on `NSMutableURLRequest` only).
    public mutating func bind(to command: NEHotspotHelperCommand) {
        guard let url, let bound = BoundScheme.bound(url) else { return }
        HotspotCommandURLProtocol.registerOnce()
        BoundRequests.shared.add(bound, command)
        self.url = bound
    }

    /// Whether the request is bound to a command. Not Apple's.
    public var isBoundToHotspotCommand: Bool { url.map { BoundRequests.shared.binding($0) != nil } ?? false }
}

/// The scheme of bound URLs: `HTTP`/`HTTPS`, the same scheme in capitals.
enum BoundScheme {
    /// `url` with its scheme in capitals; nil when it is not http or https.
    static func bound(_ url: URL) -> URL? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        return with(url, scheme: scheme.uppercased())
    }

    /// Whether `url` has the scheme of a bound URL (what `HotspotCommandURLProtocol` claims).
    static func isBoundForm(_ url: URL?) -> Bool { url?.scheme == "HTTP" || url?.scheme == "HTTPS" }

    /// `url` with a lowercase scheme (what goes on the wire and into cookie matching).
    static func plain(_ url: URL) -> URL {
        guard let scheme = url.scheme, scheme != scheme.lowercased() else { return url }
        return with(url, scheme: scheme.lowercased()) ?? url
    }

    /// `url` written as `like` is: capitals when `like` is a bound URL.
    static func form(_ url: URL, like: URL?) -> URL { isBoundForm(like) ? (bound(url) ?? url) : plain(url) }

    private static func with(_ url: URL, scheme: String) -> URL? {
        let text = url.absoluteString
        guard let colon = text.firstIndex(of: ":") else { return nil }
        return URL(string: scheme + text[colon...])
    }
}

/// The URLs requests were bound with, and their commands (weakly: a finished command is not kept alive; its
/// requests stay bound: they still go over marked sockets). Bounded: the oldest are forgotten first.
final class BoundRequests: @unchecked Sendable {
    static let shared = BoundRequests()
    static let capacity = 4096
    private let lock = NSLock()
    private var bindings: [String: Binding] = [:]
    private var order: [String] = []

    struct Binding {
        weak var command: HotspotHelperCommand?
    }

    func add(_ url: URL, _ command: HotspotHelperCommand) {
        let key = url.absoluteString
        lock.withLock {
            if bindings.updateValue(Binding(command: command), forKey: key) == nil { order.append(key) }
            if order.count > Self.capacity {
                for old in order.prefix(order.count - Self.capacity) { bindings[old] = nil }
                order.removeFirst(order.count - Self.capacity)
            }
        }
    }

    /// The binding of a URL in the bound form, nil when no request was bound with it.
    func binding(_ url: URL) -> Binding? {
        guard BoundScheme.isBoundForm(url) else { return nil }
        return lock.withLock { bindings[url.absoluteString] }
    }
}
