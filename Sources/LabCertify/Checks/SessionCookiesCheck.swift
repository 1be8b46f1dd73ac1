import Foundation
import HotspotProtocol
import PortalKinds
import LabTopology

/// `session-cookies` (docs/CERTIFY.md): the run `cookie-portal` signs in at the café, then the café's portal becomes
/// one that requires its session cookie on the sign-in (`session-cookie`, with the CSRF token of its form, over HTTPS
/// only: the cookie is `Secure; HttpOnly`), as most venue portals do; the device re-joins and the helper must sign in
/// again. A helper whose HTTP keeps no cookies is refused (403) and fails here, named as the cause.
///
/// Everything of the check is here: its definition, its run (the driver's steps), its own rule, and the causes it
/// owns in the ground-truth walk: an authenticate on the cookie portal not answered success, and a gate reading
/// after that sign-in without the station (the walk's `GroundTruth` knows the cookie portal by `requiresCookies`
/// and this reading by `ownsGateReading`, so that logoff does not own it).
struct SessionCookiesCheck: CertifyCheck {
    let id = "session-cookies"
    let title = "keeps the portal's session cookie from its sign-in page to the sign-in (HTTPS, Secure and HttpOnly, with a CSRF token)"
    let runs: [CertificationRun] = [.cookiePortal]
    let position = 12.5

    /// The portal the café becomes: its form login, behind the cookie and the token, over HTTPS only.
    static let portalKind = "form-login"
    static let portalSettings = [SessionCookie.setting: "true", SessionCookie.csrfSetting: "true", PortalTLS.setting: "true"]

    /// The gate reading after the sign-in on the cookie portal.
    static let gateLabel = "afterCookieSignIn"
    /// The lab's mark of what the cookie portal refused (its log's lines), after the run.
    static let refusedMark = "the cookie portal refused sign-ins"

    /// The lab's mark of the café's portal changing asks for the session cookie.
    static func requiresCookies(_ action: LabAction) -> Bool {
        action.settings?[SessionCookie.setting] == "true"
    }

    /// A gate reading after the cookie sign-in: one that shows the station outside is this check's deviation (the
    /// helper answered success but the portal did not let it in), not the helper ending its session on its own.
    static func ownsGateReading(_ action: LabAction) -> Bool { action.label == gateLabel }

    /// Why authenticate must succeed there, for the walk's reason.
    static func expectation(since mark: TraceEntry?) -> String {
        "the café's portal requires the session cookie its sign-in page sets (Secure, HttpOnly, over HTTPS) and the CSRF token of its form"
            + " since seq \(mark?.seq ?? 0): a helper must send the cookie back on the sign-in, as URLSession does"
    }

    /// The lab's record of what the portal refused in `trace` (nil: nothing refused).
    static func refusals(in trace: [TraceEntry]) -> TraceEntry? {
        trace.first { GroundTruth.mark($0)?.certify == refusedMark }
    }

    func judge(_ j: Judge) -> CheckResult {
        let run = j.record(.cookiePortal)
        let answers = j.responses(.cookiePortal, to: "authenticate")
        let lines = Self.refusals(in: j.records(.cookiePortal)).map { [j.evidence(.cookiePortal, $0)] } ?? []
        guard answers.count >= 2, let last = answers.last else {
            return j.fail(self, "the helper was not asked to sign in to the portal that requires its session cookie",
                          answers.map { j.evidence(.cookiePortal, $0.entry) } + (run?.notes ?? []))
        }
        guard last.result == "success" else {
            return j.fail(self, "authenticate answered \(last.result) on the portal that requires its session cookie (the cookie its sign-in page sets was not sent back?)",
                          [j.evidence(.cookiePortal, last.entry)] + lines)
        }
        guard run?.gate[Self.gateLabel] == true else {
            return j.fail(self, "authenticate answered success, but the gate does not hold the station: the cookie portal did not let it in",
                          [j.evidence(.cookiePortal, last.entry)] + lines + (run?.notes ?? []))
        }
        return j.pass(self, "signed in to the portal that requires its session cookie and CSRF token (HTTPS, Secure, HttpOnly)",
                      [j.evidence(.cookiePortal, last.entry), "gate after the sign-in: authenticated"])
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        if let mark = GroundTruth.mark(entry), mark.certify == RunDriver.gateMark {
            guard truth.sessionAlive, !(mark.authenticated ?? false), Self.ownsGateReading(mark) else { return nil }
            return CertifyCause(reason: "authenticate answered success, but at seq \(entry.seq) the gate does not hold the station: the cookie portal did not let it in",
                                context: [truth.signedIn])
        }
        // The reason quotes the portal's first refusal, and the lab's record of them is evidence.
        let refused = Self.refusals(in: truth.trace)
        let seen = refused?.record.labAction?.action.lines?.first.map { "; the portal refused: \($0)" } ?? ""
        guard var cause = AuthenticateExpectation.cause(of: entry, truth: truth, judge: judge, portal: .cookies, expected: "success",
                                                        why: { Self.expectation(since: $0.portalMark) + seen }) else { return nil }
        cause.context.append(refused)
        return cause
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
