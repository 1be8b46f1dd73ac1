import Foundation
import HotspotCore
import HotspotProtocol
import HotspotSystem
import Testing

@Suite("protocol encoding")
struct ProtocolTests {
    @Test("frames split at every byte come out whole")
    func partialFrames() throws {
        let a = HelperMessage.notify(title: "héllo", body: "wörld \u{1F600}").framed
        let b = HelperMessage.supportedNetworkInterfaces(requestID: 7).framed
        let stream = a + b
        for cut in 0...stream.count {
            var dec = FrameDecoder()
            var got: [HelperMessage] = []
            dec.append(stream[0..<cut])
            while let p = try dec.nextFrame() { got.append(try HelperMessage(bytes: p)) }
            dec.append(stream[cut...])
            while let p = try dec.nextFrame() { got.append(try HelperMessage(bytes: p)) }
            #expect(got == [.notify(title: "héllo", body: "wörld \u{1F600}"), .supportedNetworkInterfaces(requestID: 7)])
        }
    }

    @Test("an oversize length prefix is an error, the limit itself is not")
    func oversize() throws {
        var dec = FrameDecoder()
        dec.append([0, 1, 0, 1])
        #expect(throws: ProtocolError(.frameTooLarge, "frame of 65537 bytes exceeds the limit of 65536 bytes")) { try dec.nextFrame() }
        var ok = FrameDecoder()
        ok.append([0, 1, 0, 0])
        #expect(try ok.nextFrame() == nil)
    }

    @Test("every message round-trips")
    func roundTrip() throws {
        var secured = cafeSecure
        secured.password = "pw"
        secured.confidence = .low
        let helper: [HelperMessage] = [
            .register(identifier: "a.b", displayName: "AB", version: 1),
            .response(command: 42, result: .uiRequired, network: secured, networkList: [cafe, secured]),
            .logoff(requestID: nil, network: cafe), .supportedNetworkInterfaces(requestID: 3), .notify(title: "t", body: "\"b\"\n"),
        ]
        for m in helper { #expect(try HelperMessage(bytes: m.json.bytes) == m) }
        let cmd = Command(id: 9, type: .evaluate, helper: "a.b", network: cafe, deadline: .milliseconds(450))
        let daemon: [DaemonMessage] = [
            .registered(identifier: "a.b", version: 1), .command(cmd), .cancel(9), .logoffResult(requestID: 2, accepted: true),
            .interfaces(requestID: 1, networks: [cafe]), .error(ProtocolError(.invalidField, "x: y"), offending: "{"),
        ]
        for m in daemon { #expect(try DaemonMessage(bytes: m.json.bytes) == m) }
        let control: [ControlRequest] = [
            .associate(secured), .disassociate, .signal(0.5), .ipUp, .ipDown, .showScanList([cafe], repeating: true), .hideScanList,
            .logoff(helper: "h", network: cafe.identity), .foreground(helper: nil), .foreground(helper: "h"), .status, .subscribeTrace,
        ]
        for m in control { #expect(try ControlRequest(json: JSON.parse(m.json.bytes)) == m) }
    }

    @Test("a deadline with a fraction of a microsecond survives the round trip; a huge or negative one is refused")
    func deadlineRoundTrip() throws {
        // ci/fuzz.sh found this one: 2.0025 ms decoded to 2002 us, written as 2.002, read back as 2001 us.
        let text = #"{"type":"command","id":2,"commandType":3,"deadline_ms":2.0025,"network":{"ssid":"Cafe","bssid":"02:00:00:00:00:01"}}"#
        let first = try DaemonMessage(bytes: Array(text.utf8))
        guard case .command(let c) = first else { Issue.record("not a command: \(first)"); return }
        #expect(c.deadline == .microseconds(2003) || c.deadline == .microseconds(2002))
        #expect(try DaemonMessage(bytes: first.json.bytes) == first)
        for bad in ["1e300", "-1", "1e13"] {
            let message = #"{"type":"command","id":2,"commandType":3,"deadline_ms":"# + bad + "}"
            #expect(throws: ProtocolError.self) { try DaemonMessage(bytes: Array(message.utf8)) }
        }
    }

    @Test("decoding errors name the field and what was expected")
    func fieldErrors() throws {
        func error(_ text: String) -> ProtocolError? {
            do {
                _ = try HelperMessage(bytes: Array(text.utf8))
                return nil
            } catch { return error }
        }
        #expect(error("[1]")?.code == .malformedJSON)
        #expect(error("{\"a\":1} x")?.code == .malformedJSON)
        #expect(error("{}")?.code == .unknownType)
        #expect(error("{\"type\":\"dance\"}")?.message.contains("dance") == true)
        #expect(error("{\"type\":\"response\",\"command\":1,\"result\":9}")?.message.hasPrefix("result:") == true)
        #expect(error("{\"type\":\"response\",\"command\":1,\"result\":0,\"network\":{\"ssid\":\"x\"}}")?.message == "network.bssid: missing (expected a string)")
        #expect(error("{\"type\":\"response\",\"command\":1,\"result\":0,\"networkList\":[{\"ssid\":\"x\",\"bssid\":\"y\",\"signalStrength\":3}]}")?
            .message.hasPrefix("networkList[0].signalStrength") == true)
        #expect(error("{\"type\":\"register\",\"identifier\":\"a\",\"displayName\":\"b\"}")?.message.hasPrefix("version") == true)
        #expect(error(String(repeating: "[", count: 100))?.code == .malformedJSON)
        #expect(error("\"\\ud800\"")?.code == .malformedJSON)
    }

    @Test("JSON parser and writer agree on escapes and numbers")
    func json() throws {
        let v: JSON = ["s": "a\"b\\c\n\u{1}é", "n": -12.5, "i": 3, "b": true, "z": nil, "a": [1, "x"]]
        #expect(try JSON.parse(v.bytes) == v)
        #expect(try JSON.parse(Array("\"\\u00e9\\ud83d\\ude00\"".utf8)) == .string("é\u{1F600}"))
        #expect(JSON.number(3).text == "3")
    }
}

@Suite("event loop, clock and sockets")
struct SystemTests {
    @Test("timers fire in deadline order only when the manual clock reaches them; cancelled ones never")
    func manualClockTimers() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        var fired: [String] = []
        loop.schedule(after: .milliseconds(30)) { fired.append("c") }
        loop.schedule(after: .milliseconds(10)) { fired.append("a") }
        let b = loop.schedule(after: .milliseconds(20)) { fired.append("b") }
        loop.schedule(after: .milliseconds(10)) { fired.append("a2") }
        loop.fireDueTimers()
        #expect(fired.isEmpty)
        clock.advance(by: .milliseconds(10))
        loop.fireDueTimers()
        #expect(fired == ["a", "a2"])
        loop.cancel(b)
        clock.advance(by: .milliseconds(100))
        loop.runOnce(maxWait: .zero)
        #expect(fired == ["a", "a2", "c"])
        #expect(loop.pendingTimerCount == 0)
    }

    @Test("the real monotonic clock moves forward and poll waits for the next timer")
    func realClock() throws {
        let loop = try EventLoop()
        let start = SystemMonotonicClock.read()
        var done = false
        loop.schedule(after: .milliseconds(20)) { done = true }
        // poll waits for the 20 ms timer, not for maxWait: a minute's maxWait against a bound of half of it, so a
        // loaded machine's delay (seconds at worst) cannot fail it and a poll that waited for maxWait always does.
        while !done { loop.runOnce(maxWait: .seconds(60)) }
        let elapsed = SystemMonotonicClock.read() - start
        #expect(elapsed >= .milliseconds(20))
        #expect(elapsed < .seconds(30))
    }

    @Test("listening socket: directory 0700, socket 0600, peer credentials, stale socket replaced, busy refused")
    func sockets() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-sock-\(getpid())-\(UInt32.random(in: 0...UInt32.max))/run").path
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: dir).deletingLastPathComponent().path) }
        let path = dir + "/s.sock"
        var listener: UnixSocket? = try UnixSocket.listen(path: path)
        var st = stat()
        stat(dir, &st)
        #expect(st.st_mode & 0o777 == 0o700)
        stat(path, &st)
        #expect(st.st_mode & 0o777 == 0o600)
        let client = try UnixSocket.connect(path: path)
        var server: UnixSocket?
        #expect(listener!.waitReadable(timeout: .seconds(10)), "the connection is ready to accept")
        server = try listener!.accept()
        let peer = try #require(try server?.peerCredentials())
        #expect(peer.pid == getpid())
        #expect(peer.uid == getuid())
        try client.writeAll([1, 2, 3])
        var buf = [UInt8](repeating: 0, count: 8)
        _ = server!.waitReadable(timeout: .seconds(1))
        let n = try buf.withUnsafeMutableBytes { try server!.read(into: $0) }
        #expect(n == .bytes(3))
        // A second listener on a live socket is refused.
        #expect(throws: SystemError.self) { try UnixSocket.listen(path: path) }
        _ = client
        // A socket file left behind (listener gone, file kept) is replaced.
        listener!.close()
        listener = nil
        #expect(FileManager.default.fileExists(atPath: path))
        let again = try UnixSocket.listen(path: path)
        again.close()
        do {
            _ = try UnixSocket.connect(path: dir + "/none.sock")
            Issue.record("connect to a missing socket succeeded")
        } catch {
            #expect(error.description.contains("none.sock"))
            #expect(error.description.contains("ENOENT"))
        }
    }
}
