import HotspotCore
import HotspotDaemon
import HotspotProtocol
import Testing

/// Issue 17: SSIDs are bytes on the wire (`ssid` text for UTF-8, `ssid_hex` beside it for the others), through
/// hotspotd and back from a helper; records and replies print hostile SSIDs escaped.
@Suite("SSIDs on the wire and in hotspotd")
struct SSIDWireTests {
    static let latin1 = SSID(bytes: [0x43, 0x61, 0x66, 0xE9])   // "Caf\xe9": Latin-1, not UTF-8

    @Test("a network's wire form: ssid only for UTF-8; ssid (lossy) and ssid_hex for other bytes (golden)")
    func networkWire() throws {
        let utf8 = HotspotNetwork(ssid: "Café", bssid: "02:00:00:00:00:01")
        #expect(utf8.wire["ssid"] == "Café")
        #expect(utf8.wire["ssid_hex"] == nil)
        let latin = HotspotNetwork(rawSSID: Self.latin1, bssid: "02:00:00:00:00:01")
        #expect(latin.wire["ssid"] == .string("Caf\u{FFFD}"))
        #expect(latin.wire["ssid_hex"] == "436166e9")
        #expect(try HotspotNetwork(wire: latin.wire).rawSSID == Self.latin1)
        #expect(try HotspotNetwork(wire: latin.wire) == latin)
        let identity = NetworkIdentity(rawSSID: Self.latin1, security: .wpa2Personal)
        #expect(identity.wire.text == #"{"security":"wpa2-psk","ssid":"Caf\#u{FFFD}","ssid_hex":"436166e9"}"#)
        #expect(try NetworkIdentity(wire: identity.wire, path: "n") == identity)
    }

    @Test("ssid_hex is read first; bad hex and more than 32 bytes are refused naming the field (golden)")
    func decodeErrors() throws {
        let both: JSON = ["ssid": "ignored", "ssid_hex": "436166E9", "bssid": "02:00:00:00:00:01"]
        #expect(try HotspotNetwork(wire: both).rawSSID == Self.latin1)
        #expect(try HotspotNetwork(wire: ["ssid_hex": "436166e9", "bssid": "02:00:00:00:00:01"]).rawSSID == Self.latin1)
        do {
            _ = try HotspotNetwork(wire: ["ssid_hex": "43616", "bssid": "02:00:00:00:00:01"], path: "network")
            Issue.record("odd hex accepted")
        } catch {
            #expect(error.message == #"network.ssid_hex: expected hex digits, two a byte, got "43616""#)
        }
        do {
            _ = try HotspotNetwork(wire: ["ssid_hex": .string(String(repeating: "41", count: 33)), "bssid": "x"], path: "network")
            Issue.record("33 bytes accepted")
        } catch {
            #expect(error.message == "network.ssid_hex: 33 bytes; IEEE 802.11 allows at most 32")
        }
    }

    @Test("the state file keeps SSIDs as bytes: two Latin-1 SSIDs with one lossy text stay two entries")
    func persistence() throws {
        var state = PersistentState()
        let a = NetworkIdentity(rawSSID: Self.latin1, security: .open)
        let b = NetworkIdentity(rawSSID: SSID(bytes: [0x43, 0x61, 0x66, 0xE8]), security: .open)
        state.cache[a] = .notCaptive
        state.cache[b] = .helper("h")
        state.autoJoinDisabled = [b]
        let back = try PersistentState(json: try JSON.parse(Array(state.json.text.utf8)), file: "state.json")
        #expect(back.cache == state.cache)
        #expect(back.autoJoinDisabled == [b])
    }

    @Test("join carries the bytes: ssid_hex for a Latin-1 SSID, decoded back to the same bytes")
    func joinRequest() throws {
        let request = ControlRequest.join(ssid: Self.latin1, password: nil)
        #expect(request.json.text == #"{"ssid":"Caf\#u{FFFD}","ssid_hex":"436166e9","type":"join"}"#)
        #expect(try ControlRequest(json: request.json) == request)
        #expect(ControlRequest.join(ssid: "Cafe", password: nil).json.text == #"{"ssid":"Cafe","type":"join"}"#)
    }

    @Test("JSON text escapes C0, DEL, C1 (CSI) and U+2028/9: a record cannot drive a terminal or break a line (golden)")
    func jsonEscapes() throws {
        let hostile = "a\u{1B}[2J\u{9B}31m\u{7F}\u{2028}\u{2029}\n\"<script>"
        let text = JSON.string(hostile).text
        #expect(text == #""a\u001b[2J\u009b31m\u007f\u2028\u2029\n\"<script>""#)
        #expect(try JSON.parse(Array(text.utf8)) == .string(hostile))
        #expect(JSON.string("Café ☕ \u{E2}").text == "\"Café ☕ \u{E2}\"")
    }

    @Test("every scalar up to U+3000 and beyond the BMP round-trips through the JSON writer, and none of the escaped ones is written raw")
    func jsonWriterRoundTripsEveryScalar() throws {
        var scalars = (0..<0x3000).compactMap(Unicode.Scalar.init)
        scalars += [Unicode.Scalar(0xFFFD)!, Unicode.Scalar(0x1F600)!, Unicode.Scalar(0x10FFFF)!]
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars)
        let written = JSON.string(text).bytes
        #expect(try JSON.parse(written) == .string(text))
        #expect(!written.contains { $0 < 0x20 || $0 == 0x7F })
        let pairs = zip(written, written.dropFirst())
        #expect(!pairs.contains { $0 == 0xC2 && (0x80...0x9F).contains($1) })
        let triples = zip(pairs, written.dropFirst(2)).map { ($0.0, $0.1, $1) }
        #expect(!triples.contains { $0 == 0xE2 && $1 == 0x80 && ($2 == 0xA8 || $2 == 0xA9) })
        #expect(String(decoding: written, as: UTF8.self).contains("\u{2027}"))   // its neighbour U+2027 stays raw UTF-8
        #expect(written.count > text.utf8.count)
    }

    @Test("a Latin-1 network end to end in hotspotd: the helper sees ssid_hex, its echo counts, the cache keys on the bytes")
    func latin1ThroughHotspotd() throws {
        let d = EmbeddedDaemon()
        let h = try d.helper("h")
        let ctl = d.control()
        let latin = HotspotNetwork(rawSSID: Self.latin1, bssid: "02:00:00:00:00:01")
        try d.join(ctl, latin)
        let evaluate = try h.command()
        #expect(evaluate["network"]?["ssid_hex"] == "436166e9")
        try h.answer(evaluate, confidence: .high)
        #expect(d.records("irregular").isEmpty, "\(d.records("irregular"))")
        try h.answer(try h.command())   // authenticate
        let status = try d.status(ctl)
        #expect(status["state"] == "Authenticated")
        #expect(status["association"]?["ssid_hex"] == "436166e9")
        let cache = try #require(status["cache"]?.arrayValue)
        #expect(cache.count == 1 && cache[0]["ssid_hex"] == "436166e9")
        // Another network whose lossy text is the same ("Caf\u{FFFD}") is another network: not cached.
        try #require(try ctl.request(.disassociate)?["type"]?.stringValue == "ok")
        let other = HotspotNetwork(rawSSID: SSID(bytes: [0x43, 0x61, 0x66, 0xE8]), bssid: "02:00:00:00:00:02")
        #expect(other.ssid == latin.ssid)
        try d.join(ctl, other)
        #expect(try h.command()["commandName"] == "evaluate")
    }

    @Test("status and trace records print a hostile SSID escaped (what `ctl status` and `ctl trace` show, golden)")
    func hostileSSIDIsEscaped() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let hostile = "Evil\n\u{1B}[31m\"<script>"
        try d.join(ctl, HotspotNetwork(ssid: hostile, bssid: "02:00:00:00:00:01"))
        let status = try d.status(ctl).text
        #expect(status.contains(#""ssid":"Evil\n\u001b[31m\"<script>""#), "\(status)")
        #expect(!status.contains("\n") && !status.contains("\u{1B}"))
        let records = d.records.map(\.text).filter { $0.contains("Evil") }
        #expect(!records.isEmpty)
        #expect(records.allSatisfy { !$0.contains("\n") && !$0.contains("\u{1B}") })
    }
}
