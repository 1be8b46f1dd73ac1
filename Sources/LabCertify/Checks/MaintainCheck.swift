import HotspotProtocol

/// `maintain`: maintain is answered success or authenticationRequired, both without didJustJoin (the timer) and
/// with it (the cached re-join). Owns a maintain answer on the café that contradicts the portal session's state
/// (outside a DNS hijack, dns-hijack's).
struct MaintainCheck: CertifyCheck {
    let id = "maintain"
    let title = "handles maintain both with and without didJustJoin"
    let runs: [CertificationRun] = [.captive]
    let position = 6.0

    func judge(_ j: Judge) -> CheckResult {
        let answers = j.responses(.captive, to: "maintain")
        let plain = answers.filter { j.command(.captive, $0.payload)?.network?.didJustJoin == false }
        let joined = answers.filter { j.command(.captive, $0.payload)?.network?.didJustJoin == true }
        let valid = ["success", "authenticationRequired"]
        guard let p = plain.first, valid.contains(p.result) else {
            return j.fail(self, "maintain without didJustJoin was not answered success/authenticationRequired", plain.map { j.evidence(.captive, $0.entry) } + j.notes(.captive))
        }
        guard let d = joined.first, valid.contains(d.result) else {
            return j.fail(self, "maintain with didJustJoin (the cached re-join) was not answered success/authenticationRequired",
                          joined.map { j.evidence(.captive, $0.entry) } + j.notes(.captive))
        }
        return j.pass(self, "maintain answered \(p.result) (didJustJoin false) and \(d.result) (didJustJoin true)",
                      [j.evidence(.captive, p.entry), j.evidence(.captive, d.entry)])
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        guard let (r, command) = truth.judged(entry), r.commandType == "maintain", command.network?.ssid.text == judge.home,
              truth.hijack == nil else { return nil }
        let seq = entry.seq
        let result = r.result
        let maintain = command.network?.didJustJoin == true ? "maintain with didJustJoin" : "maintain"
        if truth.sessionUncertain {
            // The helper signed in again while the lab flushed the gate; until the lab reads the gate, nobody knows
            // whether the session is up: not judged.
            return nil
        }
        if truth.sessionEnding != nil {
            // Answered while the lab was flushing the gate (between its two marks): the probe may have run on either
            // side of the flush, or had its connection cut by it (an error: failure). Not judged; the next one is.
            // (Seen in the radio tier with the VM beside the host suites: failure while the session was "up".)
            return nil
        }
        if !truth.sessionAlive, let ended = truth.sessionEnded?.seq, command.entry.seq < ended {
            // Sent while the session was up and answered after the lab ended it: the helper's probe may have run on
            // either side of that moment (or been cut by it), so no answer is wrong. The next maintain, sent after the
            // end, is the one judged. (Seen with two labs at a time: the scaled maintain timer fired just before the
            // lab flushed the gate.)
            return nil
        }
        if !truth.sessionAlive, result != "authenticationRequired" {
            let ended = "the portal session had ended" + (truth.sessionEnded.map { " at seq \($0.seq)" } ?? "")
            return CertifyCause(reason: result == "success"
                ? "\(maintain) answered success at seq \(seq), but \(ended): the helper answered from memory instead of probing (expected authenticationRequired)"
                : "\(maintain) answered \(result) at seq \(seq) after \(ended) (expected authenticationRequired: log in again)", context: [command.entry, truth.sessionEnded])
        }
        if truth.sessionAlive, !["success", "authenticationRequired"].contains(result) {
            return CertifyCause(reason: "\(maintain) answered \(result) at seq \(seq) while the portal session was up (expected success)",
                                context: [command.entry, truth.signedIn])
        }
        return nil
    }
}
