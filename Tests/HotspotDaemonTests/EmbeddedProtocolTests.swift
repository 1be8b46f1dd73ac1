import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Testing

/// Protocol rules and overload behaviour on `EmbeddedDaemon` (docs/PROTOCOL.md).
@Suite("hotspotd protocol (embedded)")
struct EmbeddedProtocolTests {
    @Test("control error replies echo the request's requestID")
    func controlErrorsEchoRequestID() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        ctl.send(["type": "bogus", "requestID": "abc"])
        let unknown = try #require(try ctl.read().first)
        #expect(unknown["type"]?.stringValue == "error" && unknown["code"]?.stringValue == "unknownType")
        #expect(unknown["requestID"] == "abc")
        ctl.send(["type": "signal", "requestID": 9])
        let invalid = try #require(try ctl.read().first)
        #expect(invalid["code"]?.stringValue == "invalidField")
        #expect(invalid["requestID"]?.intValue == 9)
        // Without a station driver, join fails with requestFailed, echoing too.
        ctl.send(["type": "join", "ssid": "Cafe", "requestID": ["n": 1]])
        let failed = try #require(try ctl.read().first)
        #expect(failed["code"]?.stringValue == "requestFailed")
        #expect(failed["requestID"] == ["n": 1])
        // Malformed JSON has no requestID to echo; the error has none.
        ctl.sendBytes(frame(Array("{\"requestID\": 4, ".utf8)))
        let malformed = try #require(try ctl.read().first)
        #expect(malformed["code"]?.stringValue == "malformedJSON")
        #expect(malformed["requestID"] == nil)
    }

    @Test("a failing station request's error echoes the requestID")
    func stationErrorEchoesRequestID() throws {
        struct Refused: Error, CustomStringConvertible { var description: String { "wpa_supplicant refused" } }
        let d = EmbeddedDaemon(station: true)
        d.stationHandler = { _ in throw Refused() }
        let ctl = d.control()
        let reply = try #require(try ctl.request(.leave, requestID: 12))
        #expect(reply["code"]?.stringValue == "requestFailed")
        #expect(reply["message"]?.stringValue == "wpa_supplicant refused")
        #expect(reply["requestID"]?.intValue == 12)
        d.stationHandler = { _ in }
        #expect(try ctl.request(.leave, requestID: 13)?["requestID"]?.intValue == 13)
        #expect(d.stationRequests == [.leave, .leave])
    }

    @Test("a station request's reply comes before the replies to the requests sent after it; the trace stays in order")
    func stationRequestsPipelined() throws {
        let d = EmbeddedDaemon(station: true)
        let ctl = d.control()
        var joined: [String] = []
        d.stationHandler = { request in
            if case .join(let ssid, _) = request {
                joined.append(ssid.text)
                // The driver reports the association while the request is carried out.
                d.submit(.associated(HotspotNetwork(rawSSID: ssid, bssid: "02:00:00:00:00:07")), via: "driver")
            }
        }
        let join = ControlRequest.join(ssid: "Cafe", password: nil).json
        let status = ControlRequest.status.json
        ctl.sendBytes(frame(JSON.object((join.objectValue ?? [:]).merging(["requestID": 1]) { a, _ in a }).bytes)
                      + frame(JSON.object((status.objectValue ?? [:]).merging(["requestID": 2]) { a, _ in a }).bytes))
        let replies = try ctl.read()
        #expect(replies.map { $0["requestID"]?.intValue } == [1, 2])
        #expect(replies.map { $0["type"]?.stringValue } == ["ok", "status"])
        #expect(replies.last?["association"]?["ssid"]?.stringValue == "Cafe", "the status answers after the join")
        #expect(joined == ["Cafe"])
        let seqs = d.records.compactMap { $0["seq"]?.intValue }
        #expect(seqs == Array(1...seqs.count), "records carried out in seq order")
    }

    @Test("helper-socket error replies echo the request's requestID")
    func helperErrorsEchoRequestID() throws {
        let d = EmbeddedDaemon()
        let early = d.connect(.helper)
        early.send(.supportedNetworkInterfaces(requestID: 7))
        let notRegistered = try #require(try early.read().first)
        #expect(notRegistered["code"]?.stringValue == "notRegistered")
        #expect(notRegistered["requestID"]?.intValue == 7)
        let h = try d.helper("h")
        h.send(["type": "logoff", "requestID": 8, "network": "Cafe"])
        let invalid = try #require(try h.read().first)
        #expect(invalid["type"]?.stringValue == "error" && invalid["code"]?.stringValue == "invalidField")
        #expect(invalid["requestID"]?.intValue == 8)
        // A request without requestID gets an error without one.
        h.send(["type": "logoff", "network": "Cafe"])
        #expect(try h.read().first?["requestID"] == nil)
    }

    @Test("status.scanList is cleared by hideScanList")
    func hideScanListClearsStatus() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let h = try d.helper("claimer", displayName: "Claimer")
        _ = try ctl.request(.showScanList([cafe, cafeSecure], repeating: false))
        try h.answer(try h.command())
        let shown = try d.status(ctl)["scanList"]?.arrayValue
        #expect(shown?.count == 2)
        #expect(shown?.first?["annotation"]?.stringValue == "Claimer")
        _ = try ctl.request(.hideScanList)
        #expect(try d.status(ctl)["scanList"] == .null)
        #expect(d.records("event").last?["event"]?.stringValue == "scanListHidden")
        // The station still has the passwords helpers set (a join after hiding uses them).
        #expect(d.core.annotatedScanList?.count == 2)
        // A round answered after hideScanList does not show the list again.
        _ = try ctl.request(.showScanList([cafe], repeating: false))
        let late = try h.command()
        _ = try ctl.request(.hideScanList)
        try h.answer(late)
        #expect(d.records("scanList").count == 2)
        #expect(try d.status(ctl)["scanList"] == .null)
        // Shown again: the list is back.
        _ = try ctl.request(.showScanList([cafe], repeating: false))
        try h.answer(try h.command())
        #expect(try d.status(ctl)["scanList"]?.arrayValue?.count == 1)
    }

    @Test("a stalled trace subscriber is closed once, its overloaded record goes only to the others")
    func stalledSubscriber() throws {
        let d = EmbeddedDaemon()
        d.keepActions = false
        let stalled = d.control()
        let reader = d.control()
        #expect(try stalled.request(.subscribeTrace)?["type"]?.stringValue == "ok")
        #expect(try reader.request(.subscribeTrace)?["type"]?.stringValue == "ok")
        let h = try d.helper("chatty")
        let body = String(repeating: "x", count: 60_000)
        var seen: [JSON] = []
        for _ in 0..<500 where !stalled.isClosed {
            h.send(.notify(title: "t", body: body))
            seen += try reader.read().compactMap { $0["record"] }
        }
        #expect(stalled.isClosed, "the stalled subscriber is closed")
        #expect(!reader.isClosed)
        let overloaded = d.records("overloaded")
        #expect(overloaded.count == 1)
        #expect(overloaded.first?["connection"]?.intValue == stalled.id)
        #expect(try #require(overloaded.first?["queued"]?.intValue) > DaemonCore.maximumQueuedOutput)
        #expect(seen.contains { $0["kind"]?.stringValue == "overloaded" }, "the other subscriber got the record")
        let toStalled = try stalled.read().compactMap { $0["record"]?["kind"]?.stringValue }
        #expect(!toStalled.contains("overloaded") && !toStalled.contains("disconnect"), "nothing sent to the connection being closed")
        // The daemon still serves.
        h.send(.supportedNetworkInterfaces(requestID: 1))
        #expect(try h.read(type: "interfaces") != nil)
    }

    @Test("one budget per peer: a control client leaving more than 4 MiB of replies unread is closed like a subscriber; one reply past it still goes out whole")
    func controlQueueLimit() throws {
        let d = EmbeddedDaemon()
        d.keepActions = false
        let h = try d.helper("h")
        let ctl = d.control()
        // A status of about 60 KB: a 250-network scan list.
        let list = (0..<250).map { HotspotNetwork(ssid: "Network-\($0)", bssid: "02:00:00:00:\(String(format2: $0 / 256)):\(String(format2: $0 % 256))") }
        ctl.send(minimalShowScanList(list))
        _ = try ctl.read()
        try h.answer(try h.command())
        let lazy = d.control()
        var requests = 0
        while lazy.unread <= 6 << 20, !lazy.isClosed {
            lazy.send(.status)
            requests += 1
        }
        #expect(lazy.isClosed, "a control client's replies count against the same 4 MiB as a subscriber's trace (issue 27: counted once)")
        #expect(lazy.unread <= DaemonCore.maximumQueuedOutput + 70_000, "\(lazy.unread) bytes queued when it was closed")
        let overloaded = try #require(d.records("overloaded").first)
        #expect(overloaded["connection"]?.intValue == lazy.id)
        // A reader that takes its replies is never closed, however many it asks for.
        let reader = d.control()
        for _ in 0..<(requests + 10) {
            reader.send(.status)
            #expect(try reader.read().count == 1)
        }
        #expect(!reader.isClosed)
    }

    @Test("a scan list whose filterScanList frame would exceed the helper frame limit is not sent; the trace says why")
    func overLimitScanList() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let h = try d.helper("h")
        let list = (0..<400).map {
            HotspotNetwork(ssid: "A-rather-long-network-name-\($0)", bssid: "02:00:00:00:\(String(format2: $0 / 256)):\(String(format2: $0 % 256))")
        }
        let request = minimalShowScanList(list)
        #expect(request.bytes.count <= maximumFrameLength, "the request itself fits")
        let command = DaemonMessage.command(Command(id: 1, type: .filterScanList, helper: "h", networkList: list, deadline: .seconds(45)))
        #expect(command.json.bytes.count > maximumFrameLength, "the command would not")
        ctl.send(request)
        #expect(try ctl.read().first?["type"]?.stringValue == "ok")
        // The helper reads without error (its decoder enforces the limit) and stays connected.
        let got = try h.read()
        #expect(!got.contains { $0["commandName"]?.stringValue == "filterScanList" })
        #expect(!h.isClosed)
        let error = try #require(d.records("error").last)
        #expect(error["message"]?.stringValue?.contains("exceeds the helper frame limit of 65536 bytes") == true)
        #expect(error["message"]?.stringValue?.hasPrefix("send filterScanList command") == true)
        #expect(error["message"]?.stringValue?.contains("to helper h: frame of") == true)
        // The round ends at its deadline like an unanswered one.
        d.advance(by: .seconds(45))
        #expect(d.records("irregular").contains { $0["irregularity"]?.stringValue == "noAnswer" && $0["commandType"]?.stringValue == "filterScanList" })
    }
}

/// A showScanList request with only ssid and bssid per network (what a client may send).
func minimalShowScanList(_ list: [HotspotNetwork]) -> JSON {
    ["type": "showScanList", "networks": .array(list.map { ["ssid": .string($0.ssid), "bssid": .string($0.bssid)] })]
}

extension String {
    /// Two lower-case hex digits.
    init(format2 v: Int) {
        let digits = Array("0123456789abcdef")
        self = String([digits[(v >> 4) & 15], digits[v & 15]])
    }
}

@Suite("hotspotd core fuzz (embedded)")
struct EmbeddedFuzzTests {
    @Test("random bytes and mutated messages in random pieces: every connection is answered or closed, a good helper is served")
    func fuzzInPieces() throws {
        let d = EmbeddedDaemon()
        d.keepActions = false
        var rng = SplitMix64(seed: 0xC0FE)
        let templates: [[UInt8]] = [
            HelperMessage.register(identifier: "fuzz", displayName: "Fuzz", version: 1).json.bytes,
            HelperMessage.response(command: 1, result: .success, network: cafe, networkList: [cafe]).json.bytes,
            HelperMessage.logoff(requestID: 3, network: cafe).json.bytes,
            HelperMessage.supportedNetworkInterfaces(requestID: 4).json.bytes,
        ]
        var peers: [EmbeddedDaemon.Peer] = []
        for c in 0..<40 {
            let peer = d.connect(c % 5 == 0 ? .control : .helper)
            var stream: [UInt8] = []
            for _ in 0..<50 {
                var payload = templates[Int(rng.next() % UInt64(templates.count))]
                for _ in 0..<Int(rng.next() % 4) where !payload.isEmpty {
                    payload[Int(rng.next() % UInt64(payload.count))] = UInt8(truncatingIfNeeded: rng.next())
                }
                stream += frame(payload)
            }
            switch rng.next() % 3 {
            case 0: stream += [0x00, 0x01, 0x00, 0x01]   // an oversize length prefix
            case 1: stream += Array(frame(templates[0]).prefix(7))   // ends inside a frame
            default: break
            }
            // Delivered in random pieces.
            var at = 0
            while at < stream.count, !peer.isClosed {
                let n = min(stream.count - at, Int(1 + rng.next() % 300))
                peer.sendBytes(Array(stream[at..<(at + n)]))
                at += n
            }
            _ = try? peer.read()
            peers.append(peer)
        }
        #expect(d.records("protocolError").count > 100)
        for p in peers where !p.isClosed { p.close() }
        #expect(d.records("disconnect").count == peers.count, "every fuzz connection ended once")
        #expect(d.records("disconnect").contains { $0["reason"]?.stringValue?.hasPrefix("end of file inside a frame") == true })
        let ctl = d.control()
        let good = try d.helper("good")
        try d.join(ctl, cafe)
        try good.answer(try good.command())
        try good.answer(try good.command())
        #expect(try d.status(ctl)["bestHelper"]?.stringValue == "good")
    }
}
