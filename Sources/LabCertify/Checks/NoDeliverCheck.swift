import HotspotProtocol

/// `no-deliver` (a provider pair): no provider calls deliver(); the framework delivers what handleCommand returns
/// (the SDK refuses and reports it: `helperReport deliverCalledByProvider`). Owns each such report.
struct NoDeliverCheck: CertifyCheck {
    let id = "no-deliver"
    let title = "no provider calls deliver() (the framework delivers what handleCommand returns)"
    let runs: [CertificationRun] = [.scan, .captive]
    let position = 14.0
    let judgesProviders = true

    func judge(_ j: Judge) -> CheckResult {
        var found: [String] = []
        var answers = 0
        for run in runs {
            found += j.records(run).filter { $0.record.helperReport?.report == "deliverCalledByProvider" }.map { j.evidence(run, $0) }
            answers += j.records(run).of(\.response).count
        }
        return found.isEmpty ? j.pass(self, "\(answers) answers, each returned from handleCommand; deliver() never called", [])
            : j.fail(self, "a provider called deliver() \(found.count) time(s); the framework delivers what handleCommand returns (refused and reported by the SDK)", found)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        guard let h = entry.record.helperReport, h.report == "deliverCalledByProvider" else { return nil }
        return CertifyCause(reason: "the provider called deliver() (the framework delivers what handleCommand returns): \(h.message)")
    }
}
