import Foundation
import HotspotProtocol
import Testing
@testable import LabKit
@testable import LabCertify

/// Certify never fails without a cause (docs/CERTIFY.md, "Cause first"): every failed check names one, on synthetic
/// traces of each failing path; and the `session-cookies` check's run.
@Suite("certify: every failure names its cause")
struct CertifyCauseTests {
    typealias Trace = CertifyJudgeTests.Trace

    static let judgeOptions = (home: "Cafe Lumiere", notCaptive: "Public Library", decoys: ["Airport Lounge", "Bank Secure"])

    static func record(_ run: CertificationRun, _ t: Trace?, gate: [String: Bool] = [:], error: String? = nil) -> CertificationRunRecord {
        CertificationRunRecord(run: run, records: t?.records ?? [], notes: error.map { ["stopped: \($0)"] } ?? [], logDirectory: "/logs",
                               traceFile: nil, duration: 1, error: error, gate: gate)
    }

    static func report(_ runs: [CertificationRunRecord], checks: [CertificationCheck] = CertificationCheck.all) -> CertificationReport {
        let judge = Judge(runs: runs, home: judgeOptions.home, notCaptive: judgeOptions.notCaptive, decoys: judgeOptions.decoys, timeScale: 0.25)
        return judge.report(helpers: ["acme"], checks: checks.filter { check in check.runs.allSatisfy { run in runs.contains { $0.run == run } } })
    }

    /// evaluate of the café answered with `confidence`.
    static func evaluate(_ t: Trace, confidence: Int, ssid: String = "Cafe Lumiere") {
        let id = t.nextCommand
        t.nextCommand += 1
        t.add("command", ["id": .number(Double(id)), "commandType": "evaluate", "helper": "acme", "network": ["ssid": .string(ssid)]])
        t.add("response", ["command": .number(Double(id)), "commandType": "evaluate", "helper": "acme", "result": "success",
                           "network": ["ssid": .string(ssid), "confidence": .number(Double(confidence))]])
    }

    /// A run where the helper answers evaluate none on the café: never claimed, never asked to sign in.
    static func unclaimed() -> Trace {
        let t = Trace()
        t.transition("Inactive", "Evaluating")
        evaluate(t, confidence: 0)
        t.transition("Evaluating", "Inactive")
        return t
    }

    /// The cookie-portal run: a first sign-in, the portal becomes the cookie portal, the re-join; the second
    /// authenticate answers `result` (`refused`: the lab marks what the portal refused).
    static func cookieRun(_ result: String, refused: Bool = false) -> Trace {
        let t = Trace()
        t.transition("Inactive", "Evaluating")
        evaluate(t, confidence: 2)
        t.answer("authenticate", "success")
        t.gate("afterSignIn", true)
        t.mark(RunDriver.portalMark, ["kind": "form-login", "settings": .object(SessionCookiesCheck.portalSettings.mapValues(JSON.string))])
        t.mark(RunDriver.sessionEndedMark)
        t.answer("maintain", "authenticationRequired", didJustJoin: true)
        t.answer("authenticate", result)
        t.gate(SessionCookiesCheck.gateLabel, result == "success")
        if refused {
            t.mark(SessionCookiesCheck.refusedMark, ["lines": ["POST /login from 198.51.100.10 refused: no session cookie (hotspotlab_session, set by the sign-in page)"]])
        }
        return t
    }

    static func gate(_ t: Trace) -> [String: Bool] { CertifyJudgeTests.gate(t) }

    /// Asserts the rule: every failed check names a cause, and the report lists it.
    static func assertEveryFailureHasACause(_ report: CertificationReport, _ label: String) {
        for result in report.results where !result.passed {
            #expect(result.cause != nil, "\(label): \(result.check.id) failed without a cause: \(result.reason)")
            if let cause = result.cause {
                #expect(report.causes.contains(cause), "\(label): \(result.check.id)'s cause is not in the report's causes")
            }
        }
        if !report.passed { #expect(!report.causes.isEmpty, "\(label): failed with causes: []") }
    }

    @Test("a helper that loses cookies fails session-cookies at its authenticate, named as the cause with the portal's refusal")
    func cookiesLost() throws {
        let t = Self.cookieRun("failure", refused: true)
        let report = Self.report([Self.record(.scan, CertifyJudgeTests.goodScan()), Self.record(.cookiePortal, t, gate: Self.gate(t))])
        let r = try #require(report.results.first { $0.check.id == "session-cookies" })
        #expect(!r.passed && !r.notReached)
        #expect(r.reason.contains("authenticate answered failure") && r.reason.contains("requires the session cookie")
            && r.reason.contains("refused: no session cookie"), "\(r.reason)")
        #expect(r.evidence.contains { $0.contains(SessionCookiesCheck.refusedMark) }, "\(r.evidence)")
        #expect(report.causes.map(\.check) == ["session-cookies"], "\(report.causes)")
        #expect(report.results.filter { !$0.passed }.map(\.check.id) == ["session-cookies"])
        Self.assertEveryFailureHasACause(report, "cookiesLost")
    }

    @Test("a helper that keeps cookies passes session-cookies, no cause")
    func cookiesKept() throws {
        let t = Self.cookieRun("success")
        let report = Self.report([Self.record(.scan, CertifyJudgeTests.goodScan()), Self.record(.cookiePortal, t, gate: Self.gate(t))])
        let r = try #require(report.results.first { $0.check.id == "session-cookies" })
        #expect(r.passed, "\(r.reason)")
        #expect(report.causes.isEmpty, "\(report.causes)")
    }

    @Test("authenticate success on the cookie portal with the station outside the gate fails session-cookies, not logoff")
    func cookieSuccessNotLetIn() throws {
        let t = Self.cookieRun("success")
        // The gate does not hold the station after the "successful" sign-in.
        let records = t.records.map { r -> JSON in
            guard r["action"]?["label"]?.stringValue == SessionCookiesCheck.gateLabel else { return r }
            var o = r.objectValue!
            o["action"] = ["certify": .string(RunDriver.gateMark), "label": .string(SessionCookiesCheck.gateLabel), "authenticated": false]
            return .object(o)
        }
        t.records = records
        let report = Self.report([Self.record(.scan, CertifyJudgeTests.goodScan()), Self.record(.cookiePortal, t, gate: Self.gate(t))])
        let r = try #require(report.results.first { $0.check.id == "session-cookies" })
        #expect(!r.passed && r.reason.contains("did not let it in"), "\(r.reason)")
        #expect(report.causes.map(\.check) == ["session-cookies"], "\(report.causes)")
        Self.assertEveryFailureHasACause(report, "cookieSuccessNotLetIn")
    }

    @Test("evaluate answered none on the café: never claimed; reauthenticate fails at that answer, the rest of each run is not reached")
    func evaluateNoneIsACause() throws {
        let runs: [CertificationRunRecord] = [Self.record(.scan, CertifyJudgeTests.goodScan())]
            + [CertificationRun.captive, .portalError, .changedPortal, .dnsHijack, .cookiePortal].map { Self.record($0, Self.unclaimed()) }
        let report = Self.report(runs)
        let failing = report.results.filter { !$0.passed }
        #expect(Set(failing.map(\.check.id)) == ["maintain", "reauthenticate", "logoff", "temporary-failure", "unsupported-network", "dns-hijack", "session-cookies"],
                "\(failing.map(\.check.id))")
        let re = try #require(report.results.first { $0.check.id == "reauthenticate" })
        #expect(!re.notReached && re.reason.contains("answered none") && re.reason.contains("never asked to sign in"), "\(re.reason)")
        for r in failing where r.check.id != "reauthenticate" {
            #expect(r.notReached && r.reason.contains("cause: reauthenticate: evaluate of"), "\(r.check.id): \(r.reason)")
        }
        #expect(report.causes.count == 5 && report.causes.allSatisfy { $0.check == "reauthenticate" && $0.seq == 3 }, "\(report.causes)")
        Self.assertEveryFailureHasACause(report, "evaluateNone")
    }

    @Test("evaluate none once signed in (the probe succeeds) or on a changed portal is no cause")
    func evaluateNoneWhenNotCaptiveIsFine() throws {
        let t = CertifyJudgeTests.Trace()
        t.answer("authenticate", "success")
        t.gate("afterSignIn", true)
        Self.evaluate(t, confidence: 0)   // signed in: not captive
        t.mark(RunDriver.portalMark, ["kind": "voucher"])
        t.mark(RunDriver.sessionEndedMark)
        Self.evaluate(t, confidence: 0)   // a voucher portal: not the helper's
        t.answer("authenticate", "unsupportedNetwork")
        let report = Self.report([Self.record(.scan, CertifyJudgeTests.goodScan()), Self.record(.changedPortal, t)])
        #expect(report.causes.isEmpty, "\(report.causes)")
    }

    @Test("a run the lab could not perform fails its checks with the lab's error as the named cause")
    func labErrorIsACause() throws {
        let report = Self.report([Self.record(.scan, CertifyJudgeTests.goodScan()),
                                  Self.record(.portalError, nil, error: "the lab could not be built: nft -f timed out")])
        let r = try #require(report.results.first { $0.check.id == "temporary-failure" })
        #expect(!r.passed && r.cause?.reason.contains("nft -f timed out") == true, "\(String(describing: r.cause))")
        Self.assertEveryFailureHasACause(report, "labError")
    }

    @Test("a check failing its own rule with no deviation of the walk (start-stop: a provider exited without a stop) is its own cause")
    func ownRuleIsItsOwnCause() throws {
        let t = CertifyJudgeTests.goodScan()
        t.add("providerLaunched", ["role": "evaluationProvider", "app": "com.acme", "t_ns": 1e9])
        t.add("providerStarted", ["role": "evaluationProvider", "app": "com.acme", "ok": true, "t_ns": 1.1e9])
        t.add("providerExited", ["role": "evaluationProvider", "app": "com.acme", "status": 1, "t_ns": 2e9])
        t.add("transition", ["from": "Inactive", "to": "Inactive", "t_ns": 10e9])
        let captive = CertifyJudgeTests.goodCaptive()
        let report = Self.report([Self.record(.scan, t), Self.record(.captive, captive, gate: Self.gate(captive))],
                                 checks: CertificationCheck.providerChecks)
        let r = try #require(report.results.first { $0.check.id == "start-stop" })
        #expect(!r.passed && !r.notReached, "\(r.reason)")
        let cause = try #require(r.cause)
        #expect(cause.check == "start-stop" && cause.run == .scan && cause.seq == 9, "\(cause)")
        #expect(report.causes == [cause])
        Self.assertEveryFailureHasACause(report, "startStop")
    }

    @Test("no failed check anywhere has an empty cause list: every defect of the synthetic traces")
    func noFailureWithoutACause() throws {
        var reports: [(String, CertificationReport)] = []
        for (label, t) in [("fromMemory", CertifyJudgeTests.goodCaptive(fromMemory: true)),
                           ("signOut", CertifyJudgeTests.goodCaptive(signOutAfterLogin: true)),
                           ("secondDelivery", CertifyJudgeTests.goodCaptive(secondDelivery: true)),
                           ("unclaimed", Self.unclaimed()),
                           ("empty", CertifyJudgeTests.Trace())] {
            reports.append((label, Self.report([Self.record(.scan, CertifyJudgeTests.goodScan()), Self.record(.captive, t, gate: Self.gate(t))])))
        }
        for (label, claims, library, decoy) in [("decoys", [["ssid": "Airport Lounge"] as JSON], 1, 0), ("high", [], 2, 2), ("decoyLow", [], 1, 1),
                                                ("noPasswords", [["ssid": "Bank Secure"] as JSON], 1, 0)] {
            reports.append((label, Self.report([Self.record(.scan, CertifyJudgeTests.scan(claims: claims, library: library, decoy: decoy))])))
        }
        reports.append(("noScan", Self.report([Self.record(.scan, CertifyJudgeTests.Trace())])))
        for run in [CertificationRun.portalError, .changedPortal, .dnsHijack, .cookiePortal] {
            reports.append(("\(run)-empty", Self.report([Self.record(.scan, CertifyJudgeTests.goodScan()), Self.record(run, CertifyJudgeTests.Trace())])))
            let t = Self.cookieRun("failure")
            reports.append(("\(run)-failing-auth", Self.report([Self.record(.scan, CertifyJudgeTests.goodScan()), Self.record(run, t)])))
        }
        var failures = 0
        for (label, report) in reports {
            failures += report.results.filter { !$0.passed }.count
            Self.assertEveryFailureHasACause(report, label)
        }
        #expect(failures >= 20, "the traces fail \(failures) checks in all")
    }
}
