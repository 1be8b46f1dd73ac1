import HotspotProtocol

/// `evaluation-no-network` (a provider pair): the evaluation provider uses no network, as its sandbox has none
/// (the SDK reports an attempt: `helperReport networkFromEvaluationProvider`). Owns each such report.
struct EvaluationNoNetworkCheck: CertifyCheck {
    let id = "evaluation-no-network"
    let title = "the evaluation provider uses no network (its sandbox has none)"
    let runs: [CertificationRun] = [.scan, .captive]
    let position = 13.0
    let judgesProviders = true

    func judge(_ j: Judge) -> CheckResult {
        let found = runs.flatMap { run in j.records(run).filter { $0.record.helperReport?.report == Judge.evaluationNetworkReport }.map { j.evidence(run, $0) } }
        return found.isEmpty ? j.pass(self, "no network attempt reported by the evaluation provider", [])
            : j.fail(self, "the evaluation provider tried the network \(found.count) time(s); it has none (a sandbox with only lo): decide from the command", found)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        guard let h = entry.record.helperReport, h.report == Judge.evaluationNetworkReport else { return nil }
        return CertifyCause(reason: "the evaluation provider tried the network (it has none): \(h.message)")
    }
}
