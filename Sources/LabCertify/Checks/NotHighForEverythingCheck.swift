import HotspotCore
import HotspotProtocol

/// `not-high-for-everything`: evaluate of a network with the internet behind it is not answered high. Owns that
/// answer, and a decoy's high answer after it (high for every network).
struct NotHighForEverythingCheck: CertifyCheck {
    let id = "not-high-for-everything"
    let title = "does not answer high for everything (a not-captive network)"
    let runs: [CertificationRun] = [.scan]
    let position = 3.0

    func judge(_ j: Judge) -> CheckResult {
        let answers = j.responses(.scan, to: "evaluate").filter { j.command(.scan, $0.payload)?.network?.ssid.text == j.notCaptive }
        guard let answer = answers.first else { return j.fail(self, "no evaluate answer for \(j.notCaptive)", j.notes(.scan)) }
        return answer.network?.confidence == 2
            ? j.fail(self, "answered high for \(j.notCaptive), a network with the internet behind it", [j.evidence(.scan, answer.entry)])
            : j.pass(self, "evaluate of \(j.notCaptive) answered with confidence \(answer.network?.confidence ?? 0)", [j.evidence(.scan, answer.entry)])
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        guard let (r, command) = truth.judged(entry), r.commandType == "evaluate" else { return nil }
        let confidence = r.network?.confidence ?? 0
        let ssid = command.network?.ssid.text
        if ssid == judge.notCaptive, confidence == 2 {
            return CertifyCause(reason: "evaluate of \(judge.notCaptive), a network with the internet behind it, answered high", context: [command.entry])
        }
        // High for everything: this check owns the decoy's answer too (the not-captive network's first answer is the cause).
        if let ssid, judge.decoys.contains(ssid), confidence == 2, let high = truth.highForNotCaptive {
            return CertifyCause(reason: "evaluate of the decoy \(SSIDText.inline(ssid)) answered high too: high for every network", context: [command.entry, high])
        }
        return nil
    }
}
