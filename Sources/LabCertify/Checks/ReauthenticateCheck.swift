import HotspotCore
import HotspotProtocol

/// `reauthenticate`: after maintain answered authenticationRequired (the portal session expired), the helper logs
/// in again. Owns an authenticate on the café's normal portal not answered success, and an evaluate of the café
/// answered none while it is captive behind that portal (never claimed, the helper is never asked to sign in).
struct ReauthenticateCheck: CertifyCheck {
    let id = "reauthenticate"
    let title = "logs in again after authenticationRequired"
    let runs: [CertificationRun] = [.captive]
    let position = 7.0

    func judge(_ j: Judge) -> CheckResult {
        let trace = j.records(.captive)
        guard let required = trace.firstIndex(where: { $0.record.response?.commandType == "maintain" && $0.record.response?.result == "authenticationRequired" }) else {
            return j.fail(self, "maintain never answered authenticationRequired after the portal session expired", j.notes(.captive))
        }
        guard let login = trace[required...].of(\.response).first(where: { $0.commandType == "authenticate" }) else {
            return j.fail(self, "no authenticate answer after authenticationRequired", [j.evidence(.captive, trace[required])])
        }
        let shown = [j.evidence(.captive, trace[required]), j.evidence(.captive, login.entry)]
        return login.result == "success" ? j.pass(self, "logged in again", shown)
            : j.fail(self, "authenticate after authenticationRequired answered \(login.result)", shown)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        if let (r, command) = truth.judged(entry), r.commandType == "evaluate" {
            guard let ssid = command.network?.ssid.text, ssid == judge.home, r.network?.confidence == 0, truth.portal == .normal,
                  truth.hijack == nil, truth.ipv6Only == nil, !truth.sessionAlive else { return nil }
            // Never claimed, so never asked to sign in: every later check of the run is off course.
            return CertifyCause(reason: "evaluate of \(SSIDText.inline(ssid)) answered none at seq \(entry.seq), so the helper never claimed it "
                + "and was never asked to sign in: expected low or high (the network it is certified on, captive behind a form-login portal the account signs in to)",
                                context: [command.entry])
        }
        return AuthenticateExpectation.cause(of: entry, truth: truth, judge: judge, portal: .normal, expected: "success",
                                      why: { _ in "the café's form-login portal accepts the account" })
    }
}

/// What authenticate must answer on the café outside a DNS hijack, by the portal the lab made it (the three
/// checks that own an authenticate answer: reauthenticate, temporary-failure, unsupported-network; on the
/// IPv6-only café, ipv6-only owns them). Under a DNS
/// hijack nothing says what authenticate should answer (a pair's evaluation provider claims from the SSID alone,
/// so its authentication provider is asked there; a probing helper is not).
enum AuthenticateExpectation {
    static func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge, portal: GroundTruth.Portal, expected: String,
                      why: (GroundTruth) -> String) -> CertifyCause? {
        guard truth.portal == portal, let (r, command) = truth.judged(entry), r.commandType == "authenticate",
              command.network?.ssid.text == judge.home, truth.hijack == nil, truth.ipv6Only == nil, r.result != expected else { return nil }
        return CertifyCause(reason: "authenticate answered \(r.result) at seq \(entry.seq), expected \(expected): \(why(truth))",
                            context: [command.entry, truth.portalMark])
    }
}
