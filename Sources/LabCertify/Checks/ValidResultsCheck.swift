import HotspotProtocol

/// `valid-results`: every answer uses a result valid for its command (hotspotd's `irregular invalidResult` says
/// one did not). Owns each invalidResult.
struct ValidResultsCheck: CertifyCheck {
    let id = "valid-results"
    let title = "uses only results valid for each command"
    let runs: [CertificationRun] = [.scan, .captive]
    let position = 11.0

    func judge(_ j: Judge) -> CheckResult {
        var bad: [String] = []
        for run in runs {
            bad += j.records(run).filter { $0.record.irregular?.irregularity == "invalidResult" }.map { j.evidence(run, $0) }
        }
        return bad.isEmpty ? j.pass(self, "every result was valid for its command", []) : j.fail(self, "\(bad.count) result(s) not valid for their command", bad)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        guard let i = entry.record.irregular, i.irregularity == "invalidResult" else { return nil }
        return CertifyCause(reason: "answered \(i.commandType ?? "a command") with \(i.result ?? "?"), not a valid result for it")
    }
}
