// Foundation's own `URLSessionConfiguration.default`, `.ephemeral` and `URLSession.shared`, reachable from
// NEHotspotHelperCompat, which shadows those three names (SessionRouting.swift there): inside the module that
// declares a shadow, the name means the shadow, so the originals are read here, in a module that declares none.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Foundation's session defaults, as Foundation spells them.
public enum FoundationSessions {
    /// Foundation's `URLSessionConfiguration.default` (a new object each time).
    public static func defaultConfiguration() -> URLSessionConfiguration { URLSessionConfiguration.default }
    /// Foundation's `URLSessionConfiguration.ephemeral` (a new object each time, with its own storages).
    public static func ephemeralConfiguration() -> URLSessionConfiguration { URLSessionConfiguration.ephemeral }
    /// Foundation's `URLSession.shared`.
    public static var shared: URLSession { URLSession.shared }
}

extension FoundationSessions {
    /// Foundation's `session.downloadTask(with:completionHandler:)`.
    public static func downloadTask(_ session: URLSession, _ request: URLRequest,
                                    _ completionHandler: @Sendable @escaping (URL?, URLResponse?, (any Error)?) -> Void) -> URLSessionDownloadTask {
        session.downloadTask(with: request, completionHandler: completionHandler)
    }

    /// Foundation's `session.download(for:delegate:)`.
    public static func download(_ session: URLSession, _ request: URLRequest, _ delegate: (any URLSessionTaskDelegate)?) async throws -> (URL, URLResponse) {
        try await session.download(for: request, delegate: delegate)
    }

    /// Foundation's `session.data(for:delegate:)`.
    public static func data(_ session: URLSession, _ request: URLRequest, _ delegate: (any URLSessionTaskDelegate)?) async throws -> (Data, URLResponse) {
        try await session.data(for: request, delegate: delegate)
    }
}
