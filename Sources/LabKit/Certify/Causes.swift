import HotspotCore
import Foundation
import HotspotProtocol

/// One answer (or one observation of the world) that deviated from what the lab's ground truth expected at that
/// moment: the cause of a failure, reported on the check that owns it (docs/CERTIFY.md, "Cause first").
public struct CertificationDeviation: Sendable, Hashable {
    /// The check that owns the command (or the rule) that deviated.
    public var check: String
    public var run: CertificationRun
    /// The trace record's sequence number.
    public var seq: Int
    /// What deviated, and what the ground truth was, in one sentence.
    public var reason: String
    /// The deviating record first, then the ground truth records that make it wrong.
    public var evidence: [String]
}

/// Walks one run's trace in order, keeping the lab's ground truth (is the portal session alive, is the portal
/// one the helper can sign in to, is DNS hijacked: the gate observations, the lab's own actions and the
/// helper's successful logins and logoffs), and derives for every answer the one it expected.
struct GroundTruthWalk {
    let judge: Judge
    let run: CertificationRunRecord

    /// What the café's portal is at a moment of the run.
    enum Portal { case normal, erring, changed, cookies }

    func deviations() -> [CertificationDeviation] {
        var out: [CertificationDeviation] = []
        let trace = run.records
        let commands = Dictionary(trace.filter { judge.kind($0, "command") }.compactMap { c in c["id"]?.intValue.map { ($0, c) } },
                                  uniquingKeysWith: { first, _ in first })
        // Answers hotspotd found invalid for their command: valid-results owns them, not the command's check.
        let invalid = Set(trace.filter { judge.kind($0, "irregular") && $0["irregularity"]?.stringValue == "invalidResult" }
            .compactMap { $0["command"]?.intValue })
        var sessionAlive = false
        var sessionEnded: JSON?          // the record that ended it (the lab's action or a logoff answer)
        var signedIn: JSON?              // the answer that started it
        var portal = Portal.normal
        var portalMark: JSON?
        var hijack: JSON?
        var highForNotCaptive: JSON?
        var failedStarts: Set<String> = []  // the roles whose provider answered start() false
        func add(_ check: String, _ record: JSON, _ reason: String, _ context: [JSON?]) {
            out.append(CertificationDeviation(check: check, run: run.run, seq: record["seq"]?.intValue ?? 0, reason: reason,
                                              evidence: ([record] + context.compactMap { $0 }).map { judge.evidence(run.run, $0) }))
        }
        for r in trace {
            let seq = r["seq"]?.intValue ?? 0
            switch r["kind"]?.stringValue {
            case "labAction":
                guard let action = r["action"], let what = action["certify"]?.stringValue else { continue }
                switch what {
                case RunDriver.sessionEndedMark:
                    sessionAlive = false
                    sessionEnded = r
                case RunDriver.portalMark:
                    portal = SessionCookiesCheck.requiresCookies(action) ? .cookies : action["kind"]?.stringValue == "form-login" ? .erring : .changed
                    portalMark = r
                case RunDriver.hijackMark:
                    hijack = r
                case RunDriver.dnsRestoredMark:
                    hijack = nil
                case RunDriver.gateMark:
                    let held = action["authenticated"]?.boolValue ?? false
                    if sessionAlive && !held && SessionCookiesCheck.ownsGateReading(action) {
                        add(SessionCookiesCheck.id, r, "authenticate answered success, but at seq \(seq) the gate does not hold the station: the cookie portal did not let it in", [signedIn])
                        sessionAlive = false
                    } else if sessionAlive && !held {
                        add("logoff", r, "the portal session ended at seq \(seq) with no logoff command and no action of the lab "
                            + "(the gate no longer holds the station after \(action["label"]?.stringValue ?? "?")): the helper ended its session on its own",
                            [signedIn])
                        sessionAlive = false
                        sessionEnded = r
                    } else if !sessionAlive && held && action["label"]?.stringValue == "afterLogoff" {
                        add("logoff", r, "logoff answered success but the portal session is still up (the gate holds the station)", [sessionEnded])
                        sessionAlive = true
                    }
                default:
                    continue
                }
            case "irregular":
                switch r["irregularity"]?.stringValue {
                case "noAnswer":
                    // A provider that answered start() false gets no command: its commands go unanswered because
                    // of that start, which start-stop owns (below), not because of a deadline.
                    if failedStarts.contains(Judge.role(handling: r["commandType"]?.stringValue ?? "")) { continue }
                    add("deadlines", r, "no answer to \(r["commandType"]?.stringValue ?? "a") command \(r["command"]?.intValue ?? 0) by its deadline", [])
                case "invalidResult":
                    add("valid-results", r, "answered \(r["commandType"]?.stringValue ?? "a command") with \(r["result"]?.stringValue ?? "?"), not a valid result for it", [])
                default:
                    continue
                }
            case "providerStarted" where r["ok"]?.boolValue == false:
                failedStarts.insert(r["role"]?.stringValue ?? "")
                add("start-stop", r, "the \(r["role"]?.stringValue ?? "?") of \(r["app"]?.stringValue ?? "?") answered start() false "
                    + "(a provider that does not start gets no command; each of them counts as not answered)", [])
            case "rejected" where Judge.strayResponses.contains(r["reason"]?.stringValue ?? ""):
                add("one-response", r, "a response hotspotd rejected (\(r["reason"]?.stringValue ?? "?")): \(r["message"]?.stringValue ?? "")", [])
            case "helperReport" where r["report"]?.stringValue == "deliverCalledByProvider":
                add("no-deliver", r, "the provider called deliver() (the framework delivers what handleCommand returns): \(r["message"]?.stringValue ?? "")", [])
            case "helperReport" where r["report"]?.stringValue == Judge.evaluationNetworkReport:
                add("evaluation-no-network", r, "the evaluation provider tried the network (it has none): \(r["message"]?.stringValue ?? "")", [])
            case "helperReport" where Judge.failingReports.contains(r["report"]?.stringValue ?? ""):
                add("one-response", r, "the SDK refused on the helper's side (\(r["report"]?.stringValue ?? "?")): \(r["message"]?.stringValue ?? "")", [])
            case "response":
                guard let id = r["command"]?.intValue, !invalid.contains(id), let command = commands[id] else { continue }
                let result = r["result"]?.stringValue ?? "?"
                let ssid = command["network"]?["ssid"]?.stringValue
                switch r["commandType"]?.stringValue {
                case "filterScanList":
                    let presented = command["networkList"]?.arrayValue ?? []
                    let claims = r["networkList"]?.arrayValue ?? []
                    if let bare = claims.first(where: { judge.secureWithoutPassword($0, presented: presented) }) {
                        add("scan-list-passwords", r, "filterScanList claimed the secure network \(SSIDText.inline(wire: bare)) without a password", [command])
                    }
                    // A secure claim without a password is ignored by hotspotd: it claims nothing.
                    if let wrong = claims.first(where: { n in
                        let claimed = n["ssid"]?.stringValue ?? ""
                        return (judge.decoys.contains(claimed) || claimed == judge.notCaptive) && !judge.secureWithoutPassword(n, presented: presented)
                    }) {
                        add("decoys", r, "filterScanList claimed \(SSIDText.inline(wire: wrong)), a network it cannot know", [command])
                    }
                case "evaluate":
                    let confidence = r["network"]?["confidence"]?.intValue ?? 0
                    if ssid == judge.home, r["network"]?["confidence"]?.intValue == 0, portal == .normal, hijack == nil, !sessionAlive {
                        // Never claimed, so never asked to sign in: every later check of the run is off course.
                        add("reauthenticate", r, "evaluate of \(SSIDText.inline(ssid ?? "")) answered none at seq \(seq), so the helper never claimed it "
                            + "and was never asked to sign in: expected low or high (the network it is certified on, captive behind a form-login portal the account signs in to)",
                            [command])
                    } else if ssid == judge.notCaptive, confidence == 2 {
                        highForNotCaptive = r
                        add("not-high-for-everything", r, "evaluate of \(judge.notCaptive), a network with the internet behind it, answered high", [command])
                    } else if let ssid, judge.decoys.contains(ssid), confidence > 0 {
                        if confidence == 2, let high = highForNotCaptive {
                            // High for everything: the not-captive network's check owns it (its first answer is the cause).
                            add("not-high-for-everything", r, "evaluate of the decoy \(SSIDText.inline(ssid)) answered high too: high for every network", [command, high])
                        } else {
                            add("decoys", r, "evaluate of the decoy \(SSIDText.inline(ssid)) answered confidence \(confidence), not none", [command])
                        }
                    }
                // Under a DNS hijack nothing says what authenticate should answer (a pair's evaluation provider claims
                // from the SSID alone, so its authentication provider is asked there; a probing helper is not).
                case "authenticate" where ssid == judge.home && hijack == nil:
                    let expected: (check: String, result: String, why: String) = switch portal {
                    case .normal: ("reauthenticate", "success", "the café's form-login portal accepts the account")
                    case .erring: ("temporary-failure", "temporaryFailure", "the portal's sign-in answers 503 since seq \(portalMark?["seq"]?.intValue ?? 0)")
                    case .changed: ("unsupported-network", "unsupportedNetwork", "the café's portal became a voucher portal at seq \(portalMark?["seq"]?.intValue ?? 0)")
                    case .cookies: (SessionCookiesCheck.id, "success", SessionCookiesCheck.expectation(since: portalMark))
                    }
                    if result != expected.result {
                        if portal == .cookies {
                            let (reason, context) = SessionCookiesCheck.deviation(result: result, seq: seq, portalMark: portalMark, trace: trace)
                            add(expected.check, r, reason, [command] + context)
                        } else {
                            add(expected.check, r, "authenticate answered \(result) at seq \(seq), expected \(expected.result): \(expected.why)", [command, portalMark])
                        }
                    }
                    if result == "success" && (portal == .normal || portal == .cookies) {
                        sessionAlive = true
                        signedIn = r
                    }
                case "maintain" where ssid == judge.home:
                    let maintain = command["network"]?["didJustJoin"]?.boolValue == true ? "maintain with didJustJoin" : "maintain"
                    if let hijack {
                        if result == "success" {
                            add("dns-hijack", r, "maintain answered success at seq \(seq) while every name resolved to the gateway (since seq \(hijack["seq"]?.intValue ?? 0)): a name that resolves is not the internet",
                                [command, hijack])
                        }
                    } else if !sessionAlive, let ended = sessionEnded?["seq"]?.intValue, (command["seq"]?.intValue ?? 0) < ended {
                        // Sent while the session was up and answered after the lab ended it: the helper's probe may
                        // have run on either side of that moment (or been cut by it), so no answer is wrong. The
                        // next maintain, sent after the end, is the one judged. (Seen with two labs at a time: the
                        // scaled maintain timer fired just before the lab flushed the gate.)
                        continue
                    } else if !sessionAlive, result != "authenticationRequired" {
                        let ended = "the portal session had ended" + (sessionEnded.map { " at seq \($0["seq"]?.intValue ?? 0)" } ?? "")
                        add("maintain", r, result == "success"
                            ? "\(maintain) answered success at seq \(seq), but \(ended): the helper answered from memory instead of probing (expected authenticationRequired)"
                            : "\(maintain) answered \(result) at seq \(seq) after \(ended) (expected authenticationRequired: log in again)", [command, sessionEnded])
                    } else if sessionAlive, !["success", "authenticationRequired"].contains(result) {
                        add("maintain", r, "\(maintain) answered \(result) at seq \(seq) while the portal session was up (expected success)",
                            [command, signedIn])
                    }
                case "logoff":
                    if result != "success" {
                        add("logoff", r, "logoff answered \(result) at seq \(seq), expected success", [command])
                    } else {
                        sessionAlive = false
                        sessionEnded = r
                    }
                default:
                    continue
                }
            default:
                continue
            }
        }
        return out
    }
}

extension Judge {
    /// A claim of a secure network (as presented) without a password: hotspotd ignores it.
    func secureWithoutPassword(_ claim: JSON, presented: [JSON]) -> Bool {
        let secure = presented.first { $0["ssid"] == claim["ssid"] }.map { $0["security"]?.stringValue != "open" } ?? false
        return secure && (claim["password"]?.stringValue ?? "").isEmpty
    }

    /// Every deviation of every run, in run order then trace order.
    func deviations() -> [CertificationDeviation] {
        runs.flatMap { GroundTruthWalk(judge: self, run: $0).deviations().sorted { $0.seq < $1.seq } }
    }

    /// Judges the checks cause first: a check that owns a deviation fails at its first one; a check that fails
    /// on its own rule while another check's deviation took one of its runs off course is "not reached".
    func report(helpers: [String], checks: [CertificationCheck]) -> CertificationReport {
        let all = deviations()
        var causes: [CertificationDeviation] = []
        for run in runs.map(\.run) { if let first = all.first(where: { $0.run == run }) { causes.append(first) } }
        let results = checks.map { check in decide(check, own: judge(check), deviations: all, causes: causes) }
        // Every failure names its cause (docs/CERTIFY.md, "Cause first"): a check that failed its own rule with no
        // deviation in its runs is its own cause.
        for result in results where !result.passed { if let cause = result.cause, !causes.contains(cause) { causes.append(cause) } }
        return CertificationReport(helpers: helpers, results: results, runs: runs, causes: causes)
    }

    func decide(_ check: CertificationCheck, own: CheckResult, deviations: [CertificationDeviation], causes: [CertificationDeviation]) -> CheckResult {
        if let mine = deviations.first(where: { $0.check == check.id }) {
            let extra = own.passed ? [] : own.evidence.filter { !mine.evidence.contains($0) }
            return CheckResult(check: check, passed: false, reason: mine.reason, evidence: mine.evidence + extra, cause: mine)
        }
        guard !own.passed else { return own }
        if let cause = causes.first(where: { check.runs.contains($0.run) }) {
            return CheckResult(check: check, passed: false,
                               reason: "not reached: run \(cause.run.rawValue) went off course at seq \(cause.seq) (cause: \(cause.check): \(cause.reason))",
                               evidence: own.evidence, notReached: true, cause: cause)
        }
        var failed = own
        failed.cause = ownCause(own)
        return failed
    }

    /// A failure no deviation explains is its own cause: its reason, at the first trace record of its evidence (the
    /// run cut short, a rule of its own the walk does not follow, the lab that could not run).
    func ownCause(_ own: CheckResult) -> CertificationDeviation {
        var run = own.check.runs.first ?? .scan
        var seq = 0
        for line in own.evidence {
            guard line.hasPrefix("["), let close = line.firstIndex(of: "]"),
                  let named = CertificationRun(rawValue: String(line[line.index(after: line.startIndex)..<close])) else { continue }
            let rest = line[close...].dropFirst()
            if rest.hasPrefix(" seq "), let number = Int(rest.dropFirst(5).prefix { $0.isNumber }) {
                (run, seq) = (named, number)
                break
            }
        }
        return CertificationDeviation(check: own.check.id, run: run, seq: seq, reason: own.reason, evidence: own.evidence)
    }
}
