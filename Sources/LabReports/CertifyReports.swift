import Foundation
import HotspotProtocol
import LabCertify

/// `hotspot-lab certify`'s reports: text, JSON, JUnit and one self-contained HTML page (docs/CERTIFY.md,
/// "Reports"). Every one puts the cause first; a check that was not reached says so, and counts as a failure.
public enum CertifyReports {
    /// The text report's lines: the causes, then every check with its reason and evidence (all of it for a failure).
    public static func text(_ report: CertificationReport) -> [String] {
        var lines: [String] = []
        for cause in report.causes {
            lines.append("CAUSE [\(cause.run.rawValue)] seq \(cause.seq), check \(cause.check): \(cause.reason)")
            lines += cause.evidence.map { "    \($0)" }
        }
        for r in report.results {
            lines.append("\(r.passed ? "✓" : r.notReached ? "–" : "✗") \(r.check.id): \(r.check.title) — \(r.reason)")
            lines += (r.passed || r.notReached ? Array(r.evidence.prefix(2)) : r.evidence).map { "    \($0)" }
        }
        lines.append("tier: \(report.tier) (docs/SCENARIOS.md, \"Tiers\")")
        return lines
    }

    public static func json(_ report: CertificationReport) -> String {
        let checks: [JSON] = report.results.map { r in
            var o: [String: JSON] = [
                "id": .string(r.check.id), "title": .string(r.check.title), "required": .bool(r.check.required), "passed": .bool(r.passed),
                "verdict": .string(r.verdict), "reason": .string(r.reason), "evidence": .array(r.evidence.map(JSON.string)),
            ]
            if let cause = r.cause { o["cause"] = json(cause) }
            return .object(o)
        }
        let runs: [JSON] = report.runs.map { run in
            ["run": .string(run.run.rawValue), "duration_s": .number(run.duration), "logs": .string(run.logDirectory),
             "trace": run.traceFile.map(JSON.string) ?? .null, "error": run.error.map(JSON.string) ?? .null,
             "notes": .array(run.notes.map(JSON.string))]
        }
        return JSON.object(["helpers": .array(report.helpers.map(JSON.string)), "tier": .string(report.tier), "certified": .bool(report.passed), "noVerdict": .bool(report.noVerdict),
                            "causes": .array(report.causes.map(json)), "checks": .array(checks), "runs": .array(runs)]).text
    }

    static func json(_ d: CertificationDeviation) -> JSON {
        ["check": .string(d.check), "run": .string(d.run.rawValue), "seq": .number(Double(d.seq)), "reason": .string(d.reason),
         "evidence": .array(d.evidence.map(JSON.string))]
    }

    /// One test case per check; a check not reached is a failure too (its message says so and names the cause). A
    /// failed check that reads a run the lab failed in both attempts is an `<error>` (no verdict: run again), not a
    /// `<failure>` (fix the helper), as the exit status 3 says for the whole report.
    public static func junit(_ report: CertificationReport) -> String {
        let cases = report.results.map { r in
            let body = ((r.notReached ? [] : r.cause?.evidence ?? []) + r.evidence.filter { !(r.cause?.evidence.contains($0) ?? false) })
                .joined(separator: "\n")
            let outcome: JUnit.Outcome
            if r.passed {
                outcome = .passed
            } else if report.labFailed(r) {
                let runs = report.labFailedRuns(readBy: r)
                    .map { "\($0.run.rawValue) (\($0.error ?? "no address"))" }.joined(separator: "; ")
                outcome = .error(message: "no verdict: the lab failed run \(runs) twice; \(r.reason)", body: body)
            } else {
                outcome = .failure(message: r.reason, type: r.notReached ? "notReached" : "fail", body: body)
            }
            return JUnit.TestCase(
                classname: "certify", name: "\(r.check.id): \(r.check.title)",
                outcome: outcome,
                systemOut: ([r.reason] + r.evidence).joined(separator: "\n"))
        }
        return JUnit.document(documentName: "hotspot-lab certify", suiteName: "certify \(report.helpers.joined(separator: " + "))",
                              properties: [("tier", report.tier)], cases: cases)
    }

    /// The state path of a run: the states hotspotd entered, in order.
    static func path(_ run: CertificationRunRecord) -> [String] {
        run.records.compactMap { $0.record.transition?.to }
    }

    /// Evidence folded behind a disclosure: a trace record is long JSON that would widen the page.
    static func evidence(_ lines: [String], open: Bool = false, label: String = "evidence") -> String {
        guard !lines.isEmpty else { return "" }
        let e = HTMLReport.escape
        return "<details class=\"evidence\"\(open ? " open" : "")><summary>\(e(label)) (\(lines.count))</summary><pre>\(e(lines.joined(separator: "\n")))</pre></details>"
    }

    /// The page: the verdict, the causes (each with its run's state path on the state diagram), the checks
    /// (evidence folded), the runs. It fits a 1280 px window: cells wrap, nothing is wider than the page.
    public static func html(_ report: CertificationReport) -> String {
        let e = HTMLReport.escape
        let failed = report.results.filter { !$0.passed && $0.check.required }
        // The lab failed every run a failed check reads: no verdict on the helper (grey, as "not reached").
        let (verdictClass, verdict) = report.passed ? ("pass", "CERTIFIED") : report.noVerdict ? ("notreached", "NO VERDICT") : ("fail", "NOT CERTIFIED")
        var body = "<header><h1>hotspot-lab certify: <span class=\"verdict \(verdictClass)\">\(verdict)</span></h1>\n"
        if report.noVerdict {
            body += "<p class=\"meta\">The lab failed run(s) \(e(report.labFailedRuns.map(\.run.rawValue).joined(separator: ", "))) in both "
                + "attempts: the checks that read them say nothing about the helper. Run certify again.</p>\n"
        }
        body += "<p class=\"meta\">helper: <code>\(e(report.helpers.joined(separator: " + ")))</code> · \(e(report.tier)) tier · \(report.results.count - failed.count) of \(report.results.count) checks passed</p></header>\n<main>\n"
        if !report.causes.isEmpty {
            body += "<section id=\"cause\" class=\"cause\">\n<h2>Cause</h2>\n"
            for (index, cause) in report.causes.enumerated() {
                body += "<div class=\"callout fail\"><p><b>\(e(cause.check))</b> · run <b>\(e(cause.run.rawValue))</b> · seq \(cause.seq)</p>"
                body += "<p class=\"reason\">\(e(cause.reason))</p>" + evidence(cause.evidence, label: "trace records") + "</div>\n"
                if let run = report.runs.first(where: { $0.run == cause.run }) {
                    let states = path(run)
                    body += "<details class=\"path\"\(index == 0 ? " open" : "")><summary>state path of run \(e(cause.run.rawValue)): \(e(states.joined(separator: " → ")))</summary>\n"
                    body += HTMLReport.diagram(path: states, id: "diagram-\(index)", index: index, final: states.last) + "</details>\n"
                }
            }
            body += "</section>\n"
        }
        body += "<section id=\"checks\">\n<h2>Checks</h2>\n<table class=\"checks\"><colgroup><col class=\"c-check\"><col class=\"c-verdict\"><col class=\"c-why\"></colgroup>\n"
        body += "<thead><tr><th>check</th><th>verdict</th><th>why</th></tr></thead>\n<tbody>\n"
        for r in report.results {
            let css = r.passed ? "pass" : r.notReached ? "notreached" : "fail"
            body += "<tr class=\"\(css)\" id=\"check-\(HTMLReport.cssName(r.check.id))\"><td><b>\(e(r.check.id))</b><br><span class=\"muted\">\(e(r.check.title))</span></td>"
            body += "<td><span class=\"verdict \(css)\">\(e(r.verdict))</span></td><td class=\"why\">\(e(r.reason))"
            body += evidence(r.evidence) + "</td></tr>\n"
        }
        body += "</tbody></table>\n</section>\n<section id=\"runs\">\n<h2>Runs</h2>\n<ul class=\"runs\">\n"
        for run in report.runs {
            body += "<li><b>\(run.run.rawValue)</b> \(String(format: "%.1f s", run.duration)): logs <a href=\"\(e(HTMLReport.fileURL(run.logDirectory)))\">\(e(run.logDirectory))</a>"
            if let trace = run.traceFile { body += ", trace <a href=\"\(e(HTMLReport.fileURL(trace)))\">trace.jsonl</a>" }
            if let error = run.error { body += "<br><span class=\"error\">\(e(error))</span>" }
            body += evidence(run.notes, label: "notes") + "</li>\n"
        }
        body += "</ul>\n</section>\n</main>\n"
        return """
            <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>hotspot-lab certify</title><style>\(HTMLReport.css)\(css)</style></head><body>
            \(body)</body></html>

            """
    }

    /// Certify's additions to the scenario report's style: a fixed table layout so long evidence wraps instead of
    /// widening the page; verdict colours for "not reached".
    static let css = """
    table.checks { table-layout: fixed; width: 100%; }
    table.checks col.c-check { width: 24%; } table.checks col.c-verdict { width: 110px; } table.checks col.c-why { width: auto; }
    table.checks td { overflow-wrap: anywhere; word-break: break-word; }
    table.checks tr.fail td { background: #fef3f2; }
    table.checks tr.notreached td { background: #f9fafb; color: #475467; }
    .verdict.notreached { background: #98a2b3; }
    details.evidence pre, .callout pre { overflow-wrap: anywhere; word-break: break-all; max-width: 100%; }
    details summary { cursor: pointer; color: var(--accent); font-size: 12.5px; }
    section.cause { border-left: 5px solid var(--fail); }
    .callout p { margin: 2px 0; } .callout p.reason { font-size: 15px; font-weight: 600; color: var(--fail); }
    ul.runs li { margin: 4px 0; overflow-wrap: anywhere; }
    .error { color: var(--fail); }
    header .meta { word-break: normal; overflow-wrap: anywhere; }
    """
}
