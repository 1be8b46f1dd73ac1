import Foundation
import HotspotCore
import HotspotProtocol
import Testing

/// The typed trace (`TraceRecord`, docs/TRACE.md) reads traces written before it, byte for byte, and writes
/// every kind in a fixed form (golden lines).
@Suite struct TraceRecordTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/traces")

    static func lines(_ name: String) throws -> [String] {
        try String(contentsOf: fixtures.appendingPathComponent(name), encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// A trace hotspotd wrote before the records were typed (commit ba5cd77: a helper's evaluate, authenticate,
    /// maintain loop, scan list, logoff, foreground, signal): every line reads as its kind, and writing the record
    /// again gives the same bytes.
    @Test func readsATraceWrittenBeforeTheTypes() throws {
        let lines = try Self.lines("hotspotd-ba5cd77.jsonl")
        #expect(lines.count > 250)
        var kinds = Set<String>()
        for line in lines {
            let entry = try #require(TraceEntry(line: Array(line.utf8)))
            if case .unknown(let kind, _) = entry.record { Issue.record("seq \(entry.seq): \(kind) did not read: \(line)") }
            kinds.insert(entry.kind)
            let again = entry.record.json(seq: entry.seq, time: try #require(entry.time)).text
            #expect(again == line, "seq \(entry.seq) written again differs")
        }
        #expect(kinds.count >= 18)
    }

    /// Every kind's example, encoded: one golden line per kind (Fixtures/traces/golden-kinds.jsonl, in
    /// `payloadTypes` order). `HOTSPOT_WRITE_GOLDEN=1` writes the file instead (review its diff).
    @Test func everyKindHasAGoldenLine() throws {
        let written = TraceRecord.payloadTypes.map { type in type.example.record.json(seq: 7, time: 5_585_884_412_923).text }
        let file = Self.fixtures.appendingPathComponent("golden-kinds.jsonl")
        if ProcessInfo.processInfo.environment["HOTSPOT_WRITE_GOLDEN"] == "1" {
            try (written.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        }
        let golden = try Self.lines("golden-kinds.jsonl")
        #expect(golden.count == TraceRecord.payloadTypes.count)
        for (line, type) in zip(golden, TraceRecord.payloadTypes) {
            let entry = try #require(TraceEntry(line: Array(line.utf8)))
            #expect(entry.kind == type.kind)
            #expect(entry.record == type.example.record, "\(type.kind) reads back other than its example")
            #expect(entry.record.json(seq: 7, time: 5_585_884_412_923).text == line)
        }
        #expect(zip(written, golden).allSatisfy { $0 == $1 }, "an example encodes other than its golden line")
    }

    /// Values hotspotd writes as null (not absent) stay null.
    @Test func nullsAreWrittenAsBefore() {
        #expect(TraceRecord.transition(.init(from: "Inactive", to: "Evaluating", bestHelper: nil)).fields["bestHelper"] == .null)
        #expect(TraceRecord.command(.init(id: 1, commandType: "maintain", helper: "h", network: nil, networkList: nil, deadline_ms: nil))
            .fields["deadline_ms"] == .null)
        #expect(TraceRecord.event(.init(event: "foreground", detail: .init(helperIsNull: true))).fields["detail"] == ["helper": nil])
        #expect(TraceRecord.station(.init(action: "signal", bssid: "b", rssi: -50, previousRSSI: nil, signalStrength: 0.8)).fields["previousRSSI"] == .null)
        let exited = TraceRecord.providerExited(.init(app: "a", role: "r", pid: nil, status: nil, signal: nil, error: "spawn: ENOENT")).fields
        #expect(exited == ["app": "a", "role": "r", "status": nil, "error": "spawn: ENOENT"])
    }

    /// The kinds of issue 27 in the JSON form hotspotd wrote before they were typed: a `connectionLimit` carries
    /// only its action's fields, a start-time `warning` writes `movedTo: null`.
    @Test func issue27KindsKeepTheirForm() throws {
        #expect(TraceRecord.connectionLimit(.init(socket: "helper", action: "resume", open: 3)).fields
            == ["socket": "helper", "action": "resume", "open": 3])
        #expect(TraceRecord.connectionLimit(.init(socket: "control", action: "backOff", error: "accept: EMFILE", open: 0)).fields
            == ["socket": "control", "action": "backOff", "error": "accept: EMFILE", "open": 0])
        #expect(TraceRecord.connectionLimit(.init(socket: "helper", action: "accept", limit: 768, refused: 40)).fields
            == ["socket": "helper", "action": "accept", "limit": 768, "refused": 40])
        #expect(TraceRecord.warning(.init(message: "state file s cannot be written", movedTo: nil)).fields
            == ["message": "state file s cannot be written", "movedTo": nil])
        #expect(TraceRecord.stateTrimmed(.init(file: "s", limit: 1024, cacheDropped: 476, autoJoinDisabledDropped: 0)).fields
            == ["file": "s", "limit": 1024, "cacheDropped": 476, "autoJoinDisabledDropped": 0])
        #expect(TraceRecord.traceLoss(.init(file: "t", error: "e", records: 2, firstSeq: 8, lastSeq: 9)).fields
            == ["file": "t", "error": "e", "records": 2, "firstSeq": 8, "lastSeq": 9])
        let line = #"{"kind":"connectionLimit","seq":3,"t_ns":9,"socket":"helper","action":"refuse","limit":768,"refused":1}"#
        let entry = try #require(TraceEntry(line: Array(line.utf8)))
        #expect(entry.record.connectionLimit == .init(socket: "helper", action: "refuse", limit: 768, refused: 1))
    }

    /// A network and a scan list entry encode as the wire form does (`HotspotNetwork.wire`, `NetworkIdentity.wire`).
    @Test func networksEncodeAsTheWireForm() throws {
        let n = HotspotNetwork(rawSSID: SSID(bytes: [0x43, 0xE9, 0x00]), bssid: "02:00:00:00:01:00", signalStrength: 0.5, security: .wpa2Personal,
                               didAutoJoin: true, didJustJoin: true, isChosenHelper: true, confidence: .low, password: "pw")
        #expect(try JSONCoding.encode(TraceNetwork(n)) == n.wire)
        #expect(try JSONCoding.encode(TraceNetwork(n.identity)) == n.identity.wire)
        #expect(TraceNetwork(n).ssid.ssid == n.rawSSID)
        #expect(TraceNetwork(n).hotspotNetwork == n)
    }

    /// A kind this build does not know (a newer hotspotd) reads as `.unknown` with its fields; so does a known kind
    /// with a field of another type. Neither fails the trace.
    @Test func unknownKindsReadAsUnknown() throws {
        let newer = try #require(TraceEntry(line: Array(#"{"kind":"peerBudgetClosed","seq":4,"t_ns":10,"budget":3}"#.utf8)))
        #expect(newer.record == .unknown(kind: "peerBudgetClosed", fields: ["budget": 3]))
        #expect(newer.seq == 4)
        // A known kind whose field has another type does not read: unknown, with its fields.
        let broken = try #require(TraceEntry(line: Array(#"{"kind":"transition","seq":5,"t_ns":11,"from":"Inactive","to":3}"#.utf8)))
        #expect(broken.record == .unknown(kind: "transition", fields: ["from": "Inactive", "to": 3]))
        // A missing field reads as its zero, as the string-keyed readers' `?? ""` did (hand-written traces).
        let cut = try #require(TraceEntry(line: Array(#"{"kind":"transition","seq":6,"t_ns":12,"from":"Inactive"}"#.utf8)))
        #expect(cut.record == .transition(.init(from: "Inactive", to: "", bestHelper: nil)))
        #expect(TraceEntry(line: Array("not json".utf8)) == nil)
    }

    /// Optional fields read as leniently as the string-keyed readers did: a value of another type is nil.
    @Test func optionalFieldsOfAnotherTypeReadAsNil() throws {
        let entry = try #require(TraceEntry(line: Array(#"{"kind":"response","seq":1,"t_ns":1,"helper":"h","command":2,"result":"success","latency_us":"fast"}"#.utf8)))
        guard case .response(let r) = entry.record else { Issue.record("not a response: \(entry.record)"); return }
        #expect(r.latency_us == nil)
        #expect(r.command == 2)
    }
}

/// docs/TRACE.md's generated table of the kinds is `TraceRecord.kindsTable` (the enum's kinds and their fields).
@Suite struct TraceDocsTests {
    @Test func theKindsTableIsTheEnums() throws {
        let docs = TraceRecordTests.fixtures.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/TRACE.md")
        var text = try String(contentsOf: docs, encoding: .utf8)
        let begin = "<!-- trace-kinds:begin -->\n", end = "<!-- trace-kinds:end -->"
        let lower = try #require(text.range(of: begin)), upper = try #require(text.range(of: end))
        let generated = TraceRecord.kindsTable + "\n"
        if ProcessInfo.processInfo.environment["HOTSPOT_WRITE_DOCS"] == "1" {
            text.replaceSubrange(lower.upperBound..<upper.lowerBound, with: generated)
            try text.write(to: docs, atomically: true, encoding: .utf8)
            return
        }
        #expect(String(text[lower.upperBound..<upper.lowerBound]) == generated,
                "docs/TRACE.md's kinds table differs from TraceRecord: HOTSPOT_WRITE_DOCS=1 swift test --filter TraceDocsTests")
        #expect(TraceRecord.payloadTypes.allSatisfy { text.contains("| `\($0.kind)` |") })
    }
}
