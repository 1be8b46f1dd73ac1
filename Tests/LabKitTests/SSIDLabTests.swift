import Foundation
import HotspotCore
import HotspotProtocol
import Testing
@testable import LabKit
@testable import LabCertify
@testable import LabReplay
@testable import LabReports
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabServices
@testable import LabTopology

/// Issue 17: a topology declares an SSID that is not UTF-8 (`ssid_hex:`), hostapd and wpa_supplicant get its
/// bytes, and every line the lab prints (summary, timeline, scan list, certify report) shows a hostile SSID escaped.
@Suite("SSIDs in the lab: topology, daemons' configuration, output")
struct SSIDLabTests {
    static func topology(_ ssidLine: String, known: String = "ssid_hex: 436166e9") -> String {
        """
        name: latin1
        hotspots:
          - name: cafe
            \(ssidLine)
            bssid: "02:00:00:00:05:00"
            channel: 1
            gateway:
              subnet: 198.51.100.0/24
              dhcp-range: [198.51.100.10, 198.51.100.200]
        stations:
          - name: phone
            known-networks:
              - \(known)
        """
    }

    @Test("ssid_hex declares the bytes; the station's known network matches the hotspot by bytes")
    func topologySSIDHex() throws {
        let t = try TopologyParser.parse(Self.topology("ssid_hex: 436166E9"), file: "t.yaml")
        #expect(t.hotspots[0].rawSSID.bytes == [0x43, 0x61, 0x66, 0xE9])
        #expect(t.hotspots[0].ssid == "Caf\u{FFFD}")
        #expect(t.stations[0].knownNetworks[0].rawSSID == t.hotspots[0].rawSSID)
        let plain = try TopologyParser.parse(Self.topology("ssid: Café", known: "ssid: Café"), file: "t.yaml")
        #expect(plain.hotspots[0].rawSSID == SSID("Café"))
    }

    @Test("bad SSIDs fail with file:line:column and what was expected (golden)", arguments: [
        ("ssid_hex: 43616", "t.yaml:4:15: hotspots[0].ssid_hex: expected the SSID's bytes as hex digits, two a byte (e.g. 436166e9 for Caf\\xe9), found `43616`"),
        ("ssid_hex: 43zz", "t.yaml:4:15: hotspots[0].ssid_hex: expected the SSID's bytes as hex digits, two a byte (e.g. 436166e9 for Caf\\xe9), found `43zz`"),
        ("ssid_hex: " + String(repeating: "41", count: 33), "t.yaml:4:15: hotspots[0].ssid_hex: expected an SSID of 1 to 32 bytes, found 33"),
        ("ssid: Cafe\n    ssid_hex: 436166e9", "t.yaml:5:15: hotspots[0].ssid_hex: expected `ssid` or `ssid_hex`, not both"),
        ("hidden: false", "t.yaml:3:5: hotspots[0]: missing key `ssid`"),
        ("ssid: " + String(repeating: "é", count: 17), "t.yaml:4:11: hotspots[0].ssid: expected an SSID of at most 32 bytes, found 34"),
    ])
    func topologyErrors(_ line: String, _ expected: String) {
        do {
            _ = try TopologyParser.parse(Self.topology(line), file: "t.yaml")
            Issue.record("accepted: \(line)")
        } catch {
            #expect("\(error)" == expected)
        }
    }

    @Test("hostapd gets the bytes as ssid2 hex, utf8_ssid=0 for bytes that are not UTF-8 (golden)")
    func hostapd() throws {
        let t = try TopologyParser.parse(Self.topology("ssid_hex: 436166e9"), file: "t.yaml")
        let text = HostapdConfig.render(t.hotspots[0], interface: "wlan0", controlDirectory: "/c")
        #expect(text.contains("\nssid2=436166e9\nutf8_ssid=0\n"))
        let hostile = try TopologyParser.parse(Self.topology(#"ssid: "a\nb\"c""#, known: "ssid: x"), file: "t.yaml")
        #expect(HostapdConfig.render(hostile.hotspots[0], interface: "w", controlDirectory: "/c").contains("\nssid2=610a622263\nutf8_ssid=1\n"))
    }

    @Test("wpa_supplicant.conf: ssid as hex for bytes that are not plain text, quoted otherwise (golden)")
    func wpaSupplicant() throws {
        let t = try TopologyParser.parse(Self.topology("ssid_hex: 436166e9"), file: "t.yaml")
        let conf = try WPASupplicantConfig.render(t.stations[0], topology: t, controlDirectory: "/c", labLogDirectory: "/l")
        #expect(conf.contains("network={\n    ssid=436166e9\n    scan_ssid=0\n"), "\(conf)")
        let plain = try TopologyParser.parse(Self.topology("ssid: Cafe", known: "ssid: Cafe"), file: "t.yaml")
        #expect(try WPASupplicantConfig.render(plain.stations[0], topology: plain, controlDirectory: "/c", labLogDirectory: "/l")
                    .contains("    ssid=\"Cafe\"\n"))
    }

    @Test("join: {ssid_hex: ...} joins by bytes; join: text as before; both with file:line:col errors")
    func joinStep() throws {
        let scenario = try ScenarioParser.parse("""
            topology: latin1.yaml
            steps:
              - join: {ssid_hex: 436166e9}
              - join: Cafe Lumiere
            """, file: "s.yaml")
        let hex = try #require(scenario.steps[0].action as? JoinStep)
        #expect(hex.ssid.bytes == [0x43, 0x61, 0x66, 0xE9])
        #expect((scenario.steps[1].action as? JoinStep)?.ssid == "Cafe Lumiere")
        do {
            _ = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - join: {ssid_hex: zz}\n", file: "s.yaml")
            Issue.record("bad hex accepted")
        } catch {
            #expect("\(error)".hasPrefix("s.yaml:3:22: "), "\(error)")
        }
    }

    @Test("the timeline prints hostile and non-UTF-8 SSIDs escaped, plain ones as before (golden)")
    func timeline() {
        let hostile: JSON = ["ssid": "Evil\n\u{1B}[2J\"x"]
        let latin: JSON = ["ssid": "Caf\u{FFFD}", "ssid_hex": "436166e9"]
        let records: [JSON] = [
            ["kind": "event", "t_ns": 0, "event": "associated", "detail": ["network": ["ssid": "Cafe Lumiere", "bssid": "02:00:00:00:01:00"]]],
            ["kind": "event", "t_ns": 1e9, "event": "associated", "detail": ["network": .object(hostile.objectValue!.merging(["bssid": "02:00:00:00:01:00"]) { $1 })]],
            ["kind": "command", "t_ns": 2e9, "commandType": "evaluate", "helper": "h", "network": latin],
            ["kind": "station", "t_ns": 3e9, "action": "join", "ssid": "Caf\u{FFFD}", "ssid_hex": "436166e9", "passwordFrom": "none"],
            ["kind": "cache", "t_ns": 4e9, "action": "store", "network": hostile, "helper": "h"],
        ]
        let lines = Timeline.render(Timeline.build(records))
        #expect(lines == [
            "   0.000 s  associated with Cafe Lumiere 02:00:00:00:01:00 (joined by the user)",
            #"   1.000 s  associated with "Evil\n\u{1b}[2J\"x" 02:00:00:00:01:00 (joined by the user)"#,
            #"   2.000 s  → evaluate to h ["Caf\xe9"]"#,
            #"   3.000 s  user joins "Caf\xe9" (password from none)"#,
            #"   4.000 s  cache "Evil\n\u{1b}[2J\"x": h"#,
        ])
        #expect(lines.allSatisfy { !$0.contains("\n") && !$0.contains("\u{1B}") })
    }

    @Test("a replay writes join steps by bytes when the SSID is not plain text: the scenario YAML stays valid (golden)")
    func replayJoin() throws {
        #expect(ScenarioParser.stepText(Replay.joinStep(SSID(wire: ["type": "join", "ssid": "Cafe Lumiere"]))) == "join: Cafe Lumiere")
        #expect(ScenarioParser.stepText(Replay.joinStep(SSID(wire: ["ssid": "Caf\u{FFFD}", "ssid_hex": "436166e9"]))) == "join: {ssid_hex: 436166e9}")
        #expect(ScenarioParser.stepText(Replay.joinStep(SSID(wire: ["ssid": "a\nb: c"]))) == "join: {ssid_hex: 610a623a2063}")
        let scenario = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - " + ScenarioParser.stepText(Replay.joinStep(SSID("a\nb: c"))) + "\n", file: "s.yaml")
        #expect((scenario.steps[0].action as? JoinStep)?.ssid == SSID("a\nb: c"))
    }

    @Test("the scan list as a person sees it escapes SSIDs (golden)")
    func scanList() throws {
        let entries: [JSON] = [["ssid": "Cafe", "security": "open"], ["ssid": "a\nb", "security": "wpa2-psk", "annotation": "x"],
                               ["ssid": "Caf\u{FFFD}", "ssid_hex": "436166e9", "security": "open"]]
        let lines = ShowScanListStep.render(scanList: try entries.map { try JSONCoding.decode(TraceScanListEntry.self, from: $0) })
        #expect(lines == ["   Cafe", "🔒 \"a\\nb\"  — x", "   \"Caf\\xe9\""])
    }

    @Test("the certify reports (text and HTML) print a hostile SSID escaped, never raw (golden)")
    func certifyReports() throws {
        let evil = "Evil\n\u{1B}[2J<script>alert(1)</script>"
        var records: [JSON] = []
        func add(_ kind: String, _ fields: [String: JSON]) {
            var o = fields
            o["kind"] = .string(kind)
            o["seq"] = .number(Double(records.count + 1))
            records.append(.object(o))
        }
        add("command", ["id": 100, "commandType": "filterScanList", "helper": "acme",
                        "networkList": [["ssid": "Cafe Lumiere", "security": "open"], ["ssid": .string(evil), "security": "wpa2-psk"]]])
        add("response", ["command": 100, "commandType": "filterScanList", "helper": "acme", "result": "success",
                         "networkList": [["ssid": "Cafe Lumiere"], ["ssid": .string(evil)]]])
        for (id, ssid, confidence) in [(101, "Public Library", 1), (102, "Airport Lounge", 0)] {
            add("command", ["id": .number(Double(id)), "commandType": "evaluate", "helper": "acme", "network": ["ssid": .string(ssid)]])
            add("response", ["command": .number(Double(id)), "commandType": "evaluate", "helper": "acme", "result": "success",
                             "network": ["ssid": .string(ssid), "confidence": .number(Double(confidence))]])
        }
        let runs = [CertificationRunRecord(run: .scan, records: records, notes: [], logDirectory: "/logs", traceFile: nil, duration: 1, error: nil, gate: [:])]
        let judge = Judge(runs: runs, home: "Cafe Lumiere", notCaptive: "Public Library", decoys: ["Airport Lounge", evil], timeScale: 0.25)
        let report = judge.report(helpers: ["acme"], checks: CertificationCheck.all.filter { $0.runs == [.scan] })
        let cause = try #require(report.causes.first)
        #expect(cause.reason == #"filterScanList claimed the secure network "Evil\n\u{1b}[2J<script>alert(1)</script>" without a password"#)
        let text = CertifyReports.text(report)
        #expect(text.contains { $0.hasPrefix("CAUSE [scan] seq 2, check scan-list-passwords: filterScanList claimed the secure network \"Evil\\n\\u{1b}[2J<script>") })
        #expect(text.allSatisfy { !$0.contains("\n") && !$0.contains("\u{1B}") }, "\(text)")
        let html = CertifyReports.html(report)
        #expect(!html.contains("\u{1B}") && !html.contains("<script>alert"))
        #expect(html.contains(#"the secure network &quot;Evil\n\u{1b}[2J&lt;script&gt;alert(1)&lt;/script&gt;&quot; without a password"#))
    }
}
