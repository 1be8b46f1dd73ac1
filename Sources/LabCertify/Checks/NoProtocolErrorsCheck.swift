import HotspotProtocol

/// `no-protocol-errors` (advisory): the helper sent hotspotd no frame it refused as malformed or not allowed
/// (`protocolError` records on the helper socket). An SDK-built helper cannot send one; a helper speaking the
/// wire protocol itself can. Not required, and it owns no cause: it reports, it does not change the verdict.
struct NoProtocolErrorsCheck: CertifyCheck {
    let id = "no-protocol-errors"
    let title = "sends no frame hotspotd refuses as malformed (advisory)"
    let runs: [CertificationRun] = [.scan, .captive]
    let position = 12.5
    let required = false

    func judge(_ j: Judge) -> CheckResult {
        let refused = runs.flatMap { run in j.records(run).of(\.protocolError).filter { $0.socket == "helper" }.map { j.evidence(run, $0.entry) } }
        return refused.isEmpty ? j.pass(self, "no frame refused", []) : j.fail(self, "\(refused.count) frame(s) refused as malformed or not allowed", refused)
    }
}
