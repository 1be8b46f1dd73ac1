import HotspotProtocol

/// `one-response`: exactly one response per command. hotspotd's rejections of a raw second or stray response, and
/// what the SDK refused on the helper's side and reported (`helperReport`: a second deliver(), an invalid field).
/// A provider's deliver() is no-deliver's.
struct OneResponseCheck: CertifyCheck {
    let id = "one-response"
    let title = "exactly one response per command"
    let runs: [CertificationRun] = [.scan, .captive]
    let position = 5.0

    func judge(_ j: Judge) -> CheckResult {
        var bad: [String] = []
        var reported: [String] = []
        for run in runs {
            bad += j.records(run).filter { Judge.strayResponses.contains($0.record.rejected?.reason ?? "") }.map { j.evidence(run, $0) }
            reported += j.records(run).filter { e in
                guard let report = e.record.helperReport?.report else { return false }
                return Judge.failingReports.contains(report) && report != "deliverCalledByProvider"
            }.map { j.evidence(run, $0) }
        }
        if !reported.isEmpty {
            return j.fail(self, "the SDK refused \(reported.count) delivery(ies) on the helper's side (\(Judge.reportNames(reported))): on iOS this is a bug", reported + bad)
        }
        return bad.isEmpty ? j.pass(self, "no second or stray response", []) : j.fail(self, "\(bad.count) response(s) rejected", bad)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        if let r = entry.record.rejected, Judge.strayResponses.contains(r.reason) {
            return CertifyCause(reason: "a response hotspotd rejected (\(r.reason)): \(r.message ?? "")")
        }
        if let h = entry.record.helperReport, Judge.failingReports.contains(h.report), h.report != "deliverCalledByProvider",
           h.report != Judge.evaluationNetworkReport {
            return CertifyCause(reason: "the SDK refused on the helper's side (\(h.report)): \(h.message)")
        }
        return nil
    }
}
