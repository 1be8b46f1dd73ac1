import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Testing

/// The `report` message (docs/PROTOCOL.md): what the SDK refused on the helper's side reaches the trace as
/// `helperReport`, answered with nothing and changing nothing.
@Suite("hotspotd helper reports (embedded)")
struct HelperReportTests {
    static let cafe = HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:00:01")

    @Test("the report message round-trips; any non-empty kind is kept, an empty kind or a negative command is refused")
    func wire() throws {
        let m = HelperMessage.report(kind: .secondDelivery, command: 7, message: "deliver() called a second time")
        #expect(try HelperMessage(json: m.json) == m)
        #expect(m.json["kind"]?.stringValue == "secondDelivery" && m.json["command"]?.intValue == 7)
        #expect(try HelperMessage(json: ["type": "report", "kind": "somethingNewer", "message": "m"])
            == .report(kind: "somethingNewer", command: nil, message: "m"))
        #expect(throws: ProtocolError.self) { try HelperMessage(json: ["type": "report", "kind": "", "message": "m"]) }
        #expect(throws: ProtocolError.self) { try HelperMessage(json: ["type": "report", "kind": "secondDelivery", "command": -1, "message": "m"]) }
        #expect(throws: ProtocolError.self) { try HelperMessage(json: ["type": "report", "kind": "secondDelivery", "command": 1]) }
    }

    @Test("a report is traced as helperReport with the command's type, gets no reply and changes nothing")
    func traced() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let helper = try d.helper("acme")
        try d.join(ctl, Self.cafe)
        let evaluate = try helper.command()
        let id = CommandID(try #require(evaluate["id"]?.intValue))
        let before = try d.status(ctl)["state"]
        helper.send(.report(kind: .secondDelivery, command: id, message: "deliver() called a second time for evaluate command \(id): ignored"))
        #expect(try helper.read().isEmpty, "hotspotd answers nothing to a report")
        let report = try #require(d.records.last { $0["kind"]?.stringValue == "helperReport" })
        #expect(report["helper"]?.stringValue == "acme")
        #expect(report["report"]?.stringValue == "secondDelivery", "the refusal's kind is the record's `report` field")
        #expect(report["command"]?.intValue == Int(id))
        #expect(report["commandType"]?.stringValue == "evaluate")
        #expect(report["message"]?.stringValue?.contains("second time") == true)
        #expect(try d.status(ctl)["state"] == before)
        // The command is still outstanding: the real answer is still taken.
        try helper.answer(evaluate)
        #expect(d.records.contains { $0["kind"]?.stringValue == "response" && $0["command"]?.intValue == Int(id) })
    }

    @Test("a report before register is refused (notRegistered) and not traced as helperReport")
    func beforeRegister() throws {
        let d = EmbeddedDaemon()
        let p = d.connect(.helper)
        p.send(.report(kind: .withdrawnCommand, command: 1, message: "m"))
        #expect(try p.read(type: "error")?["code"]?.stringValue == "notRegistered")
        #expect(!d.records.contains { $0["kind"]?.stringValue == "helperReport" })
    }
}

@Suite("hotspotd helper reports (processes)")
struct HelperReportProcessTests {
    @Test("the Python helper refuses its own second delivery and reports it, as the SDK does", arguments: [HelperKind.python])
    func pythonSecondDelivery(_ kind: HelperKind) throws {
        let d = try DaemonUnderTest(name: "report-\(kind)")
        let h = try d.helper(kind, id: "twice", ["deliver-twice": "yes"])
        try d.join(cafe)
        try d.waitForState(.authenticated)
        try d.control.waitForStatus("the helper's report") { _ in
            d.records("helperReport").contains { $0["helper"]?.stringValue == "twice" && $0["report"]?.stringValue == "secondDelivery" }
        }
        #expect(h.output.contains("second deliver() returned False"))
        #expect(!d.records("rejected").contains { $0["reason"]?.stringValue == "duplicateResponse" }, "the second delivery sent no response")
    }
}
