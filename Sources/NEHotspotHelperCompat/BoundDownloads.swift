// Download tasks of bound requests. swift-corelibs-foundation hands a download task its file through a property
// that only its own URLProtocols can set, so a download cannot be served by `HotspotCommandURLProtocol` as it is.
// The compat module shadows the two download calls a helper makes with a request (a module that re-exports
// Foundation shadows its names): `downloadTask(with:completionHandler:)` and `download(for:delegate:)`. For a
// bound request the body is loaded over the command's sockets and written to a file, which the completion
// handler gets (and which is removed when it returns, as Apple documents) or which `download(for:)` returns (the
// caller moves it). Unbound requests go to Foundation's own methods. A download task with a download delegate
// (`downloadTask(with:)` and `urlSession(_:downloadTask:didFinishDownloadingTo:)`) still ends, when bound, with
// NSURLErrorUnsupportedURL (docs/HELPERS.md).
import FoundationSessions
import Synchronization

extension URLSession {
    /// Apple's `downloadTask(with:completionHandler:)`; a bound request is loaded over the command's sockets.
    public func downloadTask(with request: URLRequest,
                             completionHandler: @Sendable @escaping (URL?, URLResponse?, (any Error)?) -> Void) -> URLSessionDownloadTask {
        guard BoundRequests.carriesBinding(request) else { return FoundationSessions.downloadTask(self, request, completionHandler) }
        let box = DownloadTaskBox()
        let task = FoundationSessions.downloadTask(self, request) { _, response, error in
            if let error {
                completionHandler(nil, response, error)
                return
            }
            do {
                let data = box.task.flatMap { BoundDownloads.shared.take($0) } ?? Data()
                let file = try BoundDownloads.write(data)
                completionHandler(file, response, nil)
                try? FileManager.default.removeItem(at: file)
            } catch {
                completionHandler(nil, response, error)
            }
        }
        box.task = task
        BoundDownloads.shared.expect(task)
        return task
    }

    /// Apple's `download(for:delegate:)`; a bound request is loaded over the command's sockets (the delegate is
    /// asked about redirects and challenges) and its body returned as a file the caller moves or removes.
    public func download(for request: URLRequest, delegate: (any FoundationNetworking.URLSessionTaskDelegate)? = nil) async throws -> (URL, URLResponse) {
        guard BoundRequests.carriesBinding(request) else { return try await FoundationSessions.download(self, request, delegate) }
        let (data, response) = try await FoundationSessions.data(self, request, delegate)
        return (try BoundDownloads.write(data), response)
    }
}

final class DownloadTaskBox: Sendable {
    private let stored = Mutex<URLSessionDownloadTask?>(nil)
    var task: URLSessionDownloadTask? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}

/// The bodies of bound download tasks between the loader (BoundURLLoader.swift) and the completion handler.
final class BoundDownloads: Sendable {
    static let shared = BoundDownloads()
    private struct State {
        var expected: Set<ObjectIdentifier> = []
        var bodies: [ObjectIdentifier: Data] = [:]
    }
    private let state = Mutex(State())

    func expect(_ task: URLSessionDownloadTask) { _ = state.withLock { $0.expected.insert(ObjectIdentifier(task)) } }

    /// Whether the task was made by `downloadTask(with:completionHandler:)` above (its body can be handed over).
    func isExpected(_ task: URLSessionDownloadTask) -> Bool { state.withLock { $0.expected.contains(ObjectIdentifier(task)) } }

    func finish(_ task: URLSessionDownloadTask, _ data: Data) { state.withLock { $0.bodies[ObjectIdentifier(task)] = data } }

    func take(_ task: URLSessionDownloadTask) -> Data? {
        state.withLock {
            $0.expected.remove(ObjectIdentifier(task))
            return $0.bodies.removeValue(forKey: ObjectIdentifier(task))
        }
    }

    /// A new file in the temporary folder holding `data` (named as Apple's: CFNetworkDownload_*.tmp).
    static func write(_ data: Data) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("CFNetworkDownload_\(UUID().uuidString).tmp")
        try data.write(to: file)
        return file
    }
}
