// Serving a bound request as URLSession serves one (Apple's URLSession documentation is the reference; where
// swift-corelibs-foundation's own HTTP path differs from it, docs/HELPERS.md lists it):
// - every hop goes over the command's marked sockets, within the command's deadline;
// - the session's `httpAdditionalHeaders` first, the request's headers over them;
// - cookies: before every hop those of the session's `httpCookieStorage` that match the URL (domain, path,
//   expiry; `Secure` ones over https only) when `httpShouldSetCookies`; after every hop the response's
//   `Set-Cookie` into the storage unless `httpCookieAcceptPolicy` is `.never`;
// - timeouts: the request's `timeoutInterval` when it was set (else the session's `timeoutIntervalForRequest`)
//   for every hop, the session's `timeoutIntervalForResource` for the whole task: NSURLErrorTimedOut (-1001);
// - the body: `httpBody`, `httpBodyStream`, or the upload task's data, file or stream;
// - redirects (301, 302, 303, 307, 308): the delegate's `willPerformHTTPRedirection` (async form first) is asked
//   about every one; nil stops at the 3xx (its body and Location are the answer), another request is followed
//   instead; without a delegate it is followed (301/302 turn POST into GET, 303 anything but HEAD; 307/308 keep
//   method and body); more than 20: NSURLErrorHTTPTooManyRedirects;
// - challenges to the delegate (async form first): HTTP Basic and Digest on a 401 (`.useCredential` retries
//   with it, `.performDefaultHandling` uses the session's credential storage, `.cancelAuthenticationChallenge`
//   ends with NSURLErrorCancelled), server trust on every TLS connection (`URLCredential(trust:)` accepts a
//   certificate that did not verify; otherwise -1202);
// - responses cached in the session's `urlCache` as Foundation caches them (GET, 200, cacheable headers), and
//   read back by the request's cache policy;
// - URLs read as the helper wrote them (the binding is not in the URL: URLRequestBinding.swift):
//   `response.url == request.url` unless redirected.
@_spi(Compat) import HotspotHelper
// Only these of HotspotSystem (which HotspotHelper depends on): its `Mutex` would shadow Synchronization's here.
import class HotspotSystem.OneShot
import class HotspotSystem.SystemThread
import struct HotspotSystem.UncheckedBox
import Synchronization

/// Serves bound requests over the SDK's marked sockets (see above and URLRequestBinding.swift).
public final class HotspotCommandURLProtocol: URLProtocol {
    static let maximumRedirects = 20
    private static let registration: Bool = URLProtocol.registerClass(HotspotCommandURLProtocol.self)

    static func registerOnce() { _ = registration }

    private let stopped = Mutex(false)

    /// Bound requests; and, not bound, an `http`/`https` URL whose scheme is written in capitals (`HTTP://`), which
    /// iOS serves as http (a scheme is case-insensitive, RFC 3986 3.1) and Foundation's own HTTP class refuses.
    public override class func canInit(with request: URLRequest) -> Bool {
        BoundRequests.carriesBinding(request) || SchemeCase.isCapitalised(request.url)
    }

    public override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    public override func startLoading() {
        // Called on the session's work queue: the task's session and its per-task delegate are read here.
        let context = TaskContext(task: task, request: request)
        let me = UncheckedBox(self)
        do {
            try SystemThread.detach("serve a bound request") { BoundLoader(protocol: me.value, context: context).run() }
        } catch {
            // No thread to serve it on: the task fails with the reason, as it fails for any other.
            BoundLoader(protocol: self, context: context)
                .fail(NSURLErrorUnknown, request.url, "cannot start the thread that serves the request: \(error)")
        }
    }

    public override func stopLoading() { stopped.withLock { $0 = true } }

    var isStopped: Bool { stopped.withLock { $0 } }
}

/// What a task brings: its session's configuration, delegate and queue, its upload body.
struct TaskContext: @unchecked Sendable {  // @unchecked: `let`s only; the delegates (not Sendable) are called on the session's delegate queue or in a Task, as URLSession calls them
    let task: URLSessionTask?
    let session: URLSession?
    let configuration: URLSessionConfiguration
    let delegate: (any FoundationNetworking.URLSessionTaskDelegate)?
    let sessionDelegate: (any FoundationNetworking.URLSessionDelegate)?
    let uploadBody: [UInt8]?

    init(task: URLSessionTask?, request: URLRequest) {
        self.task = task
        let session = task.flatMap { TaskReflection.session(of: $0) }
        self.session = session
        configuration = session?.configuration ?? .default
        delegate = task.flatMap { TaskReflection.taskDelegate(of: $0, in: session) } ?? task?.delegate
        sessionDelegate = session?.delegate
        uploadBody = task.flatMap { TaskReflection.uploadBody(of: $0) }
    }
}

/// Reading what swift-corelibs-foundation keeps internal in a task (read only, through `Mirror`).
enum TaskReflection {
    static func child(_ label: String, of subject: Any) -> Any? {
        var mirror: Mirror? = Mirror(reflecting: subject)
        while let m = mirror {
            if let value = m.children.first(where: { $0.label == label })?.value { return value }
            mirror = m.superclassMirror
        }
        return nil
    }

    static func unwrap(_ value: Any) -> Any? {
        let m = Mirror(reflecting: value)
        guard m.displayStyle == .optional else { return value }
        return m.children.first.map { unwrap($0.value) } ?? nil
    }

    static func session(of task: URLSessionTask) -> URLSession? {
        child("session", of: task).flatMap(unwrap) as? URLSession
    }

    /// The delegate given to `data(for:delegate:)` and the other async calls (kept with the task's behaviour).
    static func taskDelegate(of task: URLSessionTask, in session: URLSession?) -> (any FoundationNetworking.URLSessionTaskDelegate)? {
        guard let session, let registry = child("taskRegistry", of: session),
              let behaviours = child("behaviours", of: registry).flatMap(unwrap) as? [Int: Any],
              let behaviour = behaviours[task.taskIdentifier] else { return nil }
        for c in Mirror(reflecting: behaviour).children {
            for part in Mirror(reflecting: c.value).children {
                if let d = unwrap(part.value) as? any FoundationNetworking.URLSessionTaskDelegate { return d }
            }
            if let d = unwrap(c.value) as? any FoundationNetworking.URLSessionTaskDelegate { return d }
        }
        return nil
    }

    /// The body of an upload task (`uploadTask(with:from:)`, `fromFile:`, a stream), nil when there is none.
    static func uploadBody(of task: URLSessionTask) -> [UInt8]? {
        guard let body = child("knownBody", of: task).flatMap(unwrap) else { return nil }
        guard let payload = Mirror(reflecting: body).children.first?.value else { return nil }
        if ProcessInfo.processInfo.environment["HOTSPOT_DEBUG_BODY"] != nil {
            FileHandle.standardError.write(Data("knownBody \(type(of: body)) payload \(type(of: payload))\n".utf8))
        }
        if let data = payload as? DispatchData { return [UInt8](data) }
        if let bytes = payload as? any Collection<UInt8> { return Array(bytes) }
        if let data = payload as? Data { return [UInt8](data) }
        if let url = payload as? URL { return (try? Data(contentsOf: url)).map { [UInt8]($0) } }
        if let stream = payload as? InputStream { return BoundLoader.drain(stream) }
        return nil
    }
}

/// One bound task, served on its own thread.
struct BoundLoader: @unchecked Sendable {  // @unchecked: `let`s only; the URLProtocol (not Sendable) is handed to the loader's one thread and its client called from there
    let urlProtocol: HotspotCommandURLProtocol
    let context: TaskContext
    let originalURL: URL?
    /// Whether the request carries a binding (one forgotten with its command still goes over a marked socket).
    let isBound: Bool
    let command: HotspotHelperCommand?

    init(protocol urlProtocol: HotspotCommandURLProtocol, context: TaskContext) {
        self.urlProtocol = urlProtocol
        self.context = context
        originalURL = urlProtocol.request.url
        let binding = BoundRequests.shared.binding(urlProtocol.request)
        isBound = BoundRequests.carriesBinding(urlProtocol.request)
        command = binding?.command
    }

    var client: (any URLProtocolClient)? { urlProtocol.client }
    var configuration: URLSessionConfiguration { context.configuration }

    /// The URL as the helper reads it: as given (the binding is not in the URL); a scheme written in capitals
    /// stays so.
    func shown(_ url: URL) -> URL { SchemeCase.form(url, like: originalURL) }

    func run() {
        // A download task's file is Foundation's internal business (a URLProtocol cannot hand one over on Linux):
        // only the tasks of `downloadTask(with:completionHandler:)` (BoundDownloads.swift) get their body.
        if let download = context.task as? URLSessionDownloadTask, !BoundDownloads.shared.isExpected(download) {
            fail(NSURLErrorUnsupportedURL, urlProtocol.request.url,
                 "download tasks of bound requests with a download delegate are not supported on Linux: use downloadTask(with:completionHandler:), download(for:) or a data task")
            return
        }
        var request = urlProtocol.request
        guard let first = request.url else {
            fail(NSURLErrorBadURL, nil, "the request has no URL")
            return
        }
        request.url = SchemeCase.plain(first)
        if let upload = context.uploadBody {
            request.httpBody = Data(upload)
        } else if request.httpBody == nil, let stream = request.httpBodyStream {
            request.httpBody = Data(Self.drain(stream))
        }
        // The Cookie header Foundation put in when it made the task (from the storage, for the capitalised URL,
        // without the rules below): the storage's cookies are chosen again for every hop.
        var cookieHeaderOfStorage: String? = configuration.httpShouldSetCookies
            ? configuration.httpCookieStorage?.cookies(for: first).flatMap { HTTPCookie.requestHeaderFields(with: $0)["Cookie"] } : nil
        let resourceEnd = Date(timeIntervalSinceNow: configuration.timeoutIntervalForResource)
        if let cached = cachedAnswer(request) {
            deliver(cached.response, cached.data, cache: false)
            return
        }
        var redirects = 0
        var authFailures = 0
        var lastCredential: URLCredential?
        while true {
            guard let url = request.url else { return }
            // Cookies of the storage for this hop (they replace the ones set for the hop before).
            if let previous = cookieHeaderOfStorage, request.value(forHTTPHeaderField: "Cookie") == previous {
                request.setValue(nil, forHTTPHeaderField: "Cookie")
            }
            cookieHeaderOfStorage = nil
            if configuration.httpShouldSetCookies, let header = cookieHeader(for: url) {
                request.setValue(header, forHTTPHeaderField: "Cookie")
                cookieHeaderOfStorage = header
            }
            let answer: HotspotHTTPResponse
            switch send(request, resourceEnd: resourceEnd) {
            case .success(let a): answer = a
            case .failure(let error):
                fail(error, url)
                return
            }
            if urlProtocol.isStopped { return }
            storeCookies(answer, url)
            var fields: [String: String] = [:]
            for h in answer.headers {
                fields[h.name] = fields[h.name].map { $0 + ", " + h.value } ?? h.value
            }
            guard let response = HTTPURLResponse(url: shown(url), statusCode: answer.status, httpVersion: "HTTP/1.1",
                                                 headerFields: fields) else {
                fail(NSURLErrorBadServerResponse, url, "status \(answer.status) cannot be reported")
                return
            }
            // A 401 challenge (Basic or Digest) to the delegate.
            if answer.status == 401, let challenge = HTTPChallenge.parse(answer) {
                let space = URLProtectionSpace(host: url.host ?? "", port: url.port ?? (url.scheme == "https" ? 443 : 80),
                                               protocol: url.scheme, realm: challenge.realm,
                                               authenticationMethod: challenge.method)
                let stored = configuration.urlCredentialStorage?.defaultCredential(for: space)
                let proposed = stored != lastCredential ? stored : nil
                let asked = URLAuthenticationChallenge(protectionSpace: space, proposedCredential: proposed,
                                                       previousFailureCount: authFailures, failureResponse: response, error: nil,
                                                       sender: BoundChallengeSender())
                let (disposition, given) = askChallenge(asked)
                var credential: URLCredential?
                switch disposition {
                case .useCredential: credential = given
                case .performDefaultHandling: credential = proposed
                case .cancelAuthenticationChallenge:
                    fail(NSURLErrorCancelled, url, "the delegate cancelled the authentication challenge")
                    return
                case .rejectProtectionSpace: credential = nil
                @unknown default: credential = nil
                }
                if let credential, let user = credential.user {
                    authFailures += 1
                    lastCredential = credential
                    request.setValue(challenge.authorization(user: user, password: credential.password ?? "",
                                                             method: request.httpMethod ?? "GET", url: url),
                                     forHTTPHeaderField: "Authorization")
                    continue
                }
            }
            if [301, 302, 303, 307, 308].contains(answer.status), let location = answer.redirectURL,
               let nextURL = URL(string: location.description)
            {
                redirects += 1
                guard redirects <= HotspotCommandURLProtocol.maximumRedirects else {
                    fail(NSURLErrorHTTPTooManyRedirects, url, "more than \(HotspotCommandURLProtocol.maximumRedirects) redirects")
                    return
                }
                var next = request
                next.url = shown(nextURL)
                let method = (request.httpMethod ?? "GET").uppercased()
                if answer.status == 303 && method != "HEAD" || [301, 302].contains(answer.status) && method == "POST" {
                    next.httpMethod = "GET"
                    next.httpBody = nil
                    next.setValue(nil, forHTTPHeaderField: "Content-Type")
                    next.setValue(nil, forHTTPHeaderField: "Content-Length")
                }
                if nextURL.host?.lowercased() != url.host?.lowercased() { next.setValue(nil, forHTTPHeaderField: "Authorization") }
                if let previous = cookieHeaderOfStorage, next.value(forHTTPHeaderField: "Cookie") == previous {
                    next.setValue(nil, forHTTPHeaderField: "Cookie")
                }
                cookieHeaderOfStorage = nil
                guard let followed = askRedirect(response, next) else {
                    deliver(response, Data(answer.body), cache: false)
                    return
                }
                request = followed
                if let u = followed.url { request.url = SchemeCase.plain(u) }
                continue
            }
            deliver(response, Data(answer.body), cache: (request.httpMethod ?? "GET").uppercased() == "GET")
            return
        }
    }

    // MARK: One hop

    func send(_ request: URLRequest, resourceEnd: Date) -> Result<HotspotHTTPResponse, HotspotTrafficError> {
        guard let url = request.url else { return .failure(HotspotTrafficError("parse URL", "(none)", detail: "no URL")) }
        // Headers: the session's first, the request's over them (names compared without case).
        var headers: [(name: String, value: String)] = []
        func put(_ name: String, _ value: String) {
            headers.removeAll { $0.name.lowercased() == name.lowercased() }
            headers.append((name, value))
        }
        for (k, v) in configuration.httpAdditionalHeaders ?? [:] {
            if let name = k as? String { put(name, "\(v)") }
        }
        for (k, v) in request.allHTTPHeaderFields ?? [:] { put(k, v) }
        if !headers.contains(where: { $0.name.lowercased() == "user-agent" }) { put("User-Agent", Self.userAgent) }
        let method = (request.httpMethod ?? "GET").uppercased()
        let body = request.httpBody.map { [UInt8]($0) } ?? []
        if method == "POST", !body.isEmpty, !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            put("Content-Type", "application/x-www-form-urlencoded")
        }
        let perHop = request.timeoutInterval != 60 || configuration.timeoutIntervalForRequest == 60
            ? request.timeoutInterval : configuration.timeoutIntervalForRequest
        let left = resourceEnd.timeIntervalSinceNow
        guard left > 0 else {
            return .failure(HotspotTrafficError(method, url.absoluteString, errno: ETIMEDOUT,
                                                detail: "the session's timeoutIntervalForResource passed"))
        }
        let seconds = max(0.001, min(perHop, left))
        let asked = HotspotHTTPRequest(method: method, url: url.absoluteString, headers: headers, body: body,
                                       timeout: .milliseconds(Int64(seconds * 1000)))
        var client = HotspotHTTPClient(mark: isBound ? HotspotHelper.commandTrafficMark : nil)
        if url.scheme == "https" {
            let loader = self
            client.serverTrust = { trust in loader.decideTrust(trust) }
        }
        do {
            if let command { return .success(try command.http(asked, using: client)) }
            // The command is gone (answered and released): a bound request still goes only over a marked socket.
            return .success(try client.send(asked))
        } catch {
            return .failure(error)
        }
    }

    static let userAgent = "\(ProcessInfo.processInfo.processName) (unknown version) HotspotHelper"

    // MARK: Cookies

    /// The storage's cookies for `url` (RFC 6265 5.4: domain as the storage matches it, path-match, not
    /// expired, Secure only over https).
    func cookieHeader(for url: URL) -> String? {
        guard let storage = configuration.httpCookieStorage, let cookies = storage.cookies(for: url) else { return nil }
        let secure = url.scheme?.lowercased() == "https"
        let path = url.path.isEmpty ? "/" : url.path
        let now = Date()
        let sent = cookies.filter { cookie in
            (secure || !cookie.isSecure) && Self.pathMatches(path, cookie.path)
                && (cookie.expiresDate.map { $0 > now } ?? true)
        }
        guard !sent.isEmpty, let header = HTTPCookie.requestHeaderFields(with: sent)["Cookie"], !header.isEmpty else { return nil }
        return header
    }

    /// RFC 6265 5.1.4: the cookie's path is the request's, or a prefix of it ending at a `/`.
    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).first == "/"
    }

    func storeCookies(_ answer: HotspotHTTPResponse, _ url: URL) {
        guard configuration.httpCookieAcceptPolicy != .never, let storage = configuration.httpCookieStorage else { return }
        var cookies: [HTTPCookie] = []
        for h in answer.headers where h.name.lowercased() == "set-cookie" {
            cookies += HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": h.value], for: url)
        }
        if !cookies.isEmpty { storage.setCookies(cookies, for: url, mainDocumentURL: nil) }
    }

    // MARK: Cache

    func cachedAnswer(_ request: URLRequest) -> (response: URLResponse, data: Data)? {
        guard let cache = configuration.urlCache, let dataTask = context.task as? URLSessionDataTask,
              (request.httpMethod ?? "GET").uppercased() == "GET" else { return nil }
        let policy = request.cachePolicy == .useProtocolCachePolicy ? configuration.requestCachePolicy : request.cachePolicy
        switch policy {
        case .reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData, .reloadRevalidatingCacheData: return nil
        default: break
        }
        let answer = OneShot<CachedURLResponse?>()
        cache.getCachedResponse(for: dataTask) { answer.set($0) }
        guard let found = answer.wait() else { return nil }
        if policy == .returnCacheDataElseLoad || policy == .returnCacheDataDontLoad { return (found.response, found.data) }
        guard let http = found.response as? HTTPURLResponse, Self.fresh(http) else { return nil }
        return (found.response, found.data)
    }

    /// Whether a cached answer may be used without asking the server again (`Cache-Control: max-age` not past).
    static func fresh(_ response: HTTPURLResponse) -> Bool {
        guard let control = response.value(forHTTPHeaderField: "Cache-Control")?.lowercased(),
              !control.contains("no-cache"), let maxAge = Self.maxAge(control) else { return false }
        let date = response.value(forHTTPHeaderField: "Date").flatMap(Self.httpDate) ?? Date.distantPast
        return Date().timeIntervalSince(date) < maxAge
    }

    static func maxAge(_ control: String) -> TimeInterval? {
        for part in control.split(separator: ",") {
            let p = part.trimmingCharacters(in: .whitespaces)
            if p.hasPrefix("max-age="), let n = TimeInterval(p.dropFirst(8)) { return n }
        }
        return nil
    }

    static func httpDate(_ text: String) -> Date? {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return f.date(from: text)
    }

    /// Foundation's rule for storing an answer: a GET answered 200 whose headers do not forbid it.
    func store(_ response: HTTPURLResponse, _ data: Data) {
        guard let cache = configuration.urlCache, let dataTask = context.task as? URLSessionDataTask,
              response.statusCode == 200 else { return }
        let control = response.value(forHTTPHeaderField: "Cache-Control")?.lowercased() ?? ""
        guard !control.contains("no-store"), control.contains("max-age") || response.value(forHTTPHeaderField: "Expires") != nil
            || response.value(forHTTPHeaderField: "Last-Modified") != nil else { return }
        let cached = CachedURLResponse(response: response, data: data, storagePolicy: .allowed)
        if let dataDelegate = context.delegate as? any FoundationNetworking.URLSessionDataDelegate, let session = context.session {
            let answer = OneShot<CachedURLResponse?>()
            session.delegateQueue.addOperation {
                dataDelegate.urlSession(session, dataTask: dataTask, willCacheResponse: cached) { answer.set($0) }
            }
            if let chosen = answer.wait() { cache.storeCachedResponse(chosen, for: dataTask) }
        } else {
            cache.storeCachedResponse(cached, for: dataTask)
        }
    }

    // MARK: Delegate questions

    /// Asks the delegate about a redirect (the async form when the helper wrote it); nil: do not follow.
    func askRedirect(_ response: HTTPURLResponse, _ next: URLRequest) -> URLRequest? {
        guard let delegate = context.delegate, let session = context.session, let task = context.task else { return next }
        return Self.wait { (done: @escaping @Sendable (URLRequest?) -> Void) in
            if let modern = delegate as? any URLSessionTaskDelegate {
                Task { done(await modern.urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: next)) }
            } else {
                session.delegateQueue.addOperation {
                    delegate.urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: next, completionHandler: done)
                }
            }
        }
    }

    /// Asks the delegate about a challenge: the task's delegate, else the session's (as URLSession does);
    /// `.performDefaultHandling` without one.
    func askChallenge(_ challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard let session = context.session, let task = context.task else { return (.performDefaultHandling, nil) }
        typealias Answer = (URLSession.AuthChallengeDisposition, URLCredential?)
        if let delegate = context.delegate {
            return Self.wait { (done: @escaping @Sendable (Answer) -> Void) in
                if let modern = delegate as? any URLSessionTaskDelegate {
                    Task { done(await modern.urlSession(session, task: task, didReceive: challenge)) }
                } else {
                    session.delegateQueue.addOperation {
                        delegate.urlSession(session, task: task, didReceive: challenge) { done(($0, $1)) }
                    }
                }
            }
        }
        if let delegate = context.sessionDelegate {
            return Self.wait { (done: @escaping @Sendable (Answer) -> Void) in
                if let modern = delegate as? any URLSessionDelegate {
                    Task { done(await modern.urlSession(session, didReceive: challenge)) }
                } else {
                    session.delegateQueue.addOperation { delegate.urlSession(session, didReceive: challenge) { done(($0, $1)) } }
                }
            }
        }
        return (.performDefaultHandling, nil)
    }

    /// The server-trust challenge of one TLS connection: true goes on with the connection.
    func decideTrust(_ trust: HotspotServerTrust) -> Bool {
        guard context.delegate != nil || context.sessionDelegate != nil else { return trust.verified }
        let secTrust = SecTrust(trust)
        let challenge = URLAuthenticationChallenge(protectionSpace: ServerTrustProtectionSpace(secTrust), proposedCredential: nil,
                                                   previousFailureCount: 0, failureResponse: nil, error: nil,
                                                   sender: BoundChallengeSender())
        let (disposition, credential) = askChallenge(challenge)
        switch disposition {
        case .useCredential:
            // Apple: a credential made from this trust accepts it; any other credential leaves the default check.
            if let accepted = credential?.acceptedTrust, accepted === secTrust { return true }
            return trust.verified
        case .performDefaultHandling, .rejectProtectionSpace: return trust.verified
        case .cancelAuthenticationChallenge: return false
        @unknown default: return trust.verified
        }
    }

    /// The first answer a delegate gives (a second call of its completion handler is ignored), waited for.
    static func wait<T: Sendable>(_ ask: (@escaping @Sendable (T) -> Void) -> Void) -> T {
        let answer = OneShot<T>()
        ask { answer.set($0) }
        return answer.wait()
    }

    // MARK: Answers

    func deliver(_ response: URLResponse, _ data: Data, cache: Bool) {
        if urlProtocol.isStopped { return }
        if let download = context.task as? URLSessionDownloadTask {
            // Foundation then calls the wrapped completion handler, which writes the file (BoundDownloads.swift).
            BoundDownloads.shared.finish(download, data)
            client?.urlProtocol(urlProtocol, didReceive: response, cacheStoragePolicy: .notAllowed)
            client?.urlProtocolDidFinishLoading(urlProtocol)
            return
        }
        if cache, let http = response as? HTTPURLResponse { store(http, data) }
        client?.urlProtocol(urlProtocol, didReceive: response, cacheStoragePolicy: .notAllowed)
        if !data.isEmpty { client?.urlProtocol(urlProtocol, didLoad: data) }
        client?.urlProtocolDidFinishLoading(urlProtocol)
    }

    /// The NSURLErrorDomain code iOS gives for a failed hop.
    static func code(_ error: HotspotTrafficError) -> Int {
        if error.isTimeout { return NSURLErrorTimedOut }
        // Apple's numbers (`URLError.Code` has them; Linux Foundation's global NSURLError TLS constants are one off).
        if error.isCertificateFailure { return URLError.Code.serverCertificateUntrusted.rawValue }
        switch error.operation {
        case "resolve": return NSURLErrorCannotFindHost
        case "connect to": return NSURLErrorCannotConnectToHost
        case "parse URL": return NSURLErrorBadURL
        case "TLS handshake with": return URLError.Code.secureConnectionFailed.rawValue
        default: break
        }
        if error.detail == "the server closed the connection without answering" { return NSURLErrorNetworkConnectionLost }
        return error.errno == 0 ? NSURLErrorBadServerResponse : NSURLErrorNetworkConnectionLost
    }

    func fail(_ error: HotspotTrafficError, _ url: URL) {
        var info: [String: Any] = [NSLocalizedDescriptionKey: "bound to a hotspot command: \(error.description)",
                                   NSURLErrorFailingURLErrorKey: shown(url)]
        if error.errno != 0 { info[NSUnderlyingErrorKey] = NSError(domain: NSPOSIXErrorDomain, code: Int(error.errno)) }
        report(NSError(domain: NSURLErrorDomain, code: Self.code(error), userInfo: info))
    }

    func fail(_ code: Int, _ url: URL?, _ cause: String) {
        var info: [String: Any] = [NSLocalizedDescriptionKey: "bound to a hotspot command: \(url?.absoluteString ?? "(no URL)"): \(cause)"]
        if let url {
            info[NSURLErrorFailingURLErrorKey] = shown(url)
        }
        report(NSError(domain: NSURLErrorDomain, code: code, userInfo: info))
    }

    func report(_ error: NSError) {
        if urlProtocol.isStopped { return }
        client?.urlProtocol(urlProtocol, didFailWithError: error)
    }

    static func drain(_ stream: InputStream) -> [UInt8] {
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
}

/// The sender of the challenges the bound path makes (answers go through the delegate's completion handler).
final class BoundChallengeSender: NSObject, URLAuthenticationChallengeSender, Sendable {
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}

/// The first Basic or Digest challenge of a 401's `WWW-Authenticate`, and the `Authorization` answering it.
struct HTTPChallenge {
    var method: String
    var parameters: [String: String]

    var realm: String? { parameters["realm"] }

    static func parse(_ answer: HotspotHTTPResponse) -> HTTPChallenge? {
        for h in answer.headers where h.name.lowercased() == "www-authenticate" {
            let text = h.value.trimmingCharacters(in: .whitespaces)
            let scheme = text.prefix { $0 != " " }.lowercased()
            let rest = String(text.dropFirst(scheme.count))
            if scheme == "basic" { return HTTPChallenge(method: NSURLAuthenticationMethodHTTPBasic, parameters: params(rest)) }
            if scheme == "digest" { return HTTPChallenge(method: NSURLAuthenticationMethodHTTPDigest, parameters: params(rest)) }
        }
        return nil
    }

    /// `a="x", b=y` -> [a: x, b: y] (names lowercased).
    static func params(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        var chars = Substring(text)
        while !chars.isEmpty {
            chars = chars.drop { $0 == " " || $0 == "," }
            let name = chars.prefix { $0 != "=" && $0 != "," }
            chars = chars.dropFirst(name.count)
            guard chars.first == "=" else { continue }
            chars = chars.dropFirst()
            var value = ""
            if chars.first == "\"" {
                chars = chars.dropFirst()
                while let c = chars.first, c != "\"" {
                    if c == "\\" { chars = chars.dropFirst() }
                    if let c2 = chars.first { value.append(c2) }
                    chars = chars.dropFirst()
                }
                chars = chars.dropFirst()
            } else {
                let v = chars.prefix { $0 != "," }
                value = v.trimmingCharacters(in: .whitespaces)
                chars = chars.dropFirst(v.count)
            }
            out[name.trimmingCharacters(in: .whitespaces).lowercased()] = value
        }
        return out
    }

    func authorization(user: String, password: String, method httpMethod: String, url: URL) -> String {
        if method == NSURLAuthenticationMethodHTTPBasic {
            return "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        }
        // Digest (RFC 7616 with MD5, qop=auth when offered).
        let realm = parameters["realm"] ?? ""
        let nonce = parameters["nonce"] ?? ""
        var uri = url.path.isEmpty ? "/" : url.path
        if let q = url.query { uri += "?" + q }
        let ha1 = MD5.hex("\(user):\(realm):\(password)")
        let ha2 = MD5.hex("\(httpMethod.uppercased()):\(uri)")
        var fields = ["username=\"\(user)\"", "realm=\"\(realm)\"", "nonce=\"\(nonce)\"", "uri=\"\(uri)\""]
        let qops = (parameters["qop"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if qops.contains("auth") {
            let nc = "00000001"
            let cnonce = String(UInt64.random(in: 0...UInt64.max), radix: 16)
            fields += ["qop=auth", "nc=\(nc)", "cnonce=\"\(cnonce)\"",
                       "response=\"\(MD5.hex("\(ha1):\(nonce):\(nc):\(cnonce):auth:\(ha2)"))\""]
        } else {
            fields.append("response=\"\(MD5.hex("\(ha1):\(nonce):\(ha2)"))\"")
        }
        if let opaque = parameters["opaque"] { fields.append("opaque=\"\(opaque)\"") }
        fields.append("algorithm=MD5")
        return "Digest " + fields.joined(separator: ", ")
    }
}

/// MD5 (RFC 1321), for HTTP Digest only.
enum MD5 {
    static func hex(_ text: String) -> String { digest(Array(text.utf8)).map { String(format: "%02x", $0) }.joined() }

    static func digest(_ message: [UInt8]) -> [UInt8] {
        let s: [UInt32] = [7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                           5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
                           4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                           6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21]
        let k: [UInt32] = (0..<64).map { UInt32(truncatingIfNeeded: Int64(abs(sin(Double($0 + 1))) * 4_294_967_296)) }
        var a0: UInt32 = 0x67452301, b0: UInt32 = 0xefcdab89, c0: UInt32 = 0x98badcfe, d0: UInt32 = 0x10325476
        var m = message
        let bitLength = UInt64(message.count) * 8
        m.append(0x80)
        while m.count % 64 != 56 { m.append(0) }
        for i in 0..<8 { m.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(i)))) }
        for chunk in stride(from: 0, to: m.count, by: 64) {
            var w = [UInt32](repeating: 0, count: 16)
            for i in 0..<16 {
                let b = chunk + i * 4
                w[i] = UInt32(m[b]) | UInt32(m[b + 1]) << 8 | UInt32(m[b + 2]) << 16 | UInt32(m[b + 3]) << 24
            }
            var a = a0, b = b0, c = c0, d = d0
            for i in 0..<64 {
                var f: UInt32
                let g: Int
                switch i {
                case 0..<16: f = (b & c) | (~b & d); g = i
                case 16..<32: f = (d & b) | (~d & c); g = (5 * i + 1) % 16
                case 32..<48: f = b ^ c ^ d; g = (3 * i + 5) % 16
                default: f = c ^ (b | ~d); g = (7 * i) % 16
                }
                f = f &+ a &+ k[i] &+ w[g]
                a = d
                d = c
                c = b
                b = b &+ (f << s[i] | f >> (32 - s[i]))
            }
            a0 = a0 &+ a; b0 = b0 &+ b; c0 = c0 &+ c; d0 = d0 &+ d
        }
        return [a0, b0, c0, d0].flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
    }
}

/// An `http`/`https` scheme written in capitals (`HTTP://`): the wire and the cookies use it lowercased, the
/// helper reads it as written.
enum SchemeCase {
    static func isCapitalised(_ url: URL?) -> Bool {
        guard let scheme = url?.scheme, scheme != scheme.lowercased() else { return false }
        return scheme.lowercased() == "http" || scheme.lowercased() == "https"
    }

    /// `url` with a lowercase scheme.
    static func plain(_ url: URL) -> URL {
        guard isCapitalised(url) else { return url }
        return with(url, scheme: url.scheme!.lowercased()) ?? url
    }

    /// `url` written as `like` is: its scheme in capitals when `like`'s is.
    static func form(_ url: URL, like: URL?) -> URL {
        guard isCapitalised(like), let scheme = url.scheme?.uppercased() else { return url }
        return with(url, scheme: scheme) ?? url
    }

    private static func with(_ url: URL, scheme: String) -> URL? {
        let text = url.absoluteString
        guard let colon = text.firstIndex(of: ":") else { return nil }
        return URL(string: scheme + text[colon...])
    }
}
