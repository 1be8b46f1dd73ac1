import HotspotProtocol

/// `scan-list-passwords`: every secure network claimed in filterScanList carries a password (hotspotd ignores a
/// claim without one). Its cause comes before decoys' at the same answer.
struct ScanListPasswordsCheck: CertifyCheck {
    let id = "scan-list-passwords"
    let title = "sets a password for each secure network it claims in filterScanList"
    let runs: [CertificationRun] = [.scan]
    let position = 4.0
    let causeOrder = -1

    func judge(_ j: Judge) -> CheckResult {
        var bad: [String] = []
        var secureClaims = 0
        let answers = j.responses(.scan, to: "filterScanList")
        for r in answers {
            guard let presented = j.command(.scan, r.payload)?.networkList else { continue }
            for n in r.networkList ?? [] {
                let secure = presented.first { $0.ssid.text == n.ssid.text }.map { $0.security != "open" } ?? false
                if secure {
                    secureClaims += 1
                    if (n.password ?? "").isEmpty { bad.append(j.evidence(.scan, r.entry)) }
                }
            }
        }
        if answers.isEmpty { return j.fail(self, "no filterScanList answer", []) }
        return bad.isEmpty ? j.pass(self, secureClaims == 0 ? "claimed no secure network" : "\(secureClaims) secure claim(s), each with a password", [])
            : j.fail(self, "claimed a secure network without a password", bad)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        guard let (r, command) = truth.judged(entry), r.commandType == "filterScanList" else { return nil }
        let presented = command.networkList ?? []
        guard let bare = (r.networkList ?? []).first(where: { judge.secureWithoutPassword($0, presented: presented) }) else { return nil }
        return CertifyCause(reason: "filterScanList claimed the secure network \(bare.ssid.inline) without a password", context: [command.entry])
    }
}
