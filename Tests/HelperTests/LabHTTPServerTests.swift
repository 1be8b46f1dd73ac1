import Foundation
import Testing
@testable import Portals
@testable import PortalKinds
#if canImport(Glibc)
import Glibc
import Synchronization
#endif

/// The portals' and the lab internet's HTTP/1.1 server (`LabHTTPServer`, plain here) on 127.0.0.1, port 0, spoken to
/// byte by byte: persistent connections, pipelining, chunked bodies, `Expect: 100-continue`, HEAD, HTTP/1.0, and the
/// answers to requests it cannot read. No root.
@Suite("LabHTTPServer: HTTP/1.1 as RFC 9112 has it (loopback)")
struct LabHTTPServerTests {
    /// A server that answers `METHOD PATH body=BODY` with the request's version, and counts its connections by peer port.
    final class EchoServer: @unchecked Sendable {
        let port: UInt16
        let server: LabHTTPServer

        init() throws {
            (server, port) = try LabHTTPServer.serving(ip: "127.0.0.1", port: 0, ioTimeoutSeconds: 10) { request, _ in
                PortalResponse(status: request.path == "/missing" ? 404 : 200, headers: ["Content-Type": "text/plain", "X-Version": request.version],
                               body: "\(request.method) \(request.path) query=\(request.query) body=\(String(decoding: request.body, as: UTF8.self))")
            }
        }

        func stop() { server.stop() }
    }

    /// A blocking TCP client with a 10 s read timeout: what it read, and whether the server closed.
    final class RawClient {
        let fd: Int32
        var received: [UInt8] = []
        var closedByServer = false

        init(port: UInt16) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
            let connected = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            try #require(fd >= 0 && connected == 0, "connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(fd) }

        func send(_ text: String) {
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Reads until `text` holds `count` complete responses (by Content-Length; HEAD's given as `heads`), or the
        /// server closes, or 10 s pass without a byte.
        func responses(_ count: Int, heads: Set<Int> = []) -> [String] {
            while true {
                let parsed = Self.split(received, heads: heads)
                if parsed.count >= count { return parsed }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = recv(fd, &chunk, chunk.count, 0)
                if n <= 0 {
                    closedByServer = n == 0
                    return parsed
                }
                received += chunk[0..<n]
            }
        }

        /// After the responses read: whether the server closes (EOF) within 10 s with nothing more sent.
        func serverCloses() -> Bool {
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, 0) == 0
        }

        static func split(_ bytes: [UInt8], heads: Set<Int>) -> [String] {
            var out: [String] = []
            var rest = Substring(String(decoding: bytes, as: UTF8.self))
            while let end = rest.range(of: "\r\n\r\n") {
                let head = rest[..<end.lowerBound]
                if head.hasPrefix("HTTP/1.1 100 ") {
                    out.append(String(head))
                    rest = rest[end.upperBound...]
                    continue
                }
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                let bodyLength = heads.contains(out.count) ? 0 : length
                guard rest[end.upperBound...].utf8.count >= bodyLength else { break }
                let bodyEnd = rest.utf8.index(end.upperBound, offsetBy: bodyLength)
                out.append(String(rest[..<bodyEnd]))
                rest = rest[bodyEnd...]
            }
            return out
        }
    }

    @Test("HTTP/1.1 keeps the connection: two requests on one, answered in order; `Connection: close` ends it after the answer")
    func persistentConnections() throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let client = try RawClient(port: echo.port)
        client.send("GET /one HTTP/1.1\r\nHost: a\r\n\r\n")
        let first = client.responses(1)
        #expect(first.count == 1 && first[0].hasSuffix("GET /one query= body="), "\(first)")
        #expect(!first[0].contains("Connection:"), "a kept connection needs no Connection header in HTTP/1.1: \(first)")
        client.send("POST /two?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
        let both = client.responses(2)
        #expect(both.count == 2 && both[1].hasSuffix("POST /two query=x=1 body=abc"), "\(both)")
        #expect(both.count == 2 && both[1].contains("Connection: close\r\n"), "\(both)")
        #expect(client.serverCloses(), "the server kept the connection after Connection: close")
    }

    @Test("pipelined requests in one write get their answers in order")
    func pipelining() throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let client = try RawClient(port: echo.port)
        client.send("GET /a HTTP/1.1\r\nHost: a\r\n\r\nPOST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiGET /missing HTTP/1.1\r\nHost: a\r\n\r\n")
        let answers = client.responses(3)
        #expect(answers.count == 3, "\(answers)")
        guard answers.count == 3 else { return }
        #expect(answers[0].hasSuffix("GET /a query= body=") && answers[1].hasSuffix("POST /b query= body=hi"), "\(answers)")
        #expect(answers[2].hasPrefix("HTTP/1.1 404 Not Found\r\n"), "\(answers[2])")
    }

    @Test("a chunked body is decoded (sizes in hex, extensions and trailers ignored); Expect: 100-continue is answered before the body")
    func chunkedAndContinue() throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let client = try RawClient(port: echo.port)
        client.send("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nB\r\n, the world\r\n0\r\nX-Trailer: t\r\n\r\n")
        let chunked = client.responses(1)
        #expect(chunked.first?.hasSuffix("POST /c query= body=hello, the world") == true, "\(chunked)")
        client.send("POST /d HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        let interim = client.responses(2)
        #expect(interim.count == 2 && interim[1] == "HTTP/1.1 100 Continue", "the client waits for 100 Continue before it sends the body: \(interim)")
        client.send("data")
        let all = client.responses(3)
        #expect(all.count == 3 && all[2].hasSuffix("POST /d query= body=data"), "\(all)")
    }

    @Test("HEAD: the GET's headers and Content-Length, no body; the connection stays usable")
    func head() throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let client = try RawClient(port: echo.port)
        client.send("HEAD /h HTTP/1.1\r\nHost: a\r\n\r\nGET /g HTTP/1.1\r\nHost: a\r\n\r\n")
        let answers = client.responses(2, heads: [0])
        #expect(answers.count == 2, "\(answers)")
        guard answers.count == 2 else { return }
        #expect(answers[0].contains("\r\nContent-Length: \("HEAD /h query= body=".utf8.count)\r\n") && answers[0].hasSuffix("\r\n\r\n"), "\(answers[0])")
        #expect(answers[1].hasSuffix("GET /g query= body="), "the body of HEAD was sent after all: \(answers)")
    }

    @Test("HTTP/1.0 closes unless it asks for keep-alive, which the answer confirms")
    func http10() throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let kept = try RawClient(port: echo.port)
        kept.send("GET /k HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let one = kept.responses(1)
        #expect(one.first?.contains("Connection: keep-alive\r\n") == true && one.first?.contains("X-Version: HTTP/1.0") == true, "\(one)")
        kept.send("GET /k2 HTTP/1.0\r\n\r\n")
        let two = kept.responses(2)
        #expect(two.count == 2 && two[1].contains("Connection: close\r\n"), "\(two)")
        #expect(kept.serverCloses())
    }

    @Test("what the server cannot read gets 400 (or 413, 501) naming the fault, and the connection is closed")
    func badRequests() throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        for (request, status, cause) in [
            ("NONSENSE\r\n\r\n", 400, "not `METHOD /path HTTP/1.x`"),
            ("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both Content-Length and Transfer-Encoding"),
            ("POST / HTTP/1.1\r\nContent-Length: many\r\n\r\n", 400, "Content-Length `many` is not a number"),
            ("POST / HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n", 413, "over 1 MiB"),
            ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "only chunked"),
            ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "is not hexadecimal"),
        ] {
            let client = try RawClient(port: echo.port)
            client.send(request)
            let answer = client.responses(1)
            #expect(answer.first?.hasPrefix("HTTP/1.1 \(status) ") == true && answer.first?.contains(cause) == true, "\(request.debugDescription): \(answer)")
            #expect(answer.first?.contains("Connection: close\r\n") == true)
            #expect(client.serverCloses(), "\(request.debugDescription): the connection stayed open")
        }
    }

    @Test("stop(endingConnections:) ends an idle kept-open connection and a request that never gets an answer; stop() leaves them (the control)")
    func stopEndingConnections() throws {
        for ending in [true, false] {
            let handlerEnded = Mutex(false)
            let (server, port) = try LabHTTPServer.serving(ip: "127.0.0.1", port: 0, ioTimeoutSeconds: 10) { request, _ in
                if request.path == "/hang" {
                    // The lab internet's `hang` route: no answer until the task is cancelled.
                    while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                    handlerEnded.withLock { $0 = true }
                }
                return PortalResponse(status: 200)
            }
            let idle = try RawClient(port: port)
            idle.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(idle.responses(1).first?.hasPrefix("HTTP/1.1 200 ") == true)
            let hanging = try RawClient(port: port)
            hanging.send("GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
            // The hanging request has reached its handler once its socket is known to the server: wait for that by the
            // server's own state, not a fixed time (a short poll, bounded by the read timeout of the test's clients).
            let deadline = ContinuousClock.now + .seconds(10)
            while server.openConnections < 2, ContinuousClock.now < deadline { usleep(2_000) }
            #expect(server.openConnections == 2)
            if ending { server.stop(endingConnections: true) } else { server.stop() }
            // Ended: both see the server close (EOF) at once. Not ended (the control): the idle one still gets an
            // answer on its kept-open connection after the stop.
            if ending {
                #expect(idle.serverCloses(), "the idle kept-open connection stayed open after stop(endingConnections: true)")
                #expect(hanging.responses(1).isEmpty && hanging.closedByServer, "the hanging request's connection stayed open")
                let ended = ContinuousClock.now + .seconds(10)
                while !handlerEnded.withLock({ $0 }), ContinuousClock.now < ended { usleep(2_000) }
                #expect(handlerEnded.withLock { $0 }, "the hanging handler's task was not cancelled")
            } else {
                idle.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(idle.responses(1).first?.hasPrefix("HTTP/1.1 200 ") == true, "the control: the kept-open connection ended with stop()")
                #expect(!handlerEnded.withLock { $0 })
                server.stop(endingConnections: true)
            }
        }
    }

    @Test("stop(endingConnections:) returns once each connection's thread has ended: its last lines are in the log before the log may close")
    func stopWaitsForTheConnectionsLastLines() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("labhttp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/portal.log"
        let log = try PortalLog(file: path)
        let (server, port) = try LabHTTPServer.serving(ip: "127.0.0.1", port: 0, ioTimeoutSeconds: 10, logTag: "[t]", log: log) { request, _ in
            if request.path == "/hang" {
                // No answer until cancelled; then a handler that takes a moment to end (its thread's last line, the
                // request's, comes 0.2 s after the stop began: a stop that did not wait would have closed the log).
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                usleep(200_000)
            }
            return PortalResponse(status: 200)
        }
        // Half a request head (its thread waits in a read until the stop shuts the socket, then logs the read cut
        // short) and a request whose handler hangs.
        let half = try RawClient(port: port)
        half.send("GET / HTTP/1.1\r\nHost")
        let hanging = try RawClient(port: port)
        hanging.send("GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
        let deadline = ContinuousClock.now + .seconds(10)
        while server.openConnections < 2, ContinuousClock.now < deadline { usleep(2_000) }
        #expect(server.openConnections == 2)
        server.stop(endingConnections: true)
        #expect(server.openConnections == 0, "stop(endingConnections: true) returned with a connection still open")
        log.close()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("[t] 127.0.0.1: ") && text.contains("closed the connection after 20 bytes"),
                "the half request's last line was not in the log when the stop returned: \(text.debugDescription)")
        #expect(text.contains("[t] 127.0.0.1 GET /hang -> 200"),
                "the hanging request's line was not in the log when the stop returned: \(text.debugDescription)")
    }

    @Test("a PortalLog line after close() is dropped, not written to a descriptor that reuses the closed one's number")
    func portalLogLineAfterCloseIsDropped() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("portallog-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Another test's thread may take the freed number first (this process runs tests in parallel): a few tries,
        // each with a new log, until a pipe's write end holds the closed log's number.
        var checked = false
        for attempt in 0..<50 where !checked {
            // The pipe first, so that its own ends do not take the number the log's close frees.
            var ends: [Int32] = [-1, -1]
            try #require(pipe(&ends) == 0, "pipe: \(String(cString: strerror(errno)))")
            defer { close(ends[0]); close(ends[1]) }
            let path = directory + "/log-\(attempt)"
            let log = try PortalLog(file: path)
            let number = log.state.withLock { $0 }
            log.line("before")
            log.close()
            #expect(log.isClosed)
            let reused = fcntl(ends[1], F_DUPFD_CLOEXEC, number)
            guard reused == number else {
                if reused >= 0 { close(reused) }
                continue
            }
            defer { close(reused) }
            log.line("after")
            _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
            var byte: UInt8 = 0
            let n = read(ends[0], &byte, 1)
            #expect(n < 0 && errno == EAGAIN, "a line after close() went to descriptor \(number), now a pipe's write end")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.hasSuffix(" before\n") && !text.contains("after"), "\(text.debugDescription)")
            checked = true
        }
        #expect(checked, "no try got the closed log's descriptor number back for the pipe")
    }

    @Test("the handler runs on the connection's own thread, sleeps included: never waiting for Swift's cooperative pool")
    func handlerOnTheConnectionThread() throws {
        let caller = pthread_self()
        let seen = Mutex<[pthread_t]>([])
        let server = LabHTTPServer { _, _ in
            seen.withLock { $0.append(pthread_self()) }
            try? await Task.sleep(for: .milliseconds(20))
            seen.withLock { $0.append(pthread_self()) }
            return PortalResponse(status: 204)
        }
        let response = server.run(RawHTTPRequest(method: "GET", path: "/", query: "", headers: [], body: []), "127.0.0.1", connection: -1)
        #expect(response.status == 204)
        let threads = seen.withLock { $0 }
        #expect(threads.count == 2 && threads.allSatisfy { pthread_equal($0, caller) != 0 },
                "the handler ran on another thread (before and after its sleep), the cooperative pool's")
    }
}
