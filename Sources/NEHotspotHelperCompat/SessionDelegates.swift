// URLSession's delegate protocols with the `async` forms Apple declares, and server trust in Apple's spellings.
//
// swift-corelibs-foundation declares only the completion-handler forms of the delegate methods, so an `async`
// `urlSession(_:task:willPerformHTTPRedirection:newRequest:)` written for iOS compiles on Linux but is never
// called. The compat module re-declares `URLSessionDelegate`, `URLSessionTaskDelegate`, `URLSessionDataDelegate`
// and `URLSessionDownloadDelegate` as refinements of Foundation's with the async requirements added (a module
// that re-exports Foundation shadows its names), so a helper's class written `class D: NSObject,
// URLSessionTaskDelegate` conforms to both, and the bound path (BoundURLLoader.swift) calls the async form; the
// defaults call the completion-handler form, as Apple's URLSession does when only that one is written.
// Foundation's own HTTP path (unbound requests) still calls only the completion-handler forms.
//
// Server trust: Linux has no Security framework. `SecTrust` here is what the SDK's TLS client learned of the
// server (host, port, whether the certificate verified); `URLProtectionSpace.serverTrust` gives it in a
// server-trust challenge and `URLCredential(trust:)` accepts it, as on iOS.
import Synchronization

/// Apple's `URLSessionDelegate`, with the async session-level challenge form.
public protocol URLSessionDelegate: FoundationNetworking.URLSessionDelegate {
    func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
}

extension URLSessionDelegate {
    public func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        await withCheckedContinuation { done in
            let once = ResumeOnce(done)
            self.urlSession(session, didReceive: challenge) { once.resume(($0, $1)) }
        }
    }
}

/// Apple's `URLSessionTaskDelegate`, with the async redirect and challenge forms.
public protocol URLSessionTaskDelegate: FoundationNetworking.URLSessionTaskDelegate, URLSessionDelegate {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest) async -> URLRequest?
    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
}

extension URLSessionTaskDelegate {
    public func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                           newRequest request: URLRequest) async -> URLRequest?
    {
        await withCheckedContinuation { done in
            let once = ResumeOnce(done)
            self.urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: request) { once.resume($0) }
        }
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        await withCheckedContinuation { done in
            let once = ResumeOnce(done)
            self.urlSession(session, task: task, didReceive: challenge) { once.resume(($0, $1)) }
        }
    }
}

/// Apple's `URLSessionDataDelegate` (a `URLSessionTaskDelegate` with the async forms).
public protocol URLSessionDataDelegate: FoundationNetworking.URLSessionDataDelegate, URLSessionTaskDelegate {}

/// Apple's `URLSessionDownloadDelegate` (a `URLSessionTaskDelegate` with the async forms).
public protocol URLSessionDownloadDelegate: FoundationNetworking.URLSessionDownloadDelegate, URLSessionTaskDelegate {}

/// Resumes a continuation once (a delegate calling its completion handler twice is ignored the second time).
final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, Never>?>

    init(_ continuation: CheckedContinuation<T, Never>) { self.continuation = Mutex(continuation) }

    func resume(_ value: T) {
        // Taken under the lock, resumed outside it.
        let c = continuation.withLock { c -> CheckedContinuation<T, Never>? in
            defer { c = nil }
            return c
        }
        c?.resume(returning: value)
    }
}

/// The server's side of a TLS connection as the SDK's TLS client verified it (Apple's `SecTrust` is the
/// Security framework's; this one carries what a helper needs to decide: who the server is and whether its
/// certificate verified against the trust store).
public final class SecTrust: Sendable {
    /// The host name (or IPv4 literal) asked for, and the port.
    public let host: String
    public let port: Int
    /// Why the certificate did not verify, nil when it did.
    public let failure: String?

    init(_ trust: HotspotServerTrust) {
        host = trust.host
        port = Int(trust.port)
        failure = trust.failure
    }
}

/// Apple's `SecTrustEvaluateWithError`: true when the certificate verified; else false with the failure.
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool {
    if let failure = trust.failure {
        error?.pointee = NSError(domain: NSOSStatusErrorDomain, code: -67843, userInfo: [NSLocalizedDescriptionKey: failure])
        return false
    }
    return true
}

/// Apple's `CFError` (Foundation's NSError on Linux).
public typealias CFError = NSError

/// `NSOSStatusErrorDomain`, the domain of `SecTrustEvaluateWithError`'s errors.
public let NSOSStatusErrorDomain = "NSOSStatusErrorDomain"

/// Apple's authentication method of server-trust challenges (swift-corelibs-foundation declares it unavailable).
public let NSURLAuthenticationMethodServerTrust = "NSURLAuthenticationMethodServerTrust"

/// A protection space of a server-trust challenge: it carries the server's trust.
final class ServerTrustProtectionSpace: URLProtectionSpace, @unchecked Sendable {  // @unchecked: a subclass of Foundation's class (not checkable); adds one `let` of a Sendable SecTrust
    let trust: SecTrust

    init(_ trust: SecTrust) {
        self.trust = trust
        super.init(host: trust.host, port: trust.port, protocol: NSURLProtectionSpaceHTTPS, realm: nil,
                   authenticationMethod: NSURLAuthenticationMethodServerTrust)
    }

    required init?(coder: NSCoder) { nil }
}

extension URLProtectionSpace {
    /// The server's trust in a server-trust challenge (`NSURLAuthenticationMethodServerTrust`), else nil.
    public var serverTrust: SecTrust? { (self as? ServerTrustProtectionSpace)?.trust }
}

extension URLCredential {
    /// Apple's credential that accepts a server's trust (answer a server-trust challenge with it and
    /// `.useCredential` to go on with a certificate that did not verify).
    public convenience init(trust: SecTrust) {
        self.init(user: "", password: "", persistence: .none)
        TrustCredentials.shared.add(self, trust)
    }

    /// The trust this credential accepts (made by `init(trust:)`), nil for a password credential.
    var acceptedTrust: SecTrust? { TrustCredentials.shared.trust(of: self) }
}

/// Which credentials were made by `URLCredential(trust:)` (weakly).
final class TrustCredentials: Sendable {
    static let shared = TrustCredentials()
    private let entries = Mutex<[(credential: Weak, trust: SecTrust)]>([])

    struct Weak {
        weak var credential: URLCredential?
    }

    func add(_ credential: URLCredential, _ trust: SecTrust) {
        entries.withLock { entries in
            entries.removeAll { $0.credential.credential == nil }
            entries.append((Weak(credential: credential), trust))
        }
    }

    func trust(of credential: URLCredential) -> SecTrust? {
        entries.withLock { entries in entries.first { $0.credential.credential === credential }?.trust }
    }
}
