// How a bound request reaches the SDK without a visible mark on its URL.
//
// swift-corelibs-foundation gives a task to the first URLProtocol of the session's `protocolClasses` that claims
// its request, and Foundation's own HTTP class (first in `.default` and `.ephemeral`) claims every `http`/`https`
// URL. So the compat module shadows `URLSessionConfiguration.default`, `.ephemeral` and `URLSession.shared` (a
// module that re-exports Foundation shadows its names: a helper's `URLSession(configuration: .default)` or
// `URLSession.shared` with `import NEHotspotHelperCompat` means these): each is Foundation's own with
// `HotspotCommandURLProtocol` first in `protocolClasses`. It claims only requests bound to a command (their
// `mainDocumentURL` carries the binding: URLRequestBinding.swift) and leaves every other request to Foundation.
import FoundationSessions

extension URLSessionConfiguration {
    /// Foundation's `URLSessionConfiguration.default`, with bound requests served over the command's sockets.
    public class var `default`: URLSessionConfiguration { HotspotCommandURLProtocol.routed(FoundationSessions.defaultConfiguration()) }

    /// Foundation's `URLSessionConfiguration.ephemeral`, with bound requests served over the command's sockets.
    public class var ephemeral: URLSessionConfiguration { HotspotCommandURLProtocol.routed(FoundationSessions.ephemeralConfiguration()) }
}

extension URLSession {
    /// Foundation's shared session (its cookie, credential and cache storages), with bound requests served over
    /// the command's sockets.
    public class var shared: URLSession { HotspotCommandURLProtocol.sharedSession }
}

extension HotspotCommandURLProtocol {
    /// `configuration` with this class first in its `protocolClasses`.
    static func routed(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
        let others = (configuration.protocolClasses ?? []).filter { $0 != HotspotCommandURLProtocol.self }
        configuration.protocolClasses = [HotspotCommandURLProtocol.self] + others
        return configuration
    }

    /// The shared session: Foundation's shared configuration (the global storages), routed.
    static let sharedSession: URLSession = {
        let configuration = routed(FoundationSessions.defaultConfiguration())
        let foundation = FoundationSessions.shared.configuration
        configuration.httpCookieStorage = foundation.httpCookieStorage
        configuration.urlCredentialStorage = foundation.urlCredentialStorage
        configuration.urlCache = foundation.urlCache
        return URLSession(configuration: configuration)
    }()
}
