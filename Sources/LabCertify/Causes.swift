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

/// Walks one run's trace in order, keeping the lab's ground truth (`GroundTruth`: is the portal session alive,
/// is the portal one the helper can sign in to, is DNS hijacked: the gate observations, the lab's own actions and
/// the helper's successful logins and logoffs), and asks every check (`CertifyCheck.cause`) whether a record
/// deviates in its domain from what that truth expects.
struct GroundTruthWalk {
    let judge: Judge
    let run: CertificationRunRecord

    func deviations() -> [CertificationDeviation] {
        var out: [CertificationDeviation] = []
        var truth = GroundTruth(run.records)
        for r in run.records {
            for check in CertifyChecks.byCauseOrder {
                guard let cause = check.cause(of: r, truth: truth, judge: judge) else { continue }
                out.append(CertificationDeviation(check: check.id, run: run.run, seq: r.seq, reason: cause.reason,
                                                  evidence: ([r] + cause.context.compactMap { $0 }).map { judge.evidence(run.run, $0) }))
            }
            truth.advance(past: r, judge: judge)
        }
        return out
    }
}

extension Judge {
    /// A claim of a secure network (as presented) without a password: hotspotd ignores it.
    func secureWithoutPassword(_ claim: TraceNetwork, presented: [TraceNetwork]) -> Bool {
        let secure = presented.first { $0.ssid.text == claim.ssid.text }.map { $0.security != "open" } ?? false
        return secure && (claim.password ?? "").isEmpty
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
