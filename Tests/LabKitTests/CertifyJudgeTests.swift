import Foundation
import HotspotProtocol
import HotspotSystem
import Testing
@testable import LabKit
@testable import LabCertify
@testable import LabReports

/// The certify judge on synthetic traces (no lab): cause first, "not reached" downstream, the SDK's reports
/// (docs/CERTIFY.md). The same judge runs on real traces in `NativeCertifyRootTests` and `InVMCertifyTests`.
@Suite("certify judge: cause first")
struct CertifyJudgeTests {
    /// Builds one run's trace as hotspotd writes it (seq in order).
    final class Trace {
        var records: [JSON] = []
        var nextCommand = 1
        func add(_ kind: String, _ fields: [String: JSON]) {
            var o = fields
            o["kind"] = .string(kind)
            o["seq"] = .number(Double(records.count + 1))
            records.append(.object(o))
        }
        func transition(_ from: String, _ to: String) { add("transition", ["from": .string(from), "to": .string(to)]) }
        func mark(_ what: String, _ fields: [String: JSON] = [:]) {
            var action = fields
            action["certify"] = .string(what)
            add("labAction", ["action": .object(action)])
        }
        func gate(_ label: String, _ held: Bool) { mark(RunDriver.gateMark, ["label": .string(label), "authenticated": .bool(held)]) }
        /// A command on the café and its answer; returns the command id.
        @discardableResult
        func answer(_ type: String, _ result: String, didJustJoin: Bool = false, ssid: String = "Cafe Lumiere") -> Int {
            let id = nextCommand
            nextCommand += 1
            let network: JSON = ["ssid": .string(ssid), "didJustJoin": .bool(didJustJoin)]
            add("command", ["id": .number(Double(id)), "commandType": .string(type), "helper": "acme", "network": network])
            add("response", ["command": .number(Double(id)), "commandType": .string(type), "helper": "acme", "result": .string(result)])
            return id
        }
    }

    /// The scan run as the reference helper plays it: claims nothing, low for the library, none for a decoy.
    static func goodScan() -> Trace {
        let t = Trace()
        t.add("command", ["id": 100, "commandType": "filterScanList", "helper": "acme",
                          "networkList": [["ssid": "Cafe Lumiere", "security": "open"], ["ssid": "Bank Secure", "security": "wpa2-psk"]]])
        t.add("response", ["command": 100, "commandType": "filterScanList", "helper": "acme", "result": "success",
                           "networkList": [["ssid": "Cafe Lumiere"]]])
        for (id, ssid, confidence) in [(101, "Public Library", 1), (102, "Airport Lounge", 0)] {
            t.add("command", ["id": .number(Double(id)), "commandType": "evaluate", "helper": "acme", "network": ["ssid": .string(ssid)]])
            t.add("response", ["command": .number(Double(id)), "commandType": "evaluate", "helper": "acme", "result": "success",
                               "network": ["ssid": .string(ssid), "confidence": .number(Double(confidence))]])
        }
        return t
    }

    /// Judges `trace` as run `run` (with the reference scan run beside it), on every check that reads only these runs.
    static func judge(_ trace: Trace, run: CertificationRun = .captive, gate: [String: Bool] = [:]) throws -> CertificationReport {
        var runs = [CertificationRunRecord(run: run, records: trace.records, notes: [], logDirectory: "/logs", traceFile: nil,
                                           duration: 1, error: nil, gate: gate)]
        if run != .scan {
            runs.insert(CertificationRunRecord(run: .scan, records: goodScan().records, notes: [], logDirectory: "/logs", traceFile: nil,
                                               duration: 1, error: nil, gate: [:]), at: 0)
        }
        let judge = Judge(runs: runs, home: "Cafe Lumiere", notCaptive: "Public Library", decoys: ["Airport Lounge", "Bank Secure"], timeScale: 0.25)
        let checks = CertificationCheck.all.filter { check in check.runs.allSatisfy { $0 == run || $0 == .scan } && check.runs.contains(run) }
        return judge.report(helpers: ["acme"], checks: checks)
    }

    static func result(_ report: CertificationReport, _ id: String) throws -> CheckResult {
        try #require(report.results.first { $0.check.id == id })
    }

    /// The captive run as the reference helper plays it.
    static func goodCaptive(signOutAfterLogin: Bool = false, fromMemory: Bool = false, secondDelivery: Bool = false,
                            maintainCrossesTheEnd: Bool = false, maintainInsideTheEnding: Bool = false) -> Trace {
        let t = Trace()
        t.transition("Inactive", "Evaluating")
        t.answer("evaluate", "success")
        t.transition("Evaluating", "Authenticating")
        t.answer("authenticate", "success")
        if secondDelivery {
            t.add("helperReport", ["helper": "acme", "report": "secondDelivery", "command": 2,
                                   "message": "deliver() called a second time for authenticate command 2: ignored"])
        }
        t.transition("Authenticating", "Authenticated")
        t.gate("afterSignIn", !signOutAfterLogin)
        t.transition("Authenticated", "Maintaining")
        t.answer("maintain", signOutAfterLogin ? "authenticationRequired" : "success")
        if signOutAfterLogin {
            // The helper signed out on its own: the run goes round again and the driver stops.
            t.transition("Maintaining", "Authenticating")
            return t
        }
        t.transition("Maintaining", "Authenticated")
        t.gate("afterMaintain", true)
        if maintainCrossesTheEnd || maintainInsideTheEnding {
            // A maintain in flight while the lab ends the session; the flush cuts its probe: failure. Crossing: the
            // timer fired just before the lab's marks and the failure is recorded after both. Inside: the lab marks
            // that it is ending the session, flushes, and marks the end; the failure is recorded between the two marks.
            t.transition("Authenticated", "Maintaining")
            let id = t.nextCommand
            t.nextCommand += 1
            t.add("command", ["id": .number(Double(id)), "commandType": "maintain", "helper": "acme",
                              "network": ["ssid": "Cafe Lumiere", "didJustJoin": false]])
            t.mark(RunDriver.sessionEndingMark)
            if maintainCrossesTheEnd { t.mark(RunDriver.sessionEndedMark) }
            t.add("response", ["command": .number(Double(id)), "commandType": "maintain", "helper": "acme", "result": "failure"])
            if maintainInsideTheEnding { t.mark(RunDriver.sessionEndedMark) }
            t.transition("Maintaining", "Evaluating")
            t.answer("evaluate", "success")
            t.transition("Evaluating", "Authenticating")
            t.answer("authenticate", "success")
            t.transition("Authenticating", "Authenticated")
        } else {
            t.mark(RunDriver.sessionEndingMark)
            t.mark(RunDriver.sessionEndedMark)
        }
        t.transition("Authenticated", "Maintaining")
        t.answer("maintain", fromMemory ? "success" : "authenticationRequired")
        if !fromMemory {
            t.transition("Maintaining", "Authenticating")
            t.answer("authenticate", "success")
        }
        t.transition(fromMemory ? "Maintaining" : "Authenticating", "Authenticated")
        t.gate("beforeLogoff", !fromMemory)
        t.answer("logoff", "success")
        t.transition("Authenticated", "Inactive")
        t.gate("afterLogoff", false)
        t.transition("Inactive", "Maintaining")
        t.answer("maintain", fromMemory ? "success" : "authenticationRequired", didJustJoin: true)
        if !fromMemory {
            t.answer("authenticate", "success")
        }
        return t
    }

    static func gate(_ t: Trace) -> [String: Bool] {
        var gate: [String: Bool] = [:]
        for r in t.records where r["action"]?["certify"]?.stringValue == RunDriver.gateMark {
            gate[r["action"]?["label"]?.stringValue ?? ""] = r["action"]?["authenticated"]?.boolValue
        }
        return gate
    }

    @Test("the reference helper's captive run: every captive check passes, no cause")
    func referencePasses() throws {
        let t = Self.goodCaptive()
        let report = try Self.judge(t, gate: Self.gate(t))
        #expect(report.causes.isEmpty, "\(report.causes)")
        for r in report.results { #expect(r.passed, "\(r.check.id): \(r.reason)") }
        #expect(report.passed)
    }

    /// A maintain cut by the session flush: answered after both of the lab's marks (crossing), or between them (inside).
    @Test("a maintain cut by the lab's session flush (answered after its end, or between its two marks) is not judged; the next one is",
          arguments: [false, true])
    func maintainCutByTheFlush(inside: Bool) throws {
        let t = Self.goodCaptive(maintainCrossesTheEnd: !inside, maintainInsideTheEnding: inside)
        let report = try Self.judge(t, gate: Self.gate(t))
        #expect(report.causes.isEmpty, "\(report.causes)")
        #expect(try Self.result(report, "maintain").passed)
        // Answered from memory after the end (sent after it): still a failure of maintain.
        let memory = Self.goodCaptive(fromMemory: true, maintainCrossesTheEnd: !inside, maintainInsideTheEnding: inside)
        let judged = try Self.judge(memory, gate: Self.gate(memory))
        #expect(!(try Self.result(judged, "maintain")).passed)
    }

    /// CI run 19: the lab's flush was slow; a maintain inside it answered authenticationRequired, the helper signed in
    /// again, and only then came the "ended" mark. The lab's reading of the gate after the mark settles the session.
    static func signedInDuringTheFlush(gateAfter held: Bool) -> Trace {
        let t = Trace()
        t.transition("Inactive", "Evaluating")
        t.answer("evaluate", "success")
        t.transition("Evaluating", "Authenticating")
        t.answer("authenticate", "success")
        t.transition("Authenticating", "Authenticated")
        t.gate("afterSignIn", true)
        t.transition("Authenticated", "Maintaining")
        t.answer("maintain", "success")
        t.transition("Maintaining", "Authenticated")
        t.gate("afterMaintain", true)
        t.mark(RunDriver.sessionEndingMark)
        t.transition("Authenticated", "Maintaining")
        t.answer("maintain", "authenticationRequired")
        t.transition("Maintaining", "Authenticating")
        t.answer("authenticate", "success")
        t.transition("Authenticating", "Authenticated")
        t.mark(RunDriver.sessionEndedMark)
        t.gate("afterSessionEnd", held)
        t.transition("Authenticated", "Maintaining")
        t.answer("maintain", "success")
        t.transition("Maintaining", "Authenticated")
        t.gate("beforeLogoff", true)
        t.answer("logoff", "success")
        t.transition("Authenticated", "Inactive")
        t.gate("afterLogoff", false)
        t.transition("Inactive", "Maintaining")
        t.answer("maintain", "authenticationRequired", didJustJoin: true)
        t.answer("authenticate", "success")
        return t
    }

    @Test("a sign-in during the lab's slow session flush: the gate read after the flush says the session is up, so the next maintain's success is right (CI run 19)")
    func signInDuringTheFlush() throws {
        let t = Self.signedInDuringTheFlush(gateAfter: true)
        let report = try Self.judge(t, gate: Self.gate(t))
        #expect(report.causes.isEmpty, "\(report.causes)")
        for r in report.results { #expect(r.passed, "\(r.check.id): \(r.reason)") }
    }

    @Test("the control: the same run with the gate read empty after the flush: the next maintain's success is from memory")
    func signInBeforeTheFlushFinished() throws {
        let t = Self.signedInDuringTheFlush(gateAfter: false)
        let report = try Self.judge(t, gate: Self.gate(t))
        let maintain = try Self.result(report, "maintain")
        #expect(!maintain.passed && maintain.reason.contains("from memory"), "\(maintain.reason)")
        #expect(report.causes.first?.check == "maintain", "\(report.causes)")
    }

    @Test("the control: a maintain failure answered before the lab began to end the session is the helper's")
    func maintainFailureBeforeTheFlush() throws {
        let early = Trace()
        early.answer("authenticate", "success")
        early.gate("afterSignIn", true)
        early.answer("maintain", "failure")
        early.mark(RunDriver.sessionEndingMark)
        early.mark(RunDriver.sessionEndedMark)
        let judged = try Self.judge(early, gate: Self.gate(early))
        let maintain = try Self.result(judged, "maintain")
        #expect(!maintain.passed && judged.causes.first?.check == "maintain", "\(judged.causes)")
        #expect(judged.causes.first?.reason.contains("while the portal session was up") == true, "\(judged.causes)")
    }

    @Test("a helper that answers maintain from memory fails maintain at the answer after the session ended; logoff and reauthenticate are only not reached")
    func fromMemory() throws {
        let t = Self.goodCaptive(fromMemory: true)
        let report = try Self.judge(t, gate: Self.gate(t))
        let maintain = try Self.result(report, "maintain")
        #expect(!maintain.passed && !maintain.notReached)
        #expect(maintain.reason.contains("answered success") && maintain.reason.contains("from memory"), "\(maintain.reason)")
        let ended = try #require(t.records.first { $0["action"]?["certify"]?.stringValue == RunDriver.sessionEndedMark })
        #expect(maintain.reason.contains("ended at seq \(ended["seq"]?.intValue ?? -1)"), "names the lab's action: \(maintain.reason)")
        #expect(maintain.evidence.first?.contains("\"commandType\":\"maintain\"") == true)
        for id in ["logoff", "reauthenticate"] {
            let r = try Self.result(report, id)
            #expect(!r.passed && r.notReached, "\(id): \(r.reason)")
            #expect(r.reason.hasPrefix("not reached") && r.reason.contains("cause: maintain"), "\(id): \(r.reason)")
        }
        #expect(report.causes.first?.check == "maintain")
        #expect(!report.passed, "not reached still fails the run")
    }

    @Test("a helper that signs out right after signing in fails logoff with the gate observation as the cause; maintain is not reached")
    func signsOutAfterLogin() throws {
        let t = Self.goodCaptive(signOutAfterLogin: true)
        let report = try Self.judge(t, gate: Self.gate(t))
        let logoff = try Self.result(report, "logoff")
        #expect(!logoff.passed && !logoff.notReached)
        #expect(logoff.reason.contains("no logoff command") && logoff.reason.contains("on its own"), "\(logoff.reason)")
        #expect(logoff.evidence.first?.contains("afterSignIn") == true)
        let maintain = try Self.result(report, "maintain")
        #expect(maintain.notReached, "\(maintain.reason)")
        #expect(report.causes.map(\.check) == ["logoff"])
    }

    @Test("a second deliver() refused by the SDK (helperReport) fails one-response with the report as evidence")
    func secondDelivery() throws {
        let t = Self.goodCaptive(secondDelivery: true)
        let report = try Self.judge(t, gate: Self.gate(t))
        let one = try Self.result(report, "one-response")
        #expect(!one.passed && !one.notReached)
        #expect(one.evidence.first?.contains("\"report\":\"secondDelivery\"") == true, "\(one.evidence)")
        #expect(one.reason.contains("secondDelivery"))
        // Nothing else fails: the run went on as the reference helper's.
        #expect(report.results.filter { !$0.passed }.map(\.check.id) == ["one-response"])
    }

    @Test("the re-join's maintain answered failure after logoff fails maintain, naming didJustJoin and the ended session")
    func failJustJoined() throws {
        let t = Self.goodCaptive()
        // The last maintain (didJustJoin) answered failure instead of authenticationRequired; no login follows.
        let last = try #require(t.records.lastIndex { $0["kind"]?.stringValue == "response" && $0["commandType"]?.stringValue == "maintain" })
        var o = t.records[last].objectValue ?? [:]
        o["result"] = "failure"
        t.records[last] = .object(o)
        t.records.removeLast(2)
        let report = try Self.judge(t, gate: Self.gate(t))
        let maintain = try Self.result(report, "maintain")
        #expect(!maintain.passed && !maintain.notReached)
        #expect(maintain.reason.contains("maintain with didJustJoin answered failure") && maintain.reason.contains("session had ended"), "\(maintain.reason)")
        #expect(Self.failing(report) == ["maintain"])
    }

    @Test("a report of an answer to a withdrawn command is shown, not failed (the cancel can cross the answer)")
    func withdrawnIsNotFailed() throws {
        let t = Self.goodCaptive()
        t.add("helperReport", ["helper": "acme", "report": "withdrawnCommand", "command": 1, "message": "m"])
        let report = try Self.judge(t, gate: Self.gate(t))
        #expect(try Self.result(report, "one-response").passed)
    }

    @Test("an answer hotspotd found invalid belongs to valid-results, not to the command's check")
    func invalidResultOwnedByValidResults() throws {
        let t = Trace()
        t.answer("authenticate", "success")
        t.gate("afterSignIn", true)
        let id = t.answer("maintain", "uiRequired")
        t.add("irregular", ["irregularity": "invalidResult", "command": .number(Double(id)), "commandType": "maintain", "result": "uiRequired"])
        let report = try Self.judge(t, gate: Self.gate(t))
        #expect(report.causes.first?.check == "valid-results")
        #expect(!(try Self.result(report, "valid-results")).notReached)
        #expect(try Self.result(report, "maintain").notReached)
    }

    @Test("the changed portal: authenticate answering failure fails unsupported-network, naming the portal change")
    func changedPortal() throws {
        let t = Trace()
        t.answer("authenticate", "success")
        t.gate("afterSignIn", true)
        t.mark(RunDriver.portalMark, ["kind": "voucher"])
        t.mark(RunDriver.sessionEndedMark)
        t.answer("maintain", "authenticationRequired", didJustJoin: true)
        t.answer("authenticate", "failure")
        let report = try Self.judge(t, run: .changedPortal)
        let r = try Self.result(report, "unsupported-network")
        #expect(!r.passed && !r.notReached)
        #expect(r.reason.contains("expected unsupportedNetwork") && r.reason.contains("voucher portal"), "\(r.reason)")
    }

    @Test("the reports: the cause on top of the text, JUnit counts not reached as a failure, the HTML wraps and folds")
    func reports() throws {
        let t = Self.goodCaptive(fromMemory: true)
        let report = try Self.judge(t, gate: Self.gate(t))
        let text = CertifyReports.text(report)
        #expect(text.first?.hasPrefix("CAUSE [captive] seq") == true, "\(text.first ?? "")")
        let junit = CertifyReports.junit(report)
        #expect(junit.contains("type=\"notReached\""))
        #expect(junit.contains("failures=\"\(report.results.filter { !$0.passed }.count)\""))
        let html = CertifyReports.html(report)
        #expect(html.contains("id=\"cause\"") && html.contains("<details class=\"evidence\""))
        #expect(html.contains("table-layout: fixed"))
        #expect(html.contains("<svg class=\"diagram\""))
        let json = try JSON.parse(Array(CertifyReports.json(report).utf8))
        #expect(json["causes"]?.arrayValue?.first?["check"]?.stringValue == "maintain")
        #expect(json["checks"]?.arrayValue?.contains { $0["verdict"]?.stringValue == "not reached" } == true)
        // The helper failed on runs the lab performed: a verdict, not "run again".
        #expect(json["noVerdict"]?.boolValue == false && json["certified"]?.boolValue == false)
        #expect(html.contains("<span class=\"verdict fail\">NOT CERTIFIED</span>"))
    }

    @Test("JUnit: a failed check that reads a run the lab failed twice is an <error> (no verdict), one on runs the lab performed a <failure>")
    func junitNoVerdict() throws {
        // A scan run that answers high for every network (fails not-high-for-everything, which reads scan) and a
        // captive run whose maintain deviates (fails checks that read captive).
        let t = Self.goodCaptive(fromMemory: true)
        let runs = [
            CertificationRunRecord(run: .scan, records: Self.scan(claims: [["ssid": "Cafe Lumiere"]], library: 2, decoy: 2).records, notes: [],
                                   logDirectory: "/logs", traceFile: nil, duration: 1, error: nil, gate: [:]),
            CertificationRunRecord(run: .captive, records: t.records, notes: [], logDirectory: "/logs", traceFile: nil, duration: 1,
                                   error: nil, gate: Self.gate(t)),
        ]
        let judge = Judge(runs: runs, home: "Cafe Lumiere", notCaptive: "Public Library", decoys: ["Airport Lounge", "Bank Secure"], timeScale: 0.25)
        var report = judge.report(helpers: ["acme"], checks: CertificationCheck.all.filter { $0.runs.allSatisfy { [.scan, .captive].contains($0) } })
        let failed = report.results.filter { !$0.passed }
        let readScan = failed.filter { $0.check.runs.contains(.scan) }.count
        #expect(failed.count > readScan && readScan > 0, "both kinds of failed check: \(failed.map(\.check.id))")
        // The control: the lab performed every run, so every failed check is the helper's.
        #expect(CertifyReports.junit(report).contains("tests=\"\(report.results.count)\" failures=\"\(failed.count)\" errors=\"0\""))
        // The lab failed the scan run twice: the checks that read it have no verdict; the others keep theirs.
        let scan = try #require(report.runs.firstIndex { $0.run == .scan })
        report.runs[scan].labNotBuilt = true
        report.runs[scan].error = "the lab could not be built: create the lab's log folder /logs: Not a directory (ENOTDIR)"
        let junit = CertifyReports.junit(report)
        #expect(junit.contains("failures=\"\(failed.count - readScan)\" errors=\"\(readScan)\""), "\(junit.prefix(400))")
        #expect(junit.components(separatedBy: "<error message=\"no verdict: the lab failed run scan (the lab could not be built: ").count == readScan + 1)
        #expect(junit.components(separatedBy: "<failure message=").count == failed.count - readScan + 1)
        #expect(!report.noVerdict, "a failed check on a run the lab performed keeps the verdict")
    }

    /// A scan run whose filterScanList and evaluate answers are given.
    static func scan(claims: [JSON], library: Int, decoy: Int) -> Trace {
        let t = Trace()
        t.add("command", ["id": 100, "commandType": "filterScanList", "helper": "acme",
                          "networkList": [["ssid": "Cafe Lumiere", "security": "open"], ["ssid": "Airport Lounge", "security": "open"],
                                          ["ssid": "Bank Secure", "security": "wpa2-psk"]]])
        t.add("response", ["command": 100, "commandType": "filterScanList", "helper": "acme", "result": "success", "networkList": .array(claims)])
        for (id, ssid, confidence) in [(101, "Public Library", library), (102, "Airport Lounge", decoy)] {
            t.add("command", ["id": .number(Double(id)), "commandType": "evaluate", "helper": "acme", "network": ["ssid": .string(ssid)]])
            t.add("response", ["command": .number(Double(id)), "commandType": "evaluate", "helper": "acme", "result": "success",
                               "network": ["ssid": .string(ssid), "confidence": .number(Double(confidence))]])
        }
        return t
    }

    static func failing(_ report: CertificationReport) -> [String] { report.results.filter { !$0.passed }.map(\.check.id) }

    @Test("scan run: each defect fails exactly its own check (no-passwords, claim-decoys, high-everything)")
    func scanDefectsFailOneCheck() throws {
        let cafe: JSON = ["ssid": "Cafe Lumiere"]
        // Secure networks claimed without a password: hotspotd ignores those claims, so it is not a decoy claim.
        let bare = try Self.judge(Self.scan(claims: [cafe, ["ssid": "Bank Secure"]], library: 1, decoy: 0), run: .scan)
        #expect(Self.failing(bare) == ["scan-list-passwords"], "\(bare.results.map { "\($0.check.id): \($0.reason)" })")
        #expect(try Self.result(bare, "scan-list-passwords").reason.contains("Bank Secure"))
        let decoys = try Self.judge(Self.scan(claims: [cafe, ["ssid": "Bank Secure", "password": "guessed"], ["ssid": "Airport Lounge"]], library: 1, decoy: 0), run: .scan)
        #expect(Self.failing(decoys) == ["decoys"])
        let high = try Self.judge(Self.scan(claims: [cafe], library: 2, decoy: 2), run: .scan)
        #expect(Self.failing(high) == ["not-high-for-everything"], "\(high.results.map { "\($0.check.id): \($0.reason)" })")
        let reference = try Self.judge(Self.scan(claims: [cafe], library: 1, decoy: 0), run: .scan)
        #expect(Self.failing(reference).isEmpty)
    }

    @Test("the scan list note is drawn without emoji")
    func scanListText() {
        let lines = RunDriver.render(scanList: [
            TraceScanListEntry(network: TraceNetwork(ssid: TraceSSID(text: "Bank Secure"), security: "wpa2-psk"), annotation: "Acme", claimedBy: nil),
            TraceScanListEntry(network: TraceNetwork(ssid: TraceSSID(text: "Cafe")), annotation: nil, claimedBy: nil),
        ])
        #expect(lines == ["Bank Secure [wpa2-psk] (Acme)", "Cafe"])
        #expect(lines.joined().unicodeScalars.allSatisfy { $0.value < 0x2000 })
    }
}

/// The order certify starts its runs in (longest first) against the order it reports them in (declaration order).
/// No lab: every lab's build is refused before it starts (`beforeLabUp`), so each run is tried twice and ends as a lab
/// fault at once.
@Suite("certify: runs started longest first, reported in run order")
struct CertifyStartOrderTests {
    @Test func startOrderIsEveryRunOnce() {
        #expect(CertificationRun.startOrder.count == CertificationRun.allCases.count)
        #expect(Set(CertificationRun.startOrder) == Set(CertificationRun.allCases))
        #expect(Array(CertificationRun.startOrder.prefix(2)) == [.captive, .ipv6Only], "the two longest start first")
    }

    @Test func startedInStartOrderRecordedInRunOrder() throws {
        let certifier = try Certifier(topologyPath: "topologies/certify.yaml", helpers: ["hotspot-helper-portal"])
        let started = Locked<[CertificationRun]>([])
        certifier.beforeLabUp = { run, attempt in
            if attempt == 1 { started.withLock { $0.append(run) } }
            throw SystemError("build the lab", run.rawValue, reason: "refused by the test")
        }
        let report = certifier.run()
        #expect(started.withLock { $0 } == CertificationRun.startOrder)
        #expect(report.runs.map(\.run) == CertificationRun.allCases)
        #expect(report.runs.allSatisfy { ($0.error ?? "").contains("refused by the test") })
    }
}

/// Which networks each run's lab brings up: every network for the runs whose traces feed the checks of the scan list,
/// the decoys and the protocol as a whole; the café alone for the runs that feed one check each about the café.
@Suite("certify: each run's networks")
struct CertifyRunNetworksTests {
    @Test func onlyScanAndCaptiveNeedEveryNetwork() throws {
        #expect(CertificationRun.allCases.filter(\.needsEveryNetwork) == [.scan, .captive])
        // A run that reads another network than the café must bring it up: every check that reads a run without
        // every network reads that run alone.
        for check in CertifyChecks.all where check.runs.contains(where: { !$0.needsEveryNetwork }) {
            #expect(check.runs.count == 1, "\(check.id) reads \(check.runs) and one of them has the café alone")
        }
    }

    @Test func homeOnlyKeepsTheCafeAndItsKnownNetwork() throws {
        let topology = try TopologyParser.load(path: "topologies/certify.yaml")
        #expect(topology.hotspots.count == 4)
        let cafe = try Certifier.homeOnly(topology, home: "Cafe Lumiere")
        #expect(cafe.hotspots.map(\.ssid) == ["Cafe Lumiere"])
        #expect(cafe.stations.map { $0.knownNetworks.map(\.ssid) } == [["Cafe Lumiere"]])
        #expect(cafe.internet == topology.internet)
        do {
            _ = try Certifier.homeOnly(topology, home: "Nowhere")
            Issue.record("a topology without the home network was accepted")
        } catch {
            #expect("\(error)".contains("Nowhere") && "\(error)".contains("no hotspot with this SSID"), "\(error)")
        }
    }
}
