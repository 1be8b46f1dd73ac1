import HotspotProtocol

/// `temporary-failure`: while the portal's sign-in answers 503, authenticate is answered temporaryFailure, not
/// failure (which disables auto-join). Owns an authenticate on the erring portal answered otherwise.
struct TemporaryFailureCheck: CertifyCheck {
    let id = "temporary-failure"
    let title = "distinguishes temporaryFailure from failure when the portal errors"
    let runs: [CertificationRun] = [.portalError]
    let position = 10.0

    func judge(_ j: Judge) -> CheckResult {
        let answers = j.responses(.portalError, to: "authenticate")
        guard answers.count >= 2, let last = answers.last else {
            return j.fail(self, "the helper was not asked to authenticate while the portal erred", j.notes(.portalError))
        }
        return last.result == "temporaryFailure"
            ? j.pass(self, "answered temporaryFailure while the portal's sign-in answered 503", [j.evidence(.portalError, last.entry)])
            : j.fail(self, "answered \(last.result) instead of temporaryFailure while the portal's sign-in answered 503 (failure disables auto-join)",
                     [j.evidence(.portalError, last.entry)])
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        AuthenticateExpectation.cause(of: entry, truth: truth, judge: judge, portal: .erring, expected: "temporaryFailure",
                                      why: { "the portal's sign-in answers 503 since seq \($0.portalMark?.seq ?? 0)" })
    }
}
