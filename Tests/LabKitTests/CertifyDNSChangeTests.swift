import Testing
@testable import LabKit

/// Issue 25 item 4, seen in the VM under load: a maintain answered while the lab was still restarting dnsmasq for the
/// hijack (before the hijack mark) was judged as if DNS were sound (`maintain` answered failure while the session was
/// up), so `--break trust-dns` failed `maintain` instead of `dns-hijack`. The driver marks the change's start; a
/// maintain answered between that mark and the hijack mark faced neither DNS and is judged by neither check.
@Suite("certify judge: a maintain answered while the lab changes DNS")
struct CertifyDNSChangeTests {
    static func trace(changingMark: Bool) -> CertifyJudgeTests.Trace {
        let t = CertifyJudgeTests.Trace()
        t.transition("Inactive", "Evaluating")
        t.answer("evaluate", "success")
        t.answer("authenticate", "success")
        t.gate("afterSignIn", true)
        if changingMark { t.mark(RunDriver.dnsChangingMark) }
        t.answer("maintain", "failure")   // the probe's name did not resolve: dnsmasq was restarting
        t.mark(RunDriver.hijackMark)
        t.answer("maintain", "success")   // trust-dns: the name resolves (to the gateway)
        if changingMark { t.mark(RunDriver.dnsChangingMark) }
        t.mark(RunDriver.dnsRestoredMark)
        return t
    }

    @Test("with the change marked: the cause is dns-hijack's; without (the control): maintain's, as it was judged")
    func changeWindow() throws {
        let marked = try CertifyJudgeTests.judge(Self.trace(changingMark: true), run: .dnsHijack)
        #expect(marked.causes.map(\.check) == ["dns-hijack"], "\(marked.causes)")
        let hijack = try CertifyJudgeTests.result(marked, "dns-hijack")
        #expect(!hijack.passed && !hijack.notReached && hijack.reason.contains("resolved to the gateway"), "\(hijack.reason)")
        let unmarked = try CertifyJudgeTests.judge(Self.trace(changingMark: false), run: .dnsHijack)
        #expect(unmarked.causes.first?.check == "maintain", "\(unmarked.causes)")
    }

    @Test("a maintain sent before the hijack took effect and answered success after it is not dns-hijack's cause")
    func sentBeforeTheHijack() throws {
        let t = CertifyJudgeTests.Trace()
        t.transition("Inactive", "Evaluating")
        t.answer("evaluate", "success")
        t.answer("authenticate", "success")
        t.gate("afterSignIn", true)
        t.mark(RunDriver.dnsChangingMark)
        t.add("command", ["id": 50, "commandType": "maintain", "helper": "acme", "network": ["ssid": "Cafe Lumiere", "didJustJoin": false]])
        t.mark(RunDriver.hijackMark)
        t.add("response", ["command": 50, "commandType": "maintain", "helper": "acme", "result": "success"])
        t.answer("maintain", "failure")
        t.mark(RunDriver.dnsChangingMark)
        t.mark(RunDriver.dnsRestoredMark)
        let report = try CertifyJudgeTests.judge(t, run: .dnsHijack)
        #expect(report.causes.isEmpty, "\(report.causes)")
        #expect(try CertifyJudgeTests.result(report, "dns-hijack").passed)
    }
}
