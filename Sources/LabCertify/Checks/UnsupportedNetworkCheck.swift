import HotspotProtocol

/// `unsupported-network`: on a portal it cannot handle (the café's became a voucher portal), the helper answers
/// unsupportedNetwork instead of failing. Owns an authenticate on the changed portal answered otherwise.
struct UnsupportedNetworkCheck: CertifyCheck {
    let id = "unsupported-network"
    let title = "returns unsupportedNetwork instead of failing on a network it mis-claimed"
    let runs: [CertificationRun] = [.changedPortal]
    let position = 8.0

    func judge(_ j: Judge) -> CheckResult {
        let answers = j.responses(.changedPortal, to: "authenticate")
        guard answers.count >= 2, let last = answers.last else {
            return j.fail(self, "the helper was not asked to authenticate on the changed portal", j.notes(.changedPortal))
        }
        return last.result == "unsupportedNetwork"
            ? j.pass(self, "answered unsupportedNetwork on the portal it cannot handle", [j.evidence(.changedPortal, last.entry)])
            : j.fail(self, "answered \(last.result) instead of unsupportedNetwork on a portal it cannot handle", [j.evidence(.changedPortal, last.entry)])
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        AuthenticateExpectation.cause(of: entry, truth: truth, judge: judge, portal: .changed, expected: "unsupportedNetwork",
                                      why: { "the café's portal became a voucher portal at seq \($0.portalMark?.seq ?? 0)" })
    }
}
