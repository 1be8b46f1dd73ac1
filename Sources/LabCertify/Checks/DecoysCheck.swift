import HotspotCore
import HotspotProtocol

/// `decoys`: the helper claims none of the networks it cannot know (the decoys and the not-captive network), in
/// filterScanList or evaluate. A secure claim without a password is ignored by hotspotd (scan-list-passwords
/// judges it); high for a decoy after high for the not-captive network is "high for everything"
/// (not-high-for-everything's).
struct DecoysCheck: CertifyCheck {
    let id = "decoys"
    let title = "claims none of the decoy networks it cannot know"
    let runs: [CertificationRun] = [.scan]
    let position = 2.0

    func judge(_ j: Judge) -> CheckResult {
        var claims: [String] = []
        for r in j.responses(.scan, to: "filterScanList") {
            let presented = j.command(.scan, r.payload)?.networkList ?? []
            let claimed = (r.networkList ?? []).filter { !j.secureWithoutPassword($0, presented: presented) }.compactMap(\.ssid.text)
            if claimed.contains(where: j.decoys.contains) || claimed.contains(j.notCaptive) { claims.append(j.evidence(.scan, r.entry)) }
        }
        let evaluations = j.responses(.scan, to: "evaluate")
        let highForAll = evaluations.contains { j.command(.scan, $0.payload)?.network?.ssid.text == j.notCaptive && $0.network?.confidence == 2 }
        for r in evaluations where j.decoys.contains(j.command(.scan, r.payload)?.network?.ssid.text ?? "") {
            let confidence = r.network?.confidence ?? 0
            if confidence > 0 && !(confidence == 2 && highForAll) { claims.append(j.evidence(.scan, r.entry)) }
        }
        let evaluated = evaluations.contains { j.decoys.contains(j.command(.scan, $0.payload)?.network?.ssid.text ?? "") }
        if !evaluated { return j.fail(self, "the helper was never asked to evaluate a decoy (the run did not get that far)", j.notes(.scan)) }
        return claims.isEmpty ? j.pass(self, "no decoy claimed in filterScanList or evaluate", [])
            : j.fail(self, "claimed \(claims.count) time(s) a network it cannot know", claims)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        guard let (r, command) = truth.judged(entry) else { return nil }
        switch r.commandType {
        case "filterScanList":
            let presented = command.networkList ?? []
            // A secure claim without a password is ignored by hotspotd: it claims nothing.
            guard let wrong = (r.networkList ?? []).first(where: { n in
                let claimed = n.ssid.text ?? ""
                return (judge.decoys.contains(claimed) || claimed == judge.notCaptive) && !judge.secureWithoutPassword(n, presented: presented)
            }) else { return nil }
            return CertifyCause(reason: "filterScanList claimed \(wrong.ssid.inline), a network it cannot know", context: [command.entry])
        case "evaluate":
            let confidence = r.network?.confidence ?? 0
            guard let ssid = command.network?.ssid.text, ssid != judge.notCaptive || confidence != 2, judge.decoys.contains(ssid), confidence > 0,
                  !(confidence == 2 && truth.highForNotCaptive != nil) else { return nil }
            return CertifyCause(reason: "evaluate of the decoy \(SSIDText.inline(ssid)) answered confidence \(confidence), not none", context: [command.entry])
        default:
            return nil
        }
    }
}
