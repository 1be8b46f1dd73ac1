import HotspotProtocol

/// `logoff`: the helper answers logoff success, and its portal session is up until then and ended after (the
/// gate's observations). Owns a logoff not answered success, a session that ended with no logoff and no action
/// of the lab, and a session still up after a logoff answered success.
struct LogoffCheck: CertifyCheck {
    let id = "logoff"
    let title = "answers logoff and ends its session only then"
    let runs: [CertificationRun] = [.captive]
    let position = 9.0

    func judge(_ j: Judge) -> CheckResult {
        let run = j.record(.captive)
        guard let answer = j.responses(.captive, to: "logoff").first else {
            return j.fail(self, "no answer to the logoff command", j.records(.captive).of(\.command).filter { $0.commandType == "logoff" }
                .map { j.evidence(.captive, $0.entry) } + (run?.notes ?? []))
        }
        guard run?.gate["beforeLogoff"] == true else {
            return j.fail(self, "the portal session had already ended before the logoff command", [j.evidence(.captive, answer.entry)] + (run?.notes ?? []))
        }
        guard answer.result == "success" else {
            return j.fail(self, "logoff answered \(answer.result)", [j.evidence(.captive, answer.entry)])
        }
        guard run?.gate["afterLogoff"] == false else {
            return j.fail(self, "logoff answered success but the portal session is still up (the gate holds the station)", [j.evidence(.captive, answer.entry)])
        }
        return j.pass(self, "the session was up until the logoff command, which ended it", [j.evidence(.captive, answer.entry), "gate before: authenticated, after: not"])
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        if let mark = GroundTruth.mark(entry), mark.certify == RunDriver.gateMark {
            let held = mark.authenticated ?? false
            // After the sign-in on the cookie portal, a gate without the station is session-cookies'.
            if truth.sessionAlive && !held && !SessionCookiesCheck.ownsGateReading(mark) {
                return CertifyCause(reason: "the portal session ended at seq \(entry.seq) with no logoff command and no action of the lab "
                    + "(the gate no longer holds the station after \(mark.label ?? "?")): the helper ended its session on its own", context: [truth.signedIn])
            }
            if !truth.sessionAlive && held && mark.label == "afterLogoff" {
                return CertifyCause(reason: "logoff answered success but the portal session is still up (the gate holds the station)", context: [truth.sessionEnded])
            }
            return nil
        }
        guard let (r, command) = truth.judged(entry), r.commandType == "logoff", r.result != "success" else { return nil }
        return CertifyCause(reason: "logoff answered \(r.result) at seq \(entry.seq), expected success", context: [command.entry])
    }
}
