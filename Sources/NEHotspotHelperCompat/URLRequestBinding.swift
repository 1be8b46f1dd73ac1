// `NSMutableURLRequest.bind(to:)` with `URLSession` (FoundationNetworking): a request bound to a command goes
// over the SDK's marked sockets (SO_MARK 0x4853), so it gets through the station's IP suppression; a request
// that is not bound goes the ordinary way and stays blocked until Authenticated.
//
// How: swift-corelibs-foundation asks a session's configured protocol classes first (its own HTTP class claims
// every http/https URL) and the classes registered with `URLProtocol.registerClass` only when none of those
// claims the request. So `bind(to:)` does two things: it records the command as a protocol property, and it
// moves the URL to a private scheme (`x-hotspot-bound-http`, `x-hotspot-bound-https`) that only
// `HotspotCommandURLProtocol` (registered on the first bind) claims. That class serves the request with the
// SDK's HTTP client on marked sockets, follows redirects itself as URLSession would (at most 20; 301/302 turn
// POST into GET, 303 anything but HEAD into GET, 307/308 keep method and body), and reports the final answer with
// the ordinary http/https URL. Apple's meaning is kept: only traffic bound to a command passes.
@_spi(Compat) import HotspotHelper

extension NSMutableURLRequest {
    /// Binds the request to `command` (Apple's `bind(to:)`): a `URLSession` task made from it runs over the
    /// command's marked sockets and within the command's deadline. Requests that are not http or https are
    /// left as they are.
    public func bind(to command: NEHotspotHelperCommand) {
        HotspotCommandURLProtocol.registerOnce()
        BoundCommands.shared.add(command)
        URLProtocol.setProperty(String(command.identifier), forKey: HotspotCommandURLProtocol.commandKey, in: self)
        if let url, let bound = BoundScheme.bound(url) { self.url = bound }
    }
}

extension URLRequest {
    /// `bind(to:)` for a `URLRequest` (Apple has it on `NSMutableURLRequest` only).
    public mutating func bind(to command: NEHotspotHelperCommand) {
        guard let mutable = (self as NSURLRequest).mutableCopy() as? NSMutableURLRequest else { return }
        mutable.bind(to: command)
        self = mutable as URLRequest
    }

    /// Whether the request is bound to a command (its URL is in the private scheme). Not Apple's.
    public var isBoundToHotspotCommand: Bool { BoundScheme.isBound(url) }
}

/// The private URL schemes of bound requests.
enum BoundScheme {
    static let prefix = "x-hotspot-bound-"

    static func bound(_ url: URL) -> URL? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        parts.scheme = prefix + scheme
        return parts.url
    }

    static func isBound(_ url: URL?) -> Bool { url?.scheme?.lowercased().hasPrefix(prefix) == true }

    /// The http/https URL of a bound one.
    static func original(_ url: URL) -> URL? {
        guard let scheme = url.scheme?.lowercased(), scheme.hasPrefix(prefix),
              var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        parts.scheme = String(scheme.dropFirst(prefix.count))
        return parts.url
    }
}

/// The commands requests were bound to, by identifier (weakly: a finished command is not kept alive).
final class BoundCommands: @unchecked Sendable {
    static let shared = BoundCommands()
    private let lock = NSLock()
    private var commands: [UInt64: Weak] = [:]

    private struct Weak {
        weak var command: HotspotHelperCommand?
    }

    func add(_ command: HotspotHelperCommand) {
        lock.withLock {
            commands = commands.filter { $0.value.command != nil }
            commands[command.identifier] = Weak(command: command)
        }
    }

    func command(_ identifier: UInt64) -> HotspotHelperCommand? { lock.withLock { commands[identifier]?.command } }
}

/// Serves requests bound to a command over the SDK's marked sockets (see the top of this file).
public final class HotspotCommandURLProtocol: URLProtocol {
    static let commandKey = "HotspotHelperCommandIdentifier"
    static let maximumRedirects = 20
    private static let registration: Bool = URLProtocol.registerClass(HotspotCommandURLProtocol.self)

    static func registerOnce() { _ = registration }

    private let stateLock = NSLock()
    private var stopped = false

    public override class func canInit(with request: URLRequest) -> Bool { BoundScheme.isBound(request.url) }

    public override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    public override func startLoading() {
        let request = self.request
        let me = UncheckedBox(self)
        Thread.detachNewThread { me.value.load(request) }
    }

    public override func stopLoading() { stateLock.withLock { stopped = true } }

    private var isStopped: Bool { stateLock.withLock { stopped } }

    private func load(_ request: URLRequest) {
        guard let bound = request.url, let first = BoundScheme.original(bound) else {
            fail(NSURLErrorUnsupportedURL, request.url?.absoluteString ?? "(no URL)", "the request has no bound http or https URL")
            return
        }
        let command = (URLProtocol.property(forKey: Self.commandKey, in: request) as? String)
            .flatMap(UInt64.init).flatMap(BoundCommands.shared.command)
        var url = first
        var method = (request.httpMethod ?? "GET").uppercased()
        var headers = (request.allHTTPHeaderFields ?? [:]).map { (name: $0.key, value: $0.value) }
        var body = request.httpBody.map { [UInt8]($0) } ?? Self.drain(request.httpBodyStream)
        let timeout = Duration.milliseconds(Int64(max(request.timeoutInterval, 0.001) * 1000))
        var redirects = 0
        while true {
            let asked = HotspotHTTPRequest(method: method, url: url.absoluteString, headers: headers, body: body, timeout: timeout)
            let answer: HotspotHTTPResponse
            do {
                if let command {
                    answer = try command.http(asked)
                } else {
                    // The command is gone (answered and released): still only over a marked socket.
                    answer = try HotspotHTTPClient(mark: HotspotHelper.commandTrafficMark).send(asked)
                }
            } catch {
                fail(error, url)
                return
            }
            if isStopped { return }
            if [301, 302, 303, 307, 308].contains(answer.status), let next = answer.redirectURL,
               let nextURL = URL(string: next.description)
            {
                redirects += 1
                guard redirects <= Self.maximumRedirects else {
                    fail(NSURLErrorHTTPTooManyRedirects, url.absoluteString, "more than \(Self.maximumRedirects) redirects")
                    return
                }
                if answer.status == 303 && method != "HEAD" || [301, 302].contains(answer.status) && method == "POST" {
                    method = "GET"
                    body = []
                    headers = headers.filter { !["content-type", "content-length"].contains($0.name.lowercased()) }
                }
                if nextURL.host?.lowercased() != url.host?.lowercased() {
                    headers = headers.filter { $0.name.lowercased() != "authorization" }
                }
                url = nextURL
                continue
            }
            var fields: [String: String] = [:]
            for h in answer.headers {
                fields[h.name] = fields[h.name].map { $0 + ", " + h.value } ?? h.value
            }
            guard let response = HTTPURLResponse(url: url, statusCode: answer.status, httpVersion: "HTTP/1.1", headerFields: fields) else {
                fail(NSURLErrorBadServerResponse, url.absoluteString, "status \(answer.status) cannot be reported")
                return
            }
            client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            client?.urlProtocol(self, didLoad: Data(answer.body))
            client?.urlProtocolDidFinishLoading(self)
            return
        }
    }

    private static func drain(_ stream: InputStream?) -> [UInt8] {
        guard let stream else { return [] }
        stream.open()
        defer { stream.close() }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = stream.read(&buffer, maxLength: buffer.count)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    private func fail(_ error: HotspotTrafficError, _ url: URL) {
        let code: Int
        switch error.operation {
        case _ where error.isTimeout: code = NSURLErrorTimedOut
        case "resolve": code = NSURLErrorCannotFindHost
        case "connect to": code = NSURLErrorCannotConnectToHost
        case "parse URL": code = NSURLErrorBadURL
        default: code = error.errno == 0 ? NSURLErrorBadServerResponse : NSURLErrorNetworkConnectionLost
        }
        var info: [String: Any] = [NSLocalizedDescriptionKey: "bound to a hotspot command: \(error.description)",
                                   NSURLErrorFailingURLErrorKey: url]
        if error.errno != 0 { info[NSUnderlyingErrorKey] = NSError(domain: NSPOSIXErrorDomain, code: Int(error.errno)) }
        report(NSError(domain: NSURLErrorDomain, code: code, userInfo: info))
    }

    private func fail(_ code: Int, _ url: String, _ cause: String) {
        report(NSError(domain: NSURLErrorDomain, code: code, userInfo: [
            NSLocalizedDescriptionKey: "bound to a hotspot command: \(url): \(cause)",
        ]))
    }

    private func report(_ error: NSError) {
        if isStopped { return }
        client?.urlProtocol(self, didFailWithError: error)
    }
}
