import Foundation
import Portals
import Testing
import TestSupport
@testable import HotspotHelper
#if canImport(Glibc)
import Glibc
#endif

/// Certificates made with the openssl command for one test run: the lab-like CA, a server certificate it signs
/// for `portal.lab.test` and 127.0.0.1, one for another name only, and an unrelated CA.
struct TLSFixture: Sendable {
    let dir: String
    var ca: String { dir + "/ca.pem" }
    var otherCA: String { dir + "/other-ca.pem" }
    var serverCert: String { dir + "/portal.pem" }
    var serverKey: String { dir + "/portal.key" }
    var elsewhereCert: String { dir + "/elsewhere.pem" }
    var elsewhereKey: String { dir + "/elsewhere.key" }

    static let shared: Result<TLSFixture, any Error> = Result { try TLSFixture.make() }

    static func make() throws -> TLSFixture {
        let dir = NSTemporaryDirectory() + "hotspot-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let f = TLSFixture(dir: dir)
        for ca in ["ca", "other-ca"] {
            try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                         "-keyout", "\(dir)/\(ca).key", "-out", "\(dir)/\(ca).pem", "-days", "1", "-subj", "/CN=test \(ca)",
                         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
        }
        for (name, san) in [("portal", "DNS:portal.lab.test,IP:127.0.0.1"), ("elsewhere", "DNS:elsewhere.lab.test")] {
            try openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                         "-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr", "-subj", "/CN=\(name)"])
            try "subjectAltName=\(san)\nextendedKeyUsage=serverAuth\n".write(toFile: "\(dir)/\(name).ext", atomically: true, encoding: .utf8)
            try openssl(["x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", f.ca, "-CAkey", "\(dir)/ca.key", "-set_serial", "0x1234",
                         "-days", "1", "-out", "\(dir)/\(name).pem", "-extfile", "\(dir)/\(name).ext"])
        }
        return f
    }

    static func openssl(_ arguments: [String]) throws {
        let (status, output) = try opensslOutput(arguments)
        guard status == 0 else {
            throw HotspotHelperError("openssl \(arguments.prefix(2).joined(separator: " ")): exit \(status): \(output)")
        }
    }

    /// The openssl command's exit status and what it wrote (standard output and error together).
    static func opensslOutput(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = arguments
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

/// The portal's TLS server (`Portals.LabHTTPServer` with TLS) on 127.0.0.1: answers with the request it saw and the peer.
/// A flag one thread sets and another polls, and a "done" the setter's peer waits for.
final class ManagedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    private let done = DispatchSemaphore(value: 0)
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
    func markDone() { done.signal() }
    func waitDone() { done.wait() }
}

final class LocalTLSServer: @unchecked Sendable {
    let port: UInt16
    let server: LabHTTPServer

    init(certificate: String, key: String, delaySeconds: Int = 0) throws {
        let context = try TLSServerContext(certificateFile: certificate, keyFile: key)
        (server, port) = try LabHTTPServer.serving(ip: "127.0.0.1", port: 0, tls: context, ioTimeoutSeconds: 5) { request, peer in
            if delaySeconds > 0 { try? await Task.sleep(for: .seconds(delaySeconds)) }
            let body = "\(request.method) \(request.path)?\(request.query) host=\(request.host ?? "-") peer=\(peer) body=\(String(decoding: request.body, as: UTF8.self))"
            return PortalResponse(status: 200, headers: ["Content-Type": "text/plain"], body: body)
        }
    }

    /// The server closes its own listening socket, after its accept loop has ended (see `LabHTTPServer.stop`).
    func stop() { server.stop() }
}

@Suite("HotspotHTTPClient https:// (loopback TLS, certificates from the openssl command)", .serialized, .tags(.timingSensitive))
struct TLSClientTests {
    let fixture: TLSFixture
    init() throws { fixture = try TLSFixture.shared.get() }

    func client(_ trust: HotspotTLSTrust, timeout: Duration = .seconds(5), resolver: HotspotResolver = HotspotResolver(nameservers: [])) -> HotspotHTTPClient {
        HotspotHTTPClient(timeout: timeout, resolver: resolver, trustAnchors: trust)
    }

    @Test func urlsParseHTTPS() {
        let u = HotspotURL("HTTPS://Portal.Cafe.Example/login?x=1")
        #expect(u?.isSecure == true && u?.port == 443 && u?.host == "portal.cafe.example" && u?.path == "/login?x=1")
        #expect(u?.description == "https://portal.cafe.example/login?x=1")
        #expect(HotspotURL("https://198.51.100.1:8443/")?.hostHeader == "198.51.100.1:8443")
        #expect(HotspotURL("http://a/")?.isSecure == false)
        #expect(HotspotURL("https://") == nil && HotspotURL("ftp://a/") == nil)
        let plain = HotspotURL("http://198.51.100.1:8080/a/b")!
        #expect(plain.resolving("https://portal.cafe.example/")?.description == "https://portal.cafe.example/")
        #expect(u?.resolving("//other/x")?.description == "https://other/x")
        #expect(u?.resolving("/logoff")?.description == "https://portal.cafe.example/logoff")
    }

    @Test func verifiedByNameThroughTheResolver() throws {
        let server = try LocalTLSServer(certificate: fixture.serverCert, key: fixture.serverKey)
        defer { server.stop() }
        let dns = FakeDNSServer(["portal.lab.test": "127.0.0.1"])
        defer { dns.stop() }
        let named = client(.caFile(fixture.ca), resolver: HotspotResolver(nameservers: ["127.0.0.1"], port: dns.port))
        let r = try named.send(.postForm("https://portal.lab.test:\(server.port)/login?a=1", fields: [("username", "guest")]))
        #expect(r.status == 200)
        #expect(r.text == "POST /login?a=1 host=portal.lab.test peer=127.0.0.1 body=username=guest", "\(r.text)")
        #expect(r.url.isSecure)
    }

    @Test func verifiedByIPAddress() throws {
        let server = try LocalTLSServer(certificate: fixture.serverCert, key: fixture.serverKey)
        defer { server.stop() }
        let r = try client(.caFile(fixture.ca)).get("https://127.0.0.1:\(server.port)/")
        #expect(r.status == 200 && r.text.hasPrefix("GET /? host=127.0.0.1 peer=127.0.0.1"), "\(r.text)")
    }

    @Test func wrongHostNameIsRejected() throws {
        let server = try LocalTLSServer(certificate: fixture.elsewhereCert, key: fixture.elsewhereKey)
        defer { server.stop() }
        let dns = FakeDNSServer(["portal.lab.test": "127.0.0.1"])
        defer { dns.stop() }
        let named = client(.caFile(fixture.ca), resolver: HotspotResolver(nameservers: ["127.0.0.1"], port: dns.port))
        #expect { try named.get("https://portal.lab.test:\(server.port)/") } throws: { error in
            "\(error)".hasPrefix("TLS handshake with portal.lab.test:\(server.port) (127.0.0.1): certificate verify failed: hostname mismatch")
        }
        // The same certificate by IP address: it names no address.
        #expect { try client(.caFile(fixture.ca)).get("https://127.0.0.1:\(server.port)/") } throws: { error in
            "\(error)".hasPrefix("TLS handshake with 127.0.0.1:\(server.port): certificate verify failed: IP address mismatch")
        }
    }

    @Test func untrustedCAIsRejected() throws {
        let server = try LocalTLSServer(certificate: fixture.serverCert, key: fixture.serverKey)
        defer { server.stop() }
        for trust in [HotspotTLSTrust.caFile(fixture.otherCA), .system] {
            #expect { try client(trust).get("https://127.0.0.1:\(server.port)/") } throws: { error in
                "\(error)" == "TLS handshake with 127.0.0.1:\(server.port): certificate verify failed: unable to get local issuer certificate (X509 verify error 20)"
            }
        }
    }

    @Test func unreadableCAFileIsNamed() throws {
        let server = try LocalTLSServer(certificate: fixture.serverCert, key: fixture.serverKey)
        defer { server.stop() }
        #expect { try client(.caFile(fixture.dir + "/missing.pem")).get("https://127.0.0.1:\(server.port)/") } throws: { error in
            "\(error)" == "load the CA file \(fixture.dir)/missing.pem (HOTSPOT_CA_FILE) for 127.0.0.1:\(server.port): No such file or directory (ENOENT)"
        }
        // A file that holds no certificate.
        #expect { try client(.caFile(fixture.dir + "/portal.ext")).get("https://127.0.0.1:\(server.port)/") } throws: { error in
            "\(error)".hasPrefix("load the CA file \(fixture.dir)/portal.ext (HOTSPOT_CA_FILE) for 127.0.0.1:\(server.port): error:")
        }
    }

    @Test func trustComesFromTheEnvironment() {
        unsetenv(HotspotHelperEnvironment.caFileVariable)
        #expect(HotspotTLSTrust.fromEnvironment == .system)
        setenv(HotspotHelperEnvironment.caFileVariable, fixture.ca, 1)
        defer { unsetenv(HotspotHelperEnvironment.caFileVariable) }
        #expect(HotspotTLSTrust.fromEnvironment == .caFile(fixture.ca))
    }

    /// A server that accepts TCP but never answers the ClientHello: the handshake ends at the request's deadline.
    @Test func handshakeObeysTheDeadline() throws {
        let (fd, port) = bindLoopback(SOCK_STREAM)
        #expect(listen(fd, 4) == 0)
        defer { close(fd) }
        var caught: (any Error)?
        let took = elapsed {
            // 3 s: the deadline covers the connect too (a starved connect would be named instead of the handshake).
            do { _ = try client(.caFile(fixture.ca), timeout: .seconds(3)).get("https://127.0.0.1:\(port)/") } catch { caught = error }
        }
        let error = try #require(caught as? HotspotTrafficError)
        #expect(error.isTimeout)
        #expect(error.description == "TLS handshake with 127.0.0.1:\(port): Connection timed out (ETIMEDOUT), no answer within 3 s", "\(error)")
        #expect(took >= .milliseconds(2950) && took < .seconds(60), "took \(took)")
    }

    /// A stopped server never accepts on a socket that took its listener's fd number. Clients keep connecting while
    /// it stops, so its accept loop is often between two `accept` calls; right after `stop()` a new listener is
    /// made (usually with the same fd number) and a connection to it must arrive there. This is how
    /// `handshakeObeysTheDeadline` once got a real handshake from an earlier test's server.
    @Test func stoppedServerNeverAcceptsOnAReusedDescriptor() throws {
        for round in 0..<40 {
            let server = try LocalTLSServer(certificate: fixture.serverCert, key: fixture.serverKey)
            let oldPort = server.port
            let hammering = ManagedFlag()
            let hammer = Thread {
                while !hammering.isSet {
                    let c = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                    var sa = sockaddr_in()
                    sa.sin_family = sa_family_t(AF_INET)
                    sa.sin_port = oldPort.bigEndian
                    sa.sin_addr.s_addr = inet_addr("127.0.0.1")
                    _ = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(c, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
                    close(c)
                }
                hammering.markDone()
            }
            hammer.start()
            server.stop()
            let (fd, port) = bindLoopback(SOCK_STREAM)
            defer { close(fd) }
            try #require(listen(fd, 4) == 0, "listen on the new socket: \(String(cString: strerror(errno)))")
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            defer { close(client) }
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = port.bigEndian
            sa.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            try #require(connected == 0, "connect to the new listener: \(String(cString: strerror(errno)))")
            // The connection is queued on the new listener unless someone else accepted it: a non-blocking check.
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, 0)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            let accepted = accept(fd, nil, nil)
            hammering.set()
            hammering.waitDone()
            #expect(ready == 1 && accepted >= 0, "round \(round): the connection to the new listener (fd \(fd)) was taken by the stopped server's accept loop")
            if accepted >= 0 { close(accepted) }
        }
    }

    /// The handshake succeeds, the answer comes too late: the read ends at the same deadline. The deadline (one for
    /// the whole request) is 5 s, not less: the handshake must fit in it however loaded the machine (CI's host side
    /// has seen a process go 1.5 s without CPU), or the error would be the handshake's, not the read's.
    @Test func readObeysTheDeadline() throws {
        let server = try LocalTLSServer(certificate: fixture.serverCert, key: fixture.serverKey, delaySeconds: 20)
        defer { server.stop() }
        var caught: (any Error)?
        let took = elapsed {
            do { _ = try client(.caFile(fixture.ca), timeout: .seconds(5)).get("https://127.0.0.1:\(server.port)/") } catch { caught = error }
        }
        let error = try #require(caught as? HotspotTrafficError)
        #expect(error.isTimeout)
        #expect(error.description == "read response to GET https://127.0.0.1:\(server.port)/: Connection timed out (ETIMEDOUT), no answer within 5 s", "\(error)")
        #expect(took < .seconds(15), "took \(took): the 20 s late answer was waited for")
    }

    /// A plain HTTP server behind an https:// URL: the handshake fails with OpenSSL's reason, at once. The server
    /// answers what it read (the ClientHello) as a plain server answers a request it cannot parse: a 400 and close.
    /// Until stop 46 the server waited for a request's blank line, which a ClientHello never has, so the client
    /// timed out after its 2 s and the check (any "TLS handshake" error) passed on the timeout.
    @Test func plainHTTPServerIsNotTLS() throws {
        let (fd, port) = bindLoopback(SOCK_STREAM)
        #expect(listen(fd, 4) == 0)
        let served = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { served.signal() }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            var hello = [UInt8](repeating: 0, count: 4096)
            guard recv(client, &hello, hello.count, 0) > 0 else { return }
            let answer = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            _ = answer.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        defer {
            shutdown(fd, Int32(SHUT_RDWR))
            served.wait()
            close(fd)
        }
        var caught: (any Error)?
        let took = elapsed {
            do { _ = try client(.caFile(fixture.ca), timeout: .seconds(30)).get("https://127.0.0.1:\(port)/") } catch { caught = error }
        }
        let error = try #require(caught as? HotspotTrafficError, "\(String(describing: caught))")
        #expect(!error.isTimeout, "the handshake failed on the answer, not at the deadline (took \(took)): \(error)")
        let text = "\(error)"
        #expect(text.hasPrefix("TLS handshake with 127.0.0.1:\(port): ") && !text.contains("certificate verify"), "\(text)")
    }

    /// A write on a connection whose sending side is gone (here: shut down locally, so write(2) fails with EPIPE
    /// and raises SIGPIPE every time) is an error naming the host, not the death of the process by SIGPIPE
    /// (OpenSSL writes with write(2), without MSG_NOSIGNAL). SIGPIPE is set to its default action (terminate)
    /// for the test, so a regression ends the test process.
    @Test func brokenPipeIsAnErrorNotSIGPIPE() throws {
        let server = try LocalTLSServer(certificate: fixture.serverCert, key: fixture.serverKey)
        defer { server.stop() }
        let previous = signal(SIGPIPE, SIG_DFL)
        defer { signal(SIGPIPE, previous) }
        let tcp = try HotspotTCPConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(30))
        let tls = try HotspotTLSConnection.handshake(over: tcp, serverName: "127.0.0.1", trust: .caFile(fixture.ca), deadline: TrafficDeadline(.seconds(30)))
        defer { tls.close() }
        #expect(shutdown(tcp.fd, Int32(SHUT_WR)) == 0)
        #expect { try tls.write(Array("GET / HTTP/1.1\r\n\r\n".utf8), deadline: TrafficDeadline(.seconds(30))) } throws: { error in
            "\(error)" == "send to 127.0.0.1:\(server.port): Broken pipe (EPIPE)"
        }
        // The SIGPIPE raised meanwhile was consumed, not left pending for the thread.
        var pending = sigset_t()
        sigpending(&pending)
        #expect(sigismember(&pending, SIGPIPE) == 0)
    }

    /// Command sockets keep SO_MARK under TLS (root: CAP_NET_ADMIN).
    @Test(.requiresRoot("root: SO_MARK needs CAP_NET_ADMIN"))
    func rootTLSConnectionKeepsTheMark() throws {
        let server = try LocalTLSServer(certificate: fixture.serverCert, key: fixture.serverKey)
        defer { server.stop() }
        let tcp = try HotspotTCPConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(30), mark: HotspotHelper.commandTrafficMark)
        let tls = try HotspotTLSConnection.handshake(over: tcp, serverName: "127.0.0.1", trust: .caFile(fixture.ca), deadline: TrafficDeadline(.seconds(30)))
        #expect(tcp.mark == 0x4853)
        try tls.write(Array("GET /m HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8), deadline: TrafficDeadline(.seconds(30)))
        var answer: [UInt8] = []
        while true {
            let more = try tls.read(maximum: 4096, deadline: TrafficDeadline(.seconds(30)))
            if more.isEmpty { break }
            answer += more
        }
        #expect(String(decoding: answer, as: UTF8.self).hasSuffix("GET /m? host=127.0.0.1 peer=127.0.0.1 body="))
        tls.close()
    }
}
