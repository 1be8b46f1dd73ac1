import Foundation
import HotspotCore
import HotspotSystem
import NEHotspotHelperCompat
import Portals
import TestSupport
import Testing
@testable import HotspotHelper
#if canImport(Glibc)
import Glibc
#endif

/// A request as the test server saw it.
struct Seen: Sendable {
    var method: String
    var path: String
    var query: String
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// An answer of the test server (headers in order: a response may set several cookies).
struct Answer: Sendable {
    var status: Int
    var headers: [(String, String)] = []
    var body: String = ""
    var delaySeconds: Double = 0
}

/// The local servers the fidelity tests talk to: plain HTTP (own code, one thread per connection) and HTTPS
/// (the portal's `LabHTTPServer` with TLS) on 127.0.0.1, port 0, the same routes on both. Every request is logged.
final class FidelityServer: @unchecked Sendable {
    let httpPort: UInt16
    let httpsPort: UInt16
    private let listener: Int32
    private let tls: LabHTTPServer
    private let lock = NSLock()
    private var seen: [Seen] = []
    private var hits: [String: Int] = [:]

    init(certificate: String, key: String) throws {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        listener = listening
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard listening >= 0, bound == 0, listen(listening, 64) == 0 else { throw SystemError.current("listen on", "127.0.0.1:0") }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listening, $0, &length) } }
        httpPort = UInt16(bigEndian: actual.sin_port)
        let context = try TLSServerContext(certificateFile: certificate, keyFile: key)
        let (tlsListener, tlsPort) = try LabHTTPServer.listen(ip: "127.0.0.1", port: 0)
        httpsPort = tlsPort
        nonisolated(unsafe) var me: FidelityServer?
        tls = LabHTTPServer(tls: context, ioTimeoutSeconds: 10) { request, _ in
            let seen = Seen(method: request.method, path: request.path, query: request.query, headers: request.headers, body: request.body)
            guard let server = me else { return PortalResponse(status: 500) }
            let answer = server.answer(seen, secure: true)
            if answer.delaySeconds > 0 { try? await Task.sleep(for: .milliseconds(Int(answer.delaySeconds * 1000))) }
            var headers: [String: String] = [:]
            for (n, v) in answer.headers { headers[n] = v }
            return PortalResponse(status: answer.status, headers: headers, body: answer.body)
        }
        me = self
        tls.start(listener: tlsListener)
        let fd = listener
        Thread.detachNewThread { [self] in
            while true {
                let c = accept(fd, nil, nil)
                if c < 0 {
                    if Errno.current == EINTR { continue }
                    return
                }
                Thread.detachNewThread { [self] in serve(c) }
            }
        }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        tls.stop()
    }

    var log: [Seen] { lock.withLock { seen } }
    func count(_ path: String) -> Int { lock.withLock { hits[path] ?? 0 } }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        func headEnd() -> Int? {
            guard got.count >= 4 else { return nil }
            for i in 0...(got.count - 4) where got[i] == 13 && got[i + 1] == 10 && got[i + 2] == 13 && got[i + 3] == 10 { return i }
            return nil
        }
        while headEnd() == nil {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return }
            got += buffer[0..<n]
        }
        let end = headEnd()!
        let head = String(decoding: got[0..<end], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return }
        var headers: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var body = Array(got[(end + 4)...])
        let chunked = headers.contains { $0.0.lowercased() == "transfer-encoding" && $0.1.lowercased().contains("chunked") }
        if let length = headers.first(where: { $0.0.lowercased() == "content-length" }).flatMap({ Int($0.1) }) {
            while body.count < length {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { break }
                body += buffer[0..<n]
            }
        } else if chunked {
            while !Self.chunkedComplete(body) {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { break }
                body += buffer[0..<n]
            }
            body = Self.dechunk(body)
        }
        let target = String(requestLine[1])
        let (path, query) = target.firstIndex(of: "?").map { (String(target[..<$0]), String(target[target.index(after: $0)...])) } ?? (target, "")
        let seen = Seen(method: String(requestLine[0]), path: path, query: query, headers: headers, body: body)
        let answer = self.answer(seen, secure: false)
        if answer.delaySeconds > 0 { usleep(useconds_t(answer.delaySeconds * 1_000_000)) }
        var out = "HTTP/1.1 \(answer.status) X\r\n"
        for (n, v) in answer.headers { out += "\(n): \(v)\r\n" }
        out += "Content-Length: \(answer.body.utf8.count)\r\nConnection: close\r\n\r\n" + answer.body
        let bytes = Array(out.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    static func chunkedComplete(_ body: [UInt8]) -> Bool {
        String(decoding: body, as: UTF8.self).contains("\r\n0\r\n\r\n") || String(decoding: body, as: UTF8.self).hasPrefix("0\r\n\r\n")
    }

    static func dechunk(_ body: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < body.count {
            guard let lf = body[i...].firstIndex(of: 10) else { break }
            let sizeText = String(decoding: body[i..<lf], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16), size > 0 else { break }
            out += body[(lf + 1)..<min(body.count, lf + 1 + size)]
            i = lf + 1 + size + 2
        }
        return out
    }

    /// The routes.
    func answer(_ r: Seen, secure: Bool) -> Answer {
        lock.withLock {
            seen.append(r)
            hits[r.path, default: 0] += 1
        }
        let echo = "\(r.method) \(r.path)\(r.query.isEmpty ? "" : "?" + r.query) cookie=\(r.header("Cookie") ?? "-") body=\(r.text)"
        switch r.path {
        case "/landing": return Answer(status: 200, body: "welcome")
        case "/echo": return Answer(status: 200, headers: [("Content-Type", "text/plain")], body: echo)
        case "/redirect": return Answer(status: 302, headers: [("Location", "/landing")], body: "moved")
        case "/redirect2": return Answer(status: 302, headers: [("Location", "/redirect")], body: "moved twice")
        case "/see-other": return Answer(status: 303, headers: [("Location", "/echo")])
        case "/temporary": return Answer(status: 307, headers: [("Location", "/echo")])
        case "/found-echo": return Answer(status: 302, headers: [("Location", "/echo")])
        case "/loop": return Answer(status: 302, headers: [("Location", "/loop")])
        case "/set-cookie":
            return Answer(status: 200, headers: [("Set-Cookie", "session=s1; Path=/"), ("Set-Cookie", "hidden=h1; Path=/; HttpOnly")],
                          body: "cookie set")
        case "/set-secure-cookie":
            return Answer(status: 200, headers: [("Set-Cookie", "token=t1; Path=/; Secure; HttpOnly")], body: "secure cookie set")
        case "/set-path-cookie":
            return Answer(status: 200, headers: [("Set-Cookie", "scoped=p1; Path=/scoped")], body: "path cookie set")
        case "/set-expired-cookie":
            return Answer(status: 200, headers: [("Set-Cookie", "session=gone; Path=/; Expires=Thu, 01 Jan 1970 00:00:01 GMT")], body: "expired")
        case "/redirect-set-cookie":
            return Answer(status: 302, headers: [("Set-Cookie", "hop=r1; Path=/"), ("Location", "/echo")], body: "moved")
        case "/scoped/echo", "/other/echo": return Answer(status: 200, body: echo)
        case "/slow": return Answer(status: 200, body: "slow", delaySeconds: 3)
        case "/headers":
            let names = r.headers.map { "\($0.0.lowercased())=\($0.1)" }.joined(separator: "\n")
            return Answer(status: 200, body: names)
        case "/basic":
            if r.header("Authorization") == "Basic " + Data("guest:secret".utf8).base64EncodedString() {
                return Answer(status: 200, body: "basic ok")
            }
            return Answer(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"lab\"")], body: "who are you")
        case "/digest":
            if let auth = r.header("Authorization"), Self.digestValid(auth, method: r.method) { return Answer(status: 200, body: "digest ok") }
            return Answer(status: 401, headers: [("WWW-Authenticate", "Digest realm=\"lab\", qop=\"auth\", nonce=\"n0nce\", opaque=\"op\"")],
                          body: "who are you")
        case "/cached":
            return Answer(status: 200, headers: [("Cache-Control", "max-age=600"), ("Date", Self.httpDate(Date()))],
                          body: "cached \(count("/cached"))")
        default: return Answer(status: 404, body: "no route \(r.path)")
        }
    }

    static func httpDate(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: date)
    }

    /// Checks a Digest answer for user guest, password secret, realm lab (RFC 7616, MD5, qop=auth).
    static func digestValid(_ header: String, method: String) -> Bool {
        guard header.hasPrefix("Digest ") else { return false }
        var p: [String: String] = [:]
        for part in header.dropFirst(7).components(separatedBy: ", ") {
            guard let eq = part.firstIndex(of: "=") else { continue }
            p[String(part[..<eq])] = part[part.index(after: eq)...].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        guard let uri = p["uri"], let nc = p["nc"], let cnonce = p["cnonce"], let response = p["response"] else { return false }
        let ha1 = md5("guest:lab:secret")
        let ha2 = md5("\(method):\(uri)")
        return response == md5("\(ha1):n0nce:\(nc):\(cnonce):auth:\(ha2)")
    }

    /// MD5 by the openssl command (an implementation independent of the SDK's).
    static func md5(_ text: String) -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = ["md5", "-r"]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try? p.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try? input.fileHandleForWriting.close()
        let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return String(out.prefix(32))
    }
}

/// Certificates for one test run (the openssl command): a CA the SDK trusts (HOTSPOT_CA_FILE) and a server
/// certificate for 127.0.0.1 it signs; and a self-signed one for 127.0.0.1 nobody trusts.
struct FidelityCertificates: Sendable {
    let dir: String
    var ca: String { dir + "/ca.pem" }
    var cert: String { dir + "/server.pem" }
    var key: String { dir + "/server.key" }
    var selfSigned: String { dir + "/self.pem" }
    var selfSignedKey: String { dir + "/self.key" }

    static let shared: Result<FidelityCertificates, any Error> = Result { try make() }

    static func make() throws -> FidelityCertificates {
        let dir = NSTemporaryDirectory() + "hsl-fidelity-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(["req", "-x509"] + ec + ["-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.pem", "-days", "1", "-subj", "/CN=fidelity CA",
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
        try openssl(["req", "-new"] + ec + ["-keyout", "\(dir)/server.key", "-out", "\(dir)/server.csr", "-subj", "/CN=server"])
        try "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n".write(toFile: "\(dir)/server.ext", atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", "\(dir)/server.csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key", "-set_serial", "0x77",
                     "-days", "1", "-out", "\(dir)/server.pem", "-extfile", "\(dir)/server.ext"])
        try openssl(["req", "-x509"] + ec + ["-keyout", "\(dir)/self.key", "-out", "\(dir)/self.pem", "-days", "1", "-subj", "/CN=self-signed portal",
                     "-addext", "subjectAltName=IP:127.0.0.1"])
        return FidelityCertificates(dir: dir)
    }

    static func openssl(_ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = arguments
        p.standardError = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw HotspotHelperError("openssl \(arguments.prefix(2).joined(separator: " ")): exit \(p.terminationStatus)") }
    }
}

/// A real command from a hotspotd-like peer: a helper client connected over a Unix socket to a listener the
/// test holds (the command is what the SDK made of a `command` message; nothing answers it).
final class CommandPeer: @unchecked Sendable {
    let dir: String
    let listener: UnixSocket
    let client: HelperClient
    let command: HotspotHelperCommand

    init() throws {
        dir = NSTemporaryDirectory() + "hsl-fidelity-cmd-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        listener = try UnixSocket.listen(path: dir + "/helper.sock")
        let socket = try UnixSocket.connect(path: dir + "/helper.sock")
        client = HelperClient(socket: socket, queue: DispatchQueue(label: "fidelity-cmd"), identifier: "fidelity", handler: { _ in })
        command = HotspotHelperCommand(
            Command(id: 23, type: .authenticate, helper: "fidelity", network: nil, deadline: .seconds(120)), client: client)
    }

    func close() {
        listener.close()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// What one run of a request produced, as the helper's code reads it.
struct Outcome: Sendable, CustomStringConvertible {
    var status: Int?
    var body: String?
    var location: String?
    var responseURL: URL?
    var errorCode: Int?
    var errorDomain: String?

    var description: String {
        "status=\(status.map(String.init) ?? "-") error=\(errorCode.map(String.init) ?? "-") url=\(responseURL?.absoluteString ?? "-") location=\(location ?? "-") body=\(body?.prefix(120) ?? "-")"
    }
}

/// A delegate that records what it is asked and answers as told (redirects, challenges, server trust), in
/// the completion-handler forms or, for `AsyncRecorder`, the async forms.
class Recorder: NSObject, URLSessionTaskDelegate, URLSessionDataDelegate, @unchecked Sendable {
    enum RedirectAnswer { case follow, stop, change(String) }
    let lock = NSLock()
    var redirectAnswer: RedirectAnswer = .follow
    var credential: URLCredential?
    var cancelChallenge = false
    var acceptTrust = false
    private(set) var redirects: [(status: Int, location: String?, newURL: URL?)] = []
    private(set) var challenges: [(method: String, failures: Int)] = []
    private(set) var events: [String] = []

    func note(_ e: String) { lock.withLock { events.append(e) } }

    func redirectDecision(_ response: HTTPURLResponse, _ request: URLRequest) -> URLRequest? {
        lock.withLock { redirects.append((response.statusCode, response.value(forHTTPHeaderField: "Location"), request.url)) }
        switch redirectAnswer {
        case .follow: return request
        case .stop: return nil
        case .change(let path):
            var changed = request
            changed.url = URL(string: path, relativeTo: request.url)?.absoluteURL
            return changed
        }
    }

    func challengeDecision(_ challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let method = challenge.protectionSpace.authenticationMethod
        lock.withLock { challenges.append((method, challenge.previousFailureCount)) }
        if cancelChallenge { return (.cancelAuthenticationChallenge, nil) }
        if method == NSURLAuthenticationMethodServerTrust {
            if acceptTrust, let trust = challenge.protectionSpace.serverTrust { return (.useCredential, URLCredential(trust: trust)) }
            return (.performDefaultHandling, nil)
        }
        if let credential, challenge.previousFailureCount == 0 { return (.useCredential, credential) }
        return (.performDefaultHandling, nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void)
    {
        note("redirect")
        completionHandler(redirectDecision(response, request))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
    {
        note("challenge")
        let (d, c) = challengeDecision(challenge)
        completionHandler(d, c)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void)
    {
        note("response")
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) { note("data") }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        note(error == nil ? "complete" : "complete-error")
    }
}

/// A delegate written with Apple's async redirect form only (conforming on its own: a subclass's method would
/// not be the witness of a requirement its superclass already satisfies).
final class AsyncRecorder: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let lock = NSLock()
    var stop = true
    private(set) var events: [String] = []

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest) async -> URLRequest?
    {
        lock.withLock { events.append("async-redirect") }
        return stop ? nil : request
    }
}

/// Runs requests bound and unbound and reads what came back.
struct Runner {
    let peer: CommandPeer
    let server: FidelityServer

    func url(_ path: String, secure: Bool = false) -> URL {
        URL(string: secure ? "https://127.0.0.1:\(server.httpsPort)\(path)" : "http://127.0.0.1:\(server.httpPort)\(path)")!
    }

    /// A request for `path`, bound to the command when `bound`.
    func request(_ path: String, bound: Bool, secure: Bool = false) -> URLRequest {
        let r = NSMutableURLRequest(url: url(path, secure: secure))
        r.timeoutInterval = 20
        if bound { r.bind(to: peer.command) }
        return r as URLRequest
    }

    /// One data task with a completion handler, waited for.
    static func data(_ session: URLSession, _ request: URLRequest) -> Outcome {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome = Outcome()
        session.dataTask(with: request) { data, response, error in
            outcome = Self.outcome(data, response, error)
            done.signal()
        }.resume()
        done.wait()
        return outcome
    }

    static func outcome(_ data: Data?, _ response: URLResponse?, _ error: (any Error)?) -> Outcome {
        let http = response as? HTTPURLResponse
        return Outcome(status: http?.statusCode, body: data.map { String(decoding: $0, as: UTF8.self) },
                       location: http?.value(forHTTPHeaderField: "Location"), responseURL: response?.url,
                       errorCode: error.map { ($0 as NSError).code }, errorDomain: error.map { ($0 as NSError).domain })
    }

    static func session(_ configuration: URLSessionConfiguration = .ephemeral, delegate: (any FoundationNetworking.URLSessionDelegate)? = nil) -> URLSession {
        URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }
}

/// The fixtures every fidelity test uses: certificates, the servers, a command.
struct Fidelity {
    let certificates: FidelityCertificates
    let server: FidelityServer
    let peer: CommandPeer
    var runner: Runner { Runner(peer: peer, server: server) }

    init() throws {
        certificates = try FidelityCertificates.shared.get()
        // The SDK's TLS client trusts the test CA (the lab sets HOTSPOT_CA_FILE the same way). Foundation's
        // libcurl reads only the system store: unbound https to these servers does not verify.
        setenv("HOTSPOT_CA_FILE", certificates.ca, 1)
        server = try FidelityServer(certificate: certificates.cert, key: certificates.key)
        peer = try CommandPeer()
    }

    func stop() {
        server.stop()
        peer.close()
    }

    /// Runs `body` bound and unbound; returns both results.
    func both<T>(_ body: (_ bound: Bool) throws -> T) rethrows -> (bound: T, unbound: T) {
        (try body(true), try body(false))
    }
}
