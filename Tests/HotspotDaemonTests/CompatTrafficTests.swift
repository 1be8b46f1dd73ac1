import Foundation
import Glibc
import HotspotClient
import HotspotCore
import NEHotspotHelperCompat
import HotspotProtocol
import HotspotStation
import HotspotSystem
import Netlink
import Testing
import TestSupport

/// What the portal side serves to the compat fixture: an HTTP portal (`/start` redirects to `/landing`, which
/// says "welcome"), a TCP echo and a UDP echo (both answer "pong:" + what they got). Sockets are made inside
/// `namespace` when given (the portal side of a veth), else on 127.0.0.1; each is served by its own thread.
final class CompatServers: @unchecked Sendable {
    let httpPort: UInt16
    let tcpPort: UInt16
    let udpPort: UInt16
    private let fds: [Int32]
    private let lock = NSLock()
    private var paths: [String] = []
    private var exchanges: [String] = []

    init(in namespace: NetworkNamespace?, address: String) throws {
        let make = { () throws -> [Int32] in
            [try Self.listen(SOCK_STREAM, address), try Self.listen(SOCK_STREAM, address), try Self.listen(SOCK_DGRAM, address)]
        }
        fds = try namespace.map { try $0.runInside(make) } ?? make()
        httpPort = Self.port(fds[0])
        tcpPort = Self.port(fds[1])
        udpPort = Self.port(fds[2])
        let (http, tcp, udp) = (fds[0], fds[1], fds[2])
        Thread.detachNewThread { [self] in serveHTTP(http) }
        Thread.detachNewThread { Self.serveTCP(tcp) }
        Thread.detachNewThread { Self.serveUDP(udp) }
    }

    /// The paths the portal was asked for, in order.
    var requests: [String] { lock.withLock { paths } }
    /// "METHOD PATH BODY" of every request, in order.
    var log: [String] { lock.withLock { exchanges } }

    func stop() {
        for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit {
        for fd in fds { close(fd) }
    }

    static func listen(_ type: __socket_type, _ address: String) throws -> Int32 {
        let fd = socket(AF_INET, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, address, &addr.sin_addr)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, type == SOCK_DGRAM || Glibc.listen(fd, 16) == 0 else {
            throw SystemError.current("bind/listen a test server", "\(address):0")
        }
        return fd
    }

    static func port(_ fd: Int32) -> UInt16 {
        var addr = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: addr.sin_port)
    }

    static func readHead(_ fd: Int32) -> String {
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: got, as: UTF8.self).contains("\r\n\r\n") {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            got += buffer[0..<n]
        }
        return String(decoding: got, as: UTF8.self)
    }

    private func serveHTTP(_ listener: Int32) {
        while true {
            let c = accept(listener, nil, nil)
            if c < 0 { return }
            var head = Self.readHead(c)
            let words = head.split(separator: " ")
            let method = words.first.map(String.init) ?? "?"
            let path = words.dropFirst().first.map(String.init) ?? "?"
            // The body: what came with the head, then the rest of Content-Length.
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            var body = head.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
            var buffer = [UInt8](repeating: 0, count: 4096)
            while body.utf8.count < length {
                let n = recv(c, &buffer, buffer.count, 0)
                if n <= 0 { break }
                body += String(decoding: buffer[0..<n], as: UTF8.self)
            }
            head = ""
            lock.withLock {
                paths.append(path)
                exchanges.append("\(method) \(path) \(body)")
            }
            let redirect = { (status: String, location: String) in
                "HTTP/1.1 \(status)\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            }
            let answer: String
            switch path {
            case "/start": answer = redirect("302 Found", "/landing")
            case "/post302": answer = redirect("302 Found", "/landing")
            case "/post303": answer = redirect("303 See Other", "/landing")
            case "/post307": answer = redirect("307 Temporary Redirect", "/landing")
            case "/loop": answer = redirect("302 Found", "/loop")
            default: answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 7\r\nConnection: close\r\n\r\nwelcome"
            }
            _ = answer.withCString { send(c, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            close(c)
        }
    }

    private static func serveTCP(_ listener: Int32) {
        while true {
            let c = accept(listener, nil, nil)
            if c < 0 { return }
            var buffer = [UInt8](repeating: 0, count: 512)
            let n = recv(c, &buffer, buffer.count, 0)
            if n > 0 {
                let answer = Array("pong:".utf8) + buffer[0..<n]
                _ = send(c, answer, answer.count, Int32(MSG_NOSIGNAL))
            }
            close(c)
        }
    }

    private static func serveUDP(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            var peer = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
            }
            if n <= 0 { return }
            let answer = Array("pong:".utf8) + buffer[0..<n]
            _ = withUnsafePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, answer, answer.count, 0, $0, length) }
            }
        }
    }
}

/// hotspot-compat-fixture (a legacy helper in Apple's names) as a process, with the environment the lab gives.
final class CompatFixtureProcess: @unchecked Sendable {
    let process = Process()
    let log: String

    init(daemon: DaemonUnderTest, identifier: String, servers: CompatServers, host: String, namespace: NetworkNamespace?,
         extraEnvironment: [String: String] = [:]) throws
    {
        log = daemon.logDir + "/compat-fixture-\(UInt32.random(in: 0...UInt32.max)).log"
        FileManager.default.createFile(atPath: log, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: log) else { throw ClientError("open \(log) for the fixture's output") }
        let fixture = try Products.path("hotspot-compat-fixture")
        if let namespace {
            process.executableURL = URL(fileURLWithPath: try Products.path("hotspot-nsexec"))
            process.arguments = [namespace.path, "--", fixture]
        } else {
            process.executableURL = URL(fileURLWithPath: fixture)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["HOTSPOT_HELPER_SOCKET"] = daemon.helperSocket
        environment["HOTSPOT_HELPER_IDENTIFIER"] = identifier
        environment["PORTAL_URL"] = "http://\(host):\(servers.httpPort)/start"
        environment["ECHO_HOST"] = host
        environment["ECHO_TCP_PORT"] = String(servers.tcpPort)
        environment["ECHO_UDP_PORT"] = String(servers.udpPort)
        environment.merge(extraEnvironment) { $1 }
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try daemon.control.waitForStatus(timeout: .seconds(20), "the compat fixture to register") { s in
            s["helpers"]?.arrayValue?.contains { $0["identifier"]?.stringValue == identifier } ?? false
        }
    }

    var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// The fixture's "check NAME ok|fail DETAIL" lines by name: (passed, detail).
    var checks: [String: (ok: Bool, detail: String)] {
        var out: [String: (ok: Bool, detail: String)] = [:]
        for line in output.split(separator: "\n") where line.hasPrefix("check ") {
            let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
            guard parts.count >= 3 else { continue }
            out[parts[1]] = (parts[2] == "ok", parts.count > 3 ? parts[3] : "")
        }
        return out
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
    }

    deinit { stop() }
}

extension DaemonUnderTest {
    /// Waits until the authentication ends: Authenticated (the helper answered success) or Failure.
    func waitForEnd(timeout: Duration = .seconds(30)) throws -> JSON {
        try control.waitForStatus(timeout: timeout, "state Authenticated or Failure") {
            ["Authenticated", "Failure"].contains($0["state"]?.stringValue ?? "")
        }
    }
}

@Suite("NEHotspotHelperCompat traffic", .serialized)
struct CompatTrafficTests {
    @Test("a legacy helper in Apple's names (only the import changed) runs against hotspotd: supportedNetworkInterfaces as [Any]?, fetchCurrent, securityType, bound URLSession with a redirect, NWTCPConnection, NWUDPSession")
    func legacyHandlerInAppleNames() throws {
        let servers = try CompatServers(in: nil, address: "127.0.0.1")
        defer { servers.stop() }
        let d = try DaemonUnderTest(name: "compat-apple", timeScale: "0.5")
        let fixture = try CompatFixtureProcess(daemon: d, identifier: "com.example.apple-names", servers: servers,
                                               host: "127.0.0.1", namespace: nil)
        defer { fixture.stop() }
        try d.join(cafeSecure)
        let s = try d.waitForEnd()
        #expect(s["state"]?.stringValue == "Authenticated", "\(fixture.output)")
        #expect(s["bestHelper"]?.stringValue == "com.example.apple-names")
        #expect(s["helpers"]?.arrayValue?.first?["displayName"]?.stringValue == "Apple Names")
        let checks = fixture.checks
        #expect(checks["evaluate-securityType"]?.detail == "CafeSecure personal", "\(fixture.output)")
        #expect(checks["supportedNetworkInterfaces"]?.ok == true, "\(fixture.output)")
        #expect(checks["supportedNetworkInterfaces"]?.detail.hasPrefix("CafeSecure personal") == true, "\(fixture.output)")
        #expect(checks["fetchCurrent"]?.detail == "CafeSecure 02:00:00:00:00:02", "\(fixture.output)")
        // The bound request followed the portal's redirect and reports the final URL as iOS does (the binding is
        // not in the URL: `bind(to:)` leaves it as written).
        #expect(checks["bound-urlsession"]?.ok == true, "\(fixture.output)")
        #expect(checks["bound-urlsession"]?.detail.hasPrefix("200 http://127.0.0.1:\(servers.httpPort)/landing welcome") == true,
                "\(fixture.output)")
        // No suppression here: the unbound request goes through too.
        #expect(checks["unbound-urlsession"]?.ok == true, "\(fixture.output)")
        #expect(checks["tcp"]?.ok == true, "\(fixture.output)")
        #expect(checks["udp"]?.ok == true, "\(fixture.output)")
        #expect(servers.requests == ["/start", "/landing", "/start", "/landing"])
    }

    @Test("register(options: nil) registers, as Apple's does, with the application's (program's) name, cut to 15 characters")
    func registerWithoutOptions() throws {
        let servers = try CompatServers(in: nil, address: "127.0.0.1")
        defer { servers.stop() }
        let d = try DaemonUnderTest(name: "compat-nil-options", timeScale: "0.5")
        let fixture = try CompatFixtureProcess(daemon: d, identifier: "com.example.no-options", servers: servers,
                                               host: "127.0.0.1", namespace: nil, extraEnvironment: ["COMPAT_NO_OPTIONS": "1"])
        defer { fixture.stop() }
        let s = try d.control.status()
        #expect(s["helpers"]?.arrayValue?.first?["displayName"]?.stringValue == "hotspot-compat-", "\(fixture.output)")
    }

    @Test("root: under IP suppression only traffic bound to the command gets through: bound URLSession (with its redirect), NWTCPConnection and NWUDPSession pass; the same URLSession request unbound is blocked",
          .requiresRoot, .tags(.root))
    func onlyBoundTrafficPassesSuppression() throws {
        let p = testPrefix("c")
        let namespaces = try NetworkNamespace.createMany([p + "a", p + "b"])
        let (station, portal) = (namespaces[0], namespaces[1])
        defer { for ns in namespaces { try? ns.delete() } }
        try station.route.createVeth(p + "0", peer: p + "1", peerNamespace: portal)
        try station.route.addAddress(IPPrefix("198.51.100.10/24")!, to: p + "0")
        try portal.route.addAddress(IPPrefix("198.51.100.1/24")!, to: p + "1")
        for (ns, link) in [(station, p + "0"), (portal, p + "1")] {
            try ns.route.setUp("lo")
            try ns.route.setUp(link)
        }
        try station.route.addRoute(Route(gateway: IPAddress("198.51.100.1")))
        let servers = try CompatServers(in: portal, address: "0.0.0.0")
        defer { servers.stop() }
        let suppression = IPSuppression(route: station.route)
        try suppression.install()
        defer { suppression.remove() }
        #expect(try suppression.isSuppressed())

        let d = try DaemonUnderTest(name: "compat-suppressed", timeScale: "0.5")
        let fixture = try CompatFixtureProcess(daemon: d, identifier: "com.example.bound", servers: servers,
                                               host: "198.51.100.1", namespace: station)
        defer { fixture.stop() }
        try d.join(cafeSecure)
        let s = try d.waitForEnd()
        #expect(s["state"]?.stringValue == "Authenticated", "\(fixture.output)")
        let checks = fixture.checks
        #expect(checks["bound-urlsession"]?.ok == true, "\(fixture.output)")
        #expect(checks["bound-urlsession"]?.detail.hasPrefix("200 http://198.51.100.1:\(servers.httpPort)/landing welcome") == true,
                "\(fixture.output)")
        #expect(checks["tcp"]?.ok == true, "\(fixture.output)")
        #expect(checks["udp"]?.ok == true, "\(fixture.output)")
        // Application traffic stays blocked: the unbound request fails and never reaches the portal.
        #expect(checks["unbound-urlsession"]?.ok == false, "\(fixture.output)")
        #expect(servers.requests == ["/start", "/landing"])
    }
}

/// The URLProtocol that serves bound requests, driven through URLSession directly (a URL with the scheme in
/// capitals, which it serves as iOS serves `http`; not bound here, so over an unmarked socket): redirects as
/// URLSession follows them, and errors naming the operation, the target and the cause.
@Suite("NEHotspotHelperCompat bound URLSession requests", .serialized)
struct CompatBoundURLProtocolTests {
    static func run(_ request: URLRequest) -> (Data?, HTTPURLResponse?, NSError?) {
        _ = URLProtocol.registerClass(HotspotCommandURLProtocol.self)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: (Data?, HTTPURLResponse?, NSError?) = (nil, nil, nil)
        URLSession.shared.dataTask(with: request) { data, response, error in
            result = (data, response as? HTTPURLResponse, error.map { $0 as NSError })
            done.signal()
        }.resume()
        done.wait()
        return result
    }

    static func bound(_ port: UInt16, _ path: String, method: String = "GET", body: String? = nil) throws -> URLRequest {
        var r = URLRequest(url: try #require(URL(string: "HTTP://127.0.0.1:\(port)\(path)")))
        r.httpMethod = method
        r.httpBody = body.map { Data($0.utf8) }
        r.timeoutInterval = 5
        return r
    }

    @Test("302 and 303 turn a POST into a GET without its body; 307 keeps method and body; the answer carries the final URL in the request's form")
    func redirects() throws {
        let servers = try CompatServers(in: nil, address: "127.0.0.1")
        defer { servers.stop() }
        for (path, expected) in [("/post302", "GET /landing "), ("/post303", "GET /landing "), ("/post307", "POST /landing a=1")] {
            let (data, response, error) = Self.run(try Self.bound(servers.httpPort, path, method: "POST", body: "a=1"))
            #expect(error == nil, "\(path): \(String(describing: error))")
            #expect(response?.statusCode == 200)
            #expect(response?.url?.absoluteString == "HTTP://127.0.0.1:\(servers.httpPort)/landing")
            #expect(data.map { String(decoding: $0, as: UTF8.self) } == "welcome")
            #expect(servers.log.last == expected, "\(path): \(servers.log)")
        }
        #expect(servers.log.filter { $0.hasPrefix("POST /post") }.count == 3)
    }

    @Test("a redirect loop ends after 20 redirects with NSURLErrorHTTPTooManyRedirects")
    func tooManyRedirects() throws {
        let servers = try CompatServers(in: nil, address: "127.0.0.1")
        defer { servers.stop() }
        let (_, _, error) = Self.run(try Self.bound(servers.httpPort, "/loop"))
        #expect(error?.domain == NSURLErrorDomain)
        #expect(error?.code == NSURLErrorHTTPTooManyRedirects)
        #expect(servers.requests.count == 21)
    }

    @Test("a refused connection is NSURLErrorCannotConnectToHost naming the operation, the target and the errno")
    func refused() throws {
        // A port nobody listens on: bind one, note it, close it.
        let fd = try CompatServers.listen(SOCK_STREAM, "127.0.0.1")
        let port = CompatServers.port(fd)
        close(fd)
        let (_, _, error) = Self.run(try Self.bound(port, "/x"))
        #expect(error?.code == NSURLErrorCannotConnectToHost)
        #expect(error?.localizedDescription.contains("connect to 127.0.0.1:\(port)") == true, "\(String(describing: error))")
        #expect(error?.localizedDescription.contains("ECONNREFUSED") == true, "\(String(describing: error))")
    }
}
