import Foundation
import HotspotProtocol
import PortalKinds

/// The `session-cookies` check (docs/CERTIFY.md): the run `cookie-portal` signs in at the café, then the café's portal
/// becomes one that requires its session cookie on the sign-in (`session-cookie`, with the CSRF token of its form,
/// over HTTPS only: the cookie is `Secure; HttpOnly`), as most venue portals do; the device re-joins and the helper
/// must sign in again. A helper whose HTTP keeps no cookies is refused (403) and fails here, named as the cause.
///
/// Everything of the check is here: its definition, its run (the driver's steps), its own rule, and the cause it
/// owns in the ground-truth walk (authenticate on the cookie portal: expected success).
enum SessionCookiesCheck {
    static let id = "session-cookies"
    static let check = CertificationCheck(
        id: id, title: "keeps the portal's session cookie from its sign-in page to the sign-in (HTTPS, Secure and HttpOnly, with a CSRF token)",
        required: true, runs: [.cookiePortal])

    /// The portal the café becomes: its form login, behind the cookie and the token, over HTTPS only.
    static let portalKind = "form-login"
    static let portalSettings = [SessionCookie.setting: "true", SessionCookie.csrfSetting: "true", PortalTLS.setting: "true"]

    /// The gate reading after the sign-in on the cookie portal.
    static let gateLabel = "afterCookieSignIn"
    /// The lab's mark of what the cookie portal refused (its log's lines), after the run.
    static let refusedMark = "the cookie portal refused sign-ins"

    /// The `labAction` of the café's portal changing asks for the session cookie.
    static func requiresCookies(_ action: JSON) -> Bool {
        action["settings"]?[SessionCookie.setting]?.stringValue == "true"
    }

    /// Why authenticate must succeed there, for the walk's reason.
    static func expectation(since mark: JSON?) -> String {
        "the café's portal requires the session cookie its sign-in page sets (Secure, HttpOnly, over HTTPS) and the CSRF token of its form"
            + " since seq \(mark?["seq"]?.intValue ?? 0): a helper must send the cookie back on the sign-in, as URLSession does"
    }

    /// The lab's record of what the portal refused in `trace` (nil: nothing refused).
    static func refusals(in trace: [JSON]) -> JSON? {
        trace.first { $0["kind"]?.stringValue == "labAction" && $0["action"]?["certify"]?.stringValue == refusedMark }
    }

    /// The walk's cause for an authenticate on the cookie portal that did not succeed: the reason, and the lab's
    /// record of the refusals as evidence.
    static func deviation(result: String, seq: Int, portalMark: JSON?, trace: [JSON]) -> (reason: String, context: [JSON?]) {
        let refused = refusals(in: trace)
        let lines = refused?["action"]?["lines"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let seen = lines.first.map { "; the portal refused: \($0)" } ?? ""
        return ("authenticate answered \(result) at seq \(seq), expected success: \(expectation(since: portalMark))\(seen)", [portalMark, refused])
    }

    /// A gate reading after the cookie sign-in that shows the station outside: the helper answered success but
    /// the portal did not let it in (a deviation of this check, not the helper ending its session on its own).
    static func ownsGateReading(_ action: JSON) -> Bool { action["label"]?.stringValue == gateLabel }

    /// The check's own rule over the run.
    static func judge(_ judge: Judge, _ check: CertificationCheck) -> CheckResult {
        let run = judge.record(.cookiePortal)
        let answers = judge.responses(.cookiePortal, to: "authenticate")
        let lines = refusals(in: judge.records(.cookiePortal)).map { judge.evidence(.cookiePortal, $0) }.map { [$0] } ?? []
        guard answers.count >= 2, let last = answers.last else {
            return CheckResult(check: check, passed: false, reason: "the helper was not asked to sign in to the portal that requires its session cookie",
                               evidence: answers.map { judge.evidence(.cookiePortal, $0) } + (run?.notes ?? []))
        }
        let result = last["result"]?.stringValue ?? "?"
        guard result == "success" else {
            return CheckResult(check: check, passed: false,
                               reason: "authenticate answered \(result) on the portal that requires its session cookie (the cookie its sign-in page sets was not sent back?)",
                               evidence: [judge.evidence(.cookiePortal, last)] + lines)
        }
        guard run?.gate[gateLabel] == true else {
            return CheckResult(check: check, passed: false, reason: "authenticate answered success, but the gate does not hold the station: the cookie portal did not let it in",
                               evidence: [judge.evidence(.cookiePortal, last)] + lines + (run?.notes ?? []))
        }
        return CheckResult(check: check, passed: true, reason: "signed in to the portal that requires its session cookie and CSRF token (HTTPS, Secure, HttpOnly)",
                           evidence: [judge.evidence(.cookiePortal, last), "gate after the sign-in: authenticated"])
    }

    /// The portal log's refusals (`... refused: no session cookie ...`, SessionCookiePortal).
    static func refusedLines(inLog text: String) -> [String] {
        text.split(separator: "\n").filter { $0.contains(" refused: ") }.map { line in
            // Drop the timestamp.
            String(line.split(separator: " ", maxSplits: 1).last ?? line)
        }
    }
}

extension RunDriver {
    /// The run `cookie-portal`: sign in at the café, leave, the portal becomes the cookie portal, re-join; then the
    /// gate is read and what the portal refused is marked in the trace.
    func cookiePortal() throws {
        defer { markCookieRefusals() }
        try changedPortal(kind: SessionCookiesCheck.portalKind, settings: SessionCookiesCheck.portalSettings)
        observeGate(SessionCookiesCheck.gateLabel)
    }

    func markCookieRefusals() {
        guard let log = try? homeHotspot().portalService?.log, let text = try? String(contentsOfFile: log, encoding: .utf8) else { return }
        let lines = SessionCookiesCheck.refusedLines(inLog: text)
        guard !lines.isEmpty else { return }
        note("the cookie portal refused: " + lines.joined(separator: " | "))
        mark(SessionCookiesCheck.refusedMark, ["lines": .array(lines.prefix(5).map { JSON.string($0) })])
    }
}
