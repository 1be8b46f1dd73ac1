import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Testing

/// The daemon's timers on `EmbeddedDaemon` and a `ManualClock`: deadlines, the maintain timer, the scan list
/// refresh and the partial-frame timeout fire when the clock is advanced to them, and not a moment before.
@Suite("hotspotd timers (embedded, manual clock)")
struct EmbeddedTimingTests {
    let timing = Timing.standard

    @Test("a frame that never completes closes that connection after the partial-frame timeout, nothing else")
    func partialFrameTimeout() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let stuck = try d.helper("stuck")
        let other = try d.helper("other")
        stuck.sendBytes([0, 0, 0, 50] + Array("{\"type\":".utf8))
        d.advance(by: d.core.options.partialFrameTimeout - .milliseconds(1))
        #expect(!stuck.isClosed, "not closed before the timeout")
        #expect(try stuck.read().isEmpty)
        d.advance(by: .milliseconds(1))
        let e = try #require(try stuck.read(type: "error"))
        #expect(e["code"]?.stringValue == "incompleteFrame")
        #expect(stuck.isClosed, "closed")
        other.send(.supportedNetworkInterfaces(requestID: 9))
        #expect(try other.read(type: "interfaces")?["requestID"]?.intValue == 9, "the other helper is still served")
        #expect(!other.isClosed)
        let s = try d.status(ctl)
        #expect(s["helpers"]?.arrayValue?.map { $0["identifier"]?.stringValue } == ["other"])
        #expect(d.records("disconnect").count == 1)
    }

    @Test("a frame completed in time cancels the partial-frame timer")
    func partialFrameCompleted() throws {
        let d = EmbeddedDaemon()
        let h = try d.helper("slow")
        let f = HelperMessage.supportedNetworkInterfaces(requestID: 3).framed
        h.sendBytes(Array(f.prefix(6)))
        #expect(d.armedTimers[.partialFrame(h.id)] != nil)
        d.advance(by: .seconds(5))
        h.sendBytes(Array(f.dropFirst(6)))
        #expect(d.armedTimers[.partialFrame(h.id)] == nil)
        d.advance(by: .seconds(60))
        #expect(!h.isClosed)
        #expect(try h.read(type: "interfaces")?["requestID"]?.intValue == 3)
    }

    @Test("a duplicate and a late response are rejected and change nothing")
    func duplicateAndLate() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let raw = try d.helper("manual")
        try d.join(ctl, cafe)
        let eval = try raw.command()
        #expect(eval["commandName"]?.stringValue == "evaluate")
        try raw.answer(eval, confidence: .high)
        let auth = try raw.command()
        #expect(auth["commandName"]?.stringValue == "authenticate")
        try raw.answer(eval, confidence: .high)
        let dup = try #require(try raw.read(type: "error"))
        #expect(dup["message"]?.stringValue?.contains("second response") == true)
        // Let authenticate pass its deadline, then answer it late.
        d.advance(by: try #require(timing.deadline(for: .authenticate)))
        #expect(try d.status(ctl)["state"]?.stringValue == "Inactive")
        try raw.answer(auth)
        let late = try #require(try raw.read(type: "error"))
        #expect(late["message"]?.stringValue?.contains("after its deadline") == true)
        #expect(try d.status(ctl)["state"]?.stringValue == "Inactive")
        let reasons = d.records("rejected").compactMap { $0["reason"]?.stringValue }
        #expect(reasons.contains("duplicateResponse") && reasons.contains("lateResponse"))
    }

    @Test("a helper that never answers evaluate: the others still decide at the deadline")
    func neverAnswers() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let silent = try d.helper("silent")
        let low = try d.helper("lowone")
        try d.join(ctl, cafe)
        _ = try silent.command()
        try low.answer(try low.command(), confidence: .low)
        let evaluate = try #require(timing.deadline(for: .evaluate))
        d.advance(by: evaluate - .milliseconds(1))
        #expect(try d.status(ctl)["state"]?.stringValue == "Evaluating", "nothing decided before the deadline")
        #expect(d.records("timer").isEmpty)
        d.advance(by: .milliseconds(1))
        try low.answer(try low.command())
        let s = try d.status(ctl)
        #expect(s["state"]?.stringValue == "Authenticated")
        #expect(s["bestHelper"]?.stringValue == "lowone")
        let irr = d.records("irregular").filter { $0["irregularity"]?.stringValue == "noAnswer" }
        #expect(irr.contains { $0["helper"]?.stringValue == "silent" && $0["commandType"]?.stringValue == "evaluate" })
        #expect(d.records("timer").contains { $0["timer"]?.stringValue == "deadline" })
    }

    @Test("maintain timer: fires after the interval, didJustJoin false")
    func maintainTimer() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let h = try d.helper("maint")
        try d.join(ctl, cafe)
        try h.answer(try h.command())
        try h.answer(try h.command())
        #expect(try d.status(ctl)["state"]?.stringValue == "Authenticated")
        #expect(d.actions.contains(.armTimer(.maintain, after: timing.scaledMaintainInterval)))
        #expect(d.actions.contains(.network(.releaseIP(interface: "wlan0", network: cafe.identity))))
        d.advance(by: timing.scaledMaintainInterval - .milliseconds(1))
        #expect(d.commands(.maintain).isEmpty, "no maintain before the interval")
        d.advance(by: .milliseconds(1))
        try h.answer(try h.command())
        #expect(try d.status(ctl)["state"]?.stringValue == "Authenticated")
        #expect(d.commands(.maintain).first?["network"]?["didJustJoin"]?.boolValue == false)
        #expect(d.records("timer").contains { $0["timer"]?.stringValue == "maintain" })
    }

    @Test("fireMaintainTimer: the armed timer fires at once (via control), the loop's timer is cancelled, the next is armed afresh; refused when none is armed")
    func fireMaintainTimer() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let refused = try #require(try ctl.request(.fireMaintainTimer))
        #expect(refused["type"]?.stringValue == "error")
        #expect(refused["message"]?.stringValue?.contains("no maintain timer is armed (hotspotd is in Inactive") == true)
        let h = try d.helper("fire")
        try d.join(ctl, cafe)
        try h.answer(try h.command())
        try h.answer(try h.command())
        #expect(try d.status(ctl)["state"]?.stringValue == "Authenticated")
        #expect(try ctl.request(.fireMaintainTimer)?["type"]?.stringValue == "ok")
        // No time passed: the maintain is the request's, traced as the control's event, not as the timer's.
        let maintain = try h.command()
        #expect(maintain["commandName"]?.stringValue == "maintain")
        #expect(maintain["network"]?["didJustJoin"]?.boolValue == false)
        #expect(d.actions.contains(.cancelTimer(.maintain)))
        let fired = d.records("event").filter { $0["event"]?.stringValue == "maintainTimerFired" }
        #expect(fired.count == 1 && fired.first?["via"]?.stringValue == "control")
        #expect(!d.records("timer").contains { $0["timer"]?.stringValue == "maintain" })
        #expect(try ctl.request(.fireMaintainTimer)?["type"]?.stringValue == "error", "Maintaining: no timer is armed")
        try h.answer(maintain)
        #expect(try d.status(ctl)["state"]?.stringValue == "Authenticated")
        // The first timer's interval running out now fires nothing: only the timer armed on the return does, a whole
        // interval after it.
        let maintainsBefore = d.commands(.maintain).count
        d.advance(by: timing.scaledMaintainInterval - .milliseconds(1))
        #expect(d.commands(.maintain).count == maintainsBefore)
        d.advance(by: .milliseconds(1))
        #expect(d.commands(.maintain).count == maintainsBefore + 1)
    }

    @Test("signal: a change of signal strength (control `signal`) changes no state; the next maintain carries it")
    func signalChange() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let h = try d.helper("sig")
        try d.join(ctl, cafe)
        try h.answer(try h.command())
        try h.answer(try h.command())
        let before = d.transitions().count
        #expect(try ctl.request(.signal(0.25))?["type"]?.stringValue == "ok")
        let s = try d.status(ctl)
        #expect(s["association"]?["signalStrength"]?.doubleValue == 0.25)
        #expect(s["state"]?.stringValue == "Authenticated")
        #expect(d.transitions().count == before)
        let event = d.records("event").last { $0["event"]?.stringValue == "signalChanged" }
        #expect(event?["detail"]?["signalStrength"]?.doubleValue == 0.25 && event?["via"]?.stringValue == "control")
        d.advance(by: timing.scaledMaintainInterval)
        _ = try h.command()
        #expect(d.commands(.maintain).first?["network"]?["signalStrength"]?.doubleValue == 0.25)
        #expect(d.commands(.authenticate).first?["network"]?["signalStrength"]?.doubleValue == cafe.signalStrength)
    }

    @Test("a scan list shown with refresh repeats filterScanList until hidden")
    func scanListRefresh() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let h = try d.helper("refresher")
        #expect(try ctl.request(.showScanList([cafe], repeating: true))?["type"]?.stringValue == "ok")
        for round in 1...3 {
            try h.answer(try h.command())
            #expect(d.records("scanList").count == round)
            d.advance(by: timing.scaledScanListRefresh)
        }
        #expect(try ctl.request(.hideScanList)?["type"]?.stringValue == "ok")
        let sent = d.commands(.filterScanList).count
        d.advance(by: timing.scaledScanListRefresh * 10)
        #expect(d.commands(.filterScanList).count == sent, "no refresh after hideScanList")
        #expect(d.armedTimers[.scanListRefresh] == nil)
        #expect(d.records("timer").filter { $0["timer"]?.stringValue == "scanListRefresh" }.count == 3)
    }
}
