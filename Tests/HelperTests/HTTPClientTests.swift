import Foundation
import Testing
import TestSupport
@testable import HotspotHelper
#if canImport(Glibc)
import Glibc
#endif

/// The SDK's command-traffic HTTP client against exact bytes from a local server (no root).
@Suite("HotspotHTTPClient (loopback)", .tags(.timingSensitive))
struct HTTPClientTests {
    let client = HotspotHTTPClient(timeout: .seconds(5), resolver: HotspotResolver(nameservers: []))

    @Test func statusHeadersAndContentLengthBody() throws {
        let server = try CannedServer { _ in
            // The server keeps the connection open after the body: the client must stop at Content-Length.
            [.send("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Two: a\r\nx-two: b\r\nContent-Length: 11\r\n\r\nhello world"), .hold]
        }
        defer { server.stop() }
        var response: HotspotHTTPResponse?
        let took = try elapsed { response = try client.get(server.url + "/page?x=1") }
        let r = try #require(response)
        #expect(r.status == 200 && r.reason == "OK")
        #expect(r.text == "hello world")
        #expect(r.header("content-type") == "text/html")
        #expect(r.header("X-TWO") == "a")
        #expect(r.headers.map(\.name) == ["Content-Type", "X-Two", "x-two", "Content-Length"])
        #expect(took < .seconds(10), "waited for the close instead of using Content-Length: \(took)")
        let request = try #require(server.received.first)
        #expect(request.requestLine == "GET /page?x=1 HTTP/1.1")
        #expect(request.header("Host") == "127.0.0.1:\(server.port)")
        #expect(request.header("Connection") == "close")
        #expect(request.header("Content-Length") == nil)
    }

    @Test func chunkedBodySplitAcrossWrites() throws {
        let server = try CannedServer { _ in
            [.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHel"), .pause(milliseconds: 30),
             .send("lo\r\n7;ext=1\r\n, world\r\n"), .pause(milliseconds: 30), .send("A\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n"), .hold]
        }
        defer { server.stop() }
        let r = try client.get(server.url + "/")
        #expect(r.status == 200)
        #expect(r.text == "Hello, world0123456789")
    }

    @Test func bodyUntilCloseAndContinue() throws {
        let server = try CannedServer { _ in
            [.send("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 404 Not Found\r\nServer: old\r\n\r\nno length"), .pause(milliseconds: 20), .send(", read to close")]
        }
        defer { server.stop() }
        let r = try client.get(server.url + "/missing")
        #expect(r.status == 404 && r.reason == "Not Found")
        #expect(r.header("Server") == "old")
        #expect(r.text == "no length, read to close")
    }

    @Test func redirectIsNotFollowed() throws {
        let server = try CannedServer { request in
            request.requestLine.hasPrefix("GET /portal")
                ? [.send("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nportal")]
                : [.send("HTTP/1.1 302 Found\r\nLocation: /portal?from=probe\r\nContent-Length: 5\r\n\r\nmoved")]
        }
        defer { server.stop() }
        let r = try client.get(server.url + "/hotspot-detect.html")
        #expect(r.status == 302)
        #expect(r.text == "moved")
        #expect(r.redirectURL?.description == "http://127.0.0.1:\(server.port)/portal?from=probe")
        #expect(server.received.count == 1, "the client followed the redirect")
    }

    @Test func postFormAndHostOverride() throws {
        let server = try CannedServer { _ in [.send("HTTP/1.1 204 No Content\r\n\r\n")] }
        defer { server.stop() }
        let request = HotspotHTTPRequest.postForm(
            server.url + "/login", fields: [("username", "guest"), ("password", "pä ss&=")], headers: [("Host", "captive.apple.com")])
        let r = try client.send(request)
        #expect(r.status == 204 && r.body.isEmpty)
        let got = try #require(server.received.first)
        #expect(got.requestLine == "POST /login HTTP/1.1")
        #expect(got.header("Host") == "captive.apple.com")
        #expect(got.headerNames.filter { $0.lowercased() == "host" }.count == 1)
        #expect(got.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(String(decoding: got.body, as: UTF8.self) == "username=guest&password=p%C3%A4+ss%26%3D")
        #expect(got.header("Content-Length") == "\(got.body.count)")
    }

    @Test func timeoutWhenTheServerNeverAnswers() throws {
        let server = try CannedServer { _ in [.hold] }
        defer { server.stop() }
        var caught: HotspotTrafficError?
        let took = elapsed {
            // 3 s: the deadline covers the connect too, so a machine starved for longer than it before the connect would name
            // the connect instead of the read (a verdict that load could change).
            do { _ = try client.send(.get(server.url + "/slow", timeout: .seconds(3))) } catch { caught = error as? HotspotTrafficError }
        }
        let error = try #require(caught)
        #expect(error.isTimeout)
        #expect(error.description == "read response to GET http://127.0.0.1:\(server.port)/slow: Connection timed out (ETIMEDOUT), no answer within 3 s",
                "\(error)")
        #expect(took >= Duration.milliseconds(2990) && took < Duration.seconds(60), "took \(took)")
    }

    @Test func connectionRefusedNamesHostAndErrno() throws {
        let port = closedPort()
        #expect {
            try client.get("http://127.0.0.1:\(port)/")
        } throws: { error in
            let e = error as? HotspotTrafficError
            return e?.isConnectionRefused == true && e?.description == "connect to 127.0.0.1:\(port): Connection refused (ECONNREFUSED)"
        }
    }

    @Test func closedWithoutAnswerAndBadStatusLine() throws {
        let silent = try CannedServer { _ in [] }
        defer { silent.stop() }
        #expect { try client.get(silent.url + "/") } throws: { error in
            "\(error)".contains("the server closed the connection without answering")
        }
        let garbage = try CannedServer { _ in [.send("SSH-2.0-OpenSSH\r\n\r\n")] }
        defer { garbage.stop() }
        #expect { try client.get(garbage.url + "/") } throws: { error in
            "\(error)".contains("not an HTTP/1.x status line: \"SSH-2.0-OpenSSH\"")
        }
        let short = try CannedServer { _ in [.send("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")] }
        defer { short.stop() }
        #expect { try client.get(short.url + "/") } throws: { error in
            "\(error)".contains("the connection closed after 9 of 100 body bytes")
        }
    }

    @Test func urlsParseAndResolve() throws {
        #expect(HotspotURL("https://example.com/")?.isSecure == true)
        #expect(HotspotURL("ftp://example.com/") == nil)
        #expect(HotspotURL("http://") == nil)
        #expect(HotspotURL("http://host:99999/") == nil)
        let u = try #require(HotspotURL("HTTP://Portal.Example:8080/a/b/c.html?x=1#frag"))
        #expect(u.host == "portal.example" && u.port == 8080 && u.path == "/a/b/c.html?x=1")
        #expect(u.origin == "http://portal.example:8080")
        #expect(HotspotURL("http://198.51.100.1")?.description == "http://198.51.100.1/")
        #expect(HotspotURL("http://h?q=1")?.path == "/?q=1")
        #expect(u.resolving("/login")?.description == "http://portal.example:8080/login")
        #expect(u.resolving("d.html")?.description == "http://portal.example:8080/a/b/d.html")
        #expect(u.resolving("../up?y=2")?.description == "http://portal.example:8080/a/up?y=2")
        #expect(u.resolving("?z=3")?.description == "http://portal.example:8080/a/b/c.html?z=3")
        #expect(u.resolving("//other/x")?.description == "http://other/x")
        #expect(u.resolving("http://198.51.100.1:8080/")?.description == "http://198.51.100.1:8080/")
        #expect(u.resolving("https://secure/")?.description == "https://secure/")
        #expect(u.resolving("javascript:void(0)") == nil)
        #expect(u.resolving("")?.description == u.description)
    }

    @Test("IPv6 literals in URLs: [2001:db8::1] with and without a port, the Host header and origin in brackets; malformed ones refused")
    func ipv6LiteralURLs() throws {
        let plain = try #require(HotspotURL("http://[2001:db8::1]/"))
        #expect(plain.host == "2001:db8::1" && plain.port == 80 && plain.path == "/")
        #expect(plain.hostHeader == "[2001:db8::1]" && plain.description == "http://[2001:db8::1]/")
        let api = try #require(HotspotURL("http://[2001:DB8:c633:6400::1]:8080/captive-api?x=1"))
        #expect(api.host == "2001:db8:c633:6400::1" && api.port == 8080 && api.path == "/captive-api?x=1")
        #expect(api.origin == "http://[2001:db8:c633:6400::1]:8080" && api.hostHeader == "[2001:db8:c633:6400::1]:8080")
        #expect(HotspotURL("https://[2001:db8::1]")?.port == 443)
        #expect(api.resolving("/login")?.description == "http://[2001:db8:c633:6400::1]:8080/login")
        #expect(api.resolving("http://[2001:db8::2]/x")?.host == "2001:db8::2")
        for bad in ["http://[2001:db8::1/", "http://[2001:db8::1]x/", "http://[2001:db8::1]:/", "http://[2001:db8::1]:70000/",
                    "http://[198.51.100.1]/", "http://[nothost]/", "http://2001:db8::1/", "http://[]/", "http://a]b/"] {
            #expect(HotspotURL(bad) == nil, "\(bad)")
        }
    }

    @Test("a GET to an IPv6 literal URL connects over IPv6 and sends Host in brackets")
    func getOverIPv6Literal() throws {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let bound = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound && listen(fd, 1) == 0, "::1 is not available on this host")
        let port = UInt16(bigEndian: address.sin6_port)
        let head = LockedText()
        let server = Thread {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            var buffer = [UInt8](repeating: 0, count: 4096)
            var data: [UInt8] = []
            while data.firstRange(of: [13, 10, 13, 10]) == nil {
                let n = recv(client, &buffer, buffer.count, 0)
                if n <= 0 { break }
                data += buffer[0..<n]
            }
            head.set(String(decoding: data, as: UTF8.self))
            let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nv6".utf8)
            _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(client)
        }
        server.start()
        let response = try client.get("http://[::1]:\(port)/hello")
        #expect(response.status == 200 && String(decoding: response.body, as: UTF8.self) == "v6")
        #expect(head.get().hasPrefix("GET /hello HTTP/1.1\r\n"), "\(head.get())")
        #expect(head.get().contains("\r\nHost: [::1]:\(port)\r\n"), "\(head.get())")
    }

    @Test func hostNamesResolveThroughTheResolver() throws {
        let dns = FakeDNSServer(["portal.lab.test": "127.0.0.1"])
        defer { dns.stop() }
        let server = try CannedServer { _ in [.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")] }
        defer { server.stop() }
        var resolver = HotspotResolver(nameservers: ["127.0.0.1"], port: dns.port)
        resolver.hasGlobalIPv6 = { false }  // A queries only, whatever IPv6 this machine has (AAAA: IPv6TrafficTests)
        let named = HotspotHTTPClient(timeout: .seconds(5), resolver: resolver)
        let r = try named.get("http://portal.lab.test:\(server.port)/")
        #expect(r.text == "ok")
        #expect(server.received.first?.header("Host") == "portal.lab.test:\(server.port)")
        #expect(dns.received.count == 1)
        #expect { try named.get("http://nowhere.lab.test:\(server.port)/") } throws: { error in
            "\(error)" == "resolve nowhere.lab.test: DNS error NXDOMAIN (no such name)"
        }
        // An IPv4 literal never asks DNS.
        _ = try named.get(server.url + "/")
        #expect(dns.received.count == 2)
        // No nameserver at all.
        #expect { try client.get("http://portal.lab.test/") } throws: { error in
            "\(error)".hasPrefix("resolve portal.lab.test: no nameserver")
        }
    }

    /// SO_MARK is set before connect where allowed (root: CAP_NET_ADMIN); elsewhere the connection still works
    /// unmarked and the failure is reported once.
    @Test func commandSocketsCarryTheMark() throws {
        #expect(HotspotHelper.commandTrafficMark == 0x4853)
        let server = try CannedServer { _ in [.send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), .hold] }
        defer { server.stop() }
        let plain = try HotspotTCPConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(30))
        #expect(plain.mark == 0)
        let marked = try HotspotTCPConnection.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(30),
                                                      mark: HotspotHelper.commandTrafficMark)
        if TestHost.isRoot {
            #expect(marked.mark == 0x4853)
        } else {
            #expect(marked.mark == 0)
            #expect(HotspotHelper.lastError?.contains("set SO_MARK 0x4853") == true)
        }
        try marked.write(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), timeout: .seconds(30))
        let answer = try marked.read(timeout: .seconds(30))
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK"))
    }
}

@Suite("HotspotDNS and HotspotResolver")
struct DNSTests {
    @Test("AI_ADDRCONFIG counts a global IPv6 address only once DAD is done: not tentative (0x40), not DAD-failed (0x08)")
    func usableGlobalIPv6() {
        let loopbackAndLinkLocal = "00000000000000000000000000000001 01 80 10 80       lo\nfe80000000000000f8381bfffe257b34 02 40 20 80     wlan0\n"
        #expect(!HotspotResolver.usableGlobalIPv6(ifInet6: loopbackAndLinkLocal))
        let tentative = loopbackAndLinkLocal + "20010db8000000610000f8381bfffe25 02 40 00 40     wlan0\n"
        #expect(!HotspotResolver.usableGlobalIPv6(ifInet6: tentative))
        #expect(!HotspotResolver.usableGlobalIPv6(ifInet6: loopbackAndLinkLocal + "20010db8000000610000f8381bfffe25 02 40 00 48     wlan0\n"))
        #expect(HotspotResolver.usableGlobalIPv6(ifInet6: loopbackAndLinkLocal + "20010db8000000610000f8381bfffe25 02 40 00 00     wlan0\n"))
        #expect(HotspotResolver.usableGlobalIPv6(ifInet6: tentative + "20010db8000000610000000000001001 02 80 00 80     wlan0\n"))
    }

    @Test func queryGoldenBytes() throws {
        let q = try HotspotDNS.query(id: 0x1234, name: "captive.apple.com")
        let golden: [UInt8] = [
            0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x07, 0x63, 0x61, 0x70, 0x74, 0x69, 0x76, 0x65, 0x05, 0x61, 0x70, 0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00,
            0x00, 0x01, 0x00, 0x01,
        ]
        #expect(q == golden)
        #expect(try HotspotDNS.query(id: 0x1234, name: "captive.apple.com.") == golden)
        #expect(throws: HotspotTrafficError.self) { try HotspotDNS.query(id: 1, name: "a..b") }
        #expect(throws: HotspotTrafficError.self) { try HotspotDNS.query(id: 1, name: String(repeating: "x", count: 64) + ".com") }
        #expect(throws: HotspotTrafficError.self) { try HotspotDNS.query(id: 1, name: "") }
    }

    /// An answer as a recursive resolver sends it: the question, a CNAME whose owner is a pointer to the
    /// question, its target spelled out, then two A records owned by a pointer to the CNAME's target.
    static let cnameAnswer: [UInt8] = [
        0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00,
        // question captive.apple.com A IN (offset 12)
        0x07, 0x63, 0x61, 0x70, 0x74, 0x69, 0x76, 0x65, 0x05, 0x61, 0x70, 0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00,
        0x00, 0x01, 0x00, 0x01,
        // CNAME: owner -> 12, type 5, class 1, ttl 300, rdlength 10: "cdn" + pointer to "apple.com" (offset 20)
        0xc0, 0x0c, 0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x01, 0x2c, 0x00, 0x06,
        0x03, 0x63, 0x64, 0x6e, 0xc0, 0x14,
        // A: owner -> the CNAME target (offset 47), 17.253.1.1
        0xc0, 0x2f, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x04, 0x11, 0xfd, 0x01, 0x01,
        // A: 17.253.1.2
        0xc0, 0x2f, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x04, 0x11, 0xfd, 0x01, 0x02,
    ]

    @Test func answerGoldenBytesWithCNAMEAndCompression() throws {
        #expect(try HotspotDNS.addresses(inResponse: Self.cnameAnswer, id: 0x1234, name: "captive.apple.com") == ["17.253.1.1", "17.253.1.2"])
        #expect(try HotspotDNS.addresses(inResponse: Self.cnameAnswer, id: 0x1234, name: "CAPTIVE.Apple.com.") == ["17.253.1.1", "17.253.1.2"])
    }

    @Test func answerErrors() throws {
        func error(_ bytes: [UInt8], id: UInt16 = 0x1234) -> String {
            do {
                _ = try HotspotDNS.addresses(inResponse: bytes, id: id, name: "captive.apple.com")
                return "no error"
            } catch { return error.description }
        }
        #expect(error(Self.cnameAnswer, id: 0x9999) == "resolve captive.apple.com: malformed DNS answer: id 4660, expected 39321")
        var nx = Array(Self.cnameAnswer[0..<35])
        nx[3] = 0x83
        nx[7] = 0
        #expect(error(nx) == "resolve captive.apple.com: DNS error NXDOMAIN (no such name)")
        var truncated = nx
        truncated[2] = 0x83
        truncated[3] = 0x80
        #expect(error(truncated) == "resolve captive.apple.com: the DNS answer was truncated")
        var empty = nx
        empty[3] = 0x80
        #expect(error(empty) == "resolve captive.apple.com: no A record in the DNS answer")
        #expect(error(Array(Self.cnameAnswer[0..<66])) == "resolve captive.apple.com: malformed DNS answer: record data runs past the end")
        var loop = Self.cnameAnswer
        loop[47] = 0xc0
        loop[48] = 0x2f // a pointer to itself
        #expect(error(loop) == "resolve captive.apple.com: malformed DNS answer: compression pointer loop")
        #expect(error([0x12, 0x34, 0x81]) == "resolve captive.apple.com: malformed DNS answer: 3 bytes, shorter than a header")
    }

    @Test func resolvConfLeaseAndOption114() {
        #expect(HotspotHelperEnvironment.parseResolvConf("# lab\nnameserver 198.51.100.1\nnameserver 2001:db8::1\nsearch lab\nnameserver\t192.0.2.53 \n")
                == ["198.51.100.1", "2001:db8::1", "192.0.2.53"])  // IPv6 nameservers too (an IPv6-only network's DNS)
        let lease = HotspotHelperEnvironment.parseLease("ip=198.51.100.23\nsubnet=255.255.255.0\nrouter=198.51.100.1\ndns=198.51.100.1\n"
                                                        + "opt114=687474703a2f2f3139382e35312e3130302e313a383038302f636170746976652d617069\n")
        #expect(lease["ip"] == "198.51.100.23" && lease["router"] == "198.51.100.1" && lease["dns"] == "198.51.100.1")
        #expect(HotspotHelperEnvironment.captivePortalAPI(lease: lease) == "http://198.51.100.1:8080/captive-api")
        #expect(HotspotHelperEnvironment.captivePortalAPI(lease: ["ip": "x"]) == nil)
        #expect(HotspotHelperEnvironment.decodeOption114("http://198.51.100.1/api") == "http://198.51.100.1/api")
        #expect(HotspotHelperEnvironment.decodeOption114("") == nil)
        #expect(HotspotHelperEnvironment.isProbeSuccess("<HTML><HEAD><TITLE>Success</TITLE></HEAD><BODY>Success</BODY></HTML>\n"))
        #expect(!HotspotHelperEnvironment.isProbeSuccess("<html>Sign in</html>"))
    }

    @Test func resolverAgainstALocalServer() throws {
        let dns = FakeDNSServer(["captive.apple.com": "198.18.0.1"])
        defer { dns.stop() }
        var resolver = HotspotResolver(nameservers: ["127.0.0.1"], port: dns.port)
        resolver.hasGlobalIPv6 = { false }  // A queries only, whatever IPv6 this machine has (AAAA: IPv6TrafficTests)
        #expect(try resolver.resolve("captive.apple.com") == "198.18.0.1")
        #expect(try resolver.resolve("198.51.100.7") == "198.51.100.7")
        let query = try #require(dns.received.first)
        #expect(Array(query[2...]) == Array(try HotspotDNS.query(id: 0, name: "captive.apple.com")[2...]))
        // A server that does not answer: the error says who and how long.
        var silent = HotspotResolver(nameservers: ["127.0.0.1"], port: closedPort())
        silent.hasGlobalIPv6 = { false }
        #expect { try silent.resolve("captive.apple.com", timeout: .milliseconds(400)) } throws: { error in
            let e = error as? HotspotTrafficError
            return e?.description.hasPrefix("resolve captive.apple.com via 127.0.0.1:") == true
                && (e?.isConnectionRefused == true || e?.isTimeout == true)
        }
    }
}

final class LockedText: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    func set(_ value: String) { lock.withLock { text = value } }
    func get() -> String { lock.withLock { text } }
}
