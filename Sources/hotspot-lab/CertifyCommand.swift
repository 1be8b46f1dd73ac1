import ArgumentParser
import Foundation
import HotspotProtocol
import LabKit

/// `hotspot-lab certify --helper CMD`: a vendor's helper through the battery of named checks
/// (docs/CERTIFY.md); pass or fail per check with the trace records that prove it.
struct CertifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "certify",
        abstract: "Certify a helper: named checks, each pass or fail with its evidence from hotspotd's trace; exit 0 only when every required check passes.")

    @Option(name: .customLong("helper"), help: "The helper command to certify (any executable speaking the protocol; repeat for several processes).")
    var helpers: [String] = []

    @Option(help: "The certification topology.")
    var topology: String = "topologies/certify.yaml"

    @Option(name: .customLong("check"), help: "Run only this check (repeatable); default all.")
    var checks: [String] = []

    @Option(help: "Run only shard K of N of the checks (K/N).")
    var shard: String?

    @Flag(help: "Print the result as JSON on stdout.")
    var json = false

    @Option(help: "Write a JUnit XML report (one test case per check).")
    var junit: String?

    @Option(help: "Write a self-contained HTML report.")
    var html: String?

    @Option(help: "Log folder root (default $HOTSPOT_LAB_LOGS or /tmp/hotspot-lab).")
    var logs: String?

    @Flag(help: "List the checks and exit.")
    var list = false

    @OptionGroup var placement: Placement

    func validate() throws {
        if let shard { do { _ = try Shard.parse(shard) } catch { throw ValidationError("\(error)") } }
        let unknown = checks.filter { id in !CertificationCheck.all.contains { $0.id == id } }
        if !unknown.isEmpty {
            throw ValidationError("--check \(unknown.joined(separator: ", ")): unknown; expected some of: \(CertificationCheck.all.map(\.id).joined(separator: ", "))")
        }
        if !list && helpers.isEmpty { throw ValidationError("--helper CMD is required: the helper to certify") }
    }

    func run() async throws {
        if list {
            for c in CertificationCheck.all { print("\(c.id): \(c.title) (runs: \(c.runs.map(\.rawValue).joined(separator: ", ")))") }
            return
        }
        let path = ScenarioFiles.resolveFolder(topology)
        do {
            _ = try TopologyParser.load(path: path)
        } catch let error as TopologyError {
            FileHandle.standardError.write(Data("hotspot-lab certify: \(error)\n".utf8))
            throw ExitCode(2)
        }
        try await placement.relayIfNeeded()
        var selected = checks.isEmpty ? CertificationCheck.all.map(\.id) : checks
        if let shard { selected = try Shard.parse(shard).select(selected) }
        let certifier = try Certifier(topologyPath: path, helpers: helpers, logRoot: logs, only: selected)
        let quiet = json
        certifier.onProgress = { line in if !quiet { FileHandle.standardError.write(Data("certify: \(line)\n".utf8)) } }
        let report = certifier.run()
        if json {
            print(CertifyReports.json(report))
        } else {
            for r in report.results {
                print("\(r.passed ? "✓" : "✗") \(r.check.id): \(r.check.title) — \(r.reason)")
                for line in (r.passed ? Array(r.evidence.prefix(2)) : r.evidence) { print("    \(line)") }
            }
            for run in report.runs {
                print(String(format: "run %@: %.1f s, logs %@%@", run.run.rawValue, run.duration, run.logDirectory, run.error.map { ", stopped: \($0)" } ?? ""))
            }
            let failed = report.results.filter { !$0.passed && $0.check.required }
            print(failed.isEmpty ? "CERTIFIED: \(report.results.count) checks passed" : "NOT CERTIFIED: \(failed.count) required check(s) failed: \(failed.map(\.check.id).joined(separator: ", "))")
        }
        if let junit { try ReportFile.write(CertifyReports.junit(report), to: junit) }
        if let html { try ReportFile.write(CertifyReports.html(report), to: html) }
        if !report.passed { throw ExitCode(1) }
    }
}

enum CertifyReports {
    static func json(_ report: CertificationReport) -> String {
        let checks: [JSON] = report.results.map { r in
            ["id": .string(r.check.id), "title": .string(r.check.title), "required": .bool(r.check.required), "passed": .bool(r.passed),
             "reason": .string(r.reason), "evidence": .array(r.evidence.map(JSON.string))]
        }
        let runs: [JSON] = report.runs.map { run in
            ["run": .string(run.run.rawValue), "duration_s": .number(run.duration), "logs": .string(run.logDirectory),
             "trace": run.traceFile.map(JSON.string) ?? .null, "error": run.error.map(JSON.string) ?? .null,
             "notes": .array(run.notes.map(JSON.string))]
        }
        return JSON.object(["helpers": .array(report.helpers.map(JSON.string)), "certified": .bool(report.passed),
                            "checks": .array(checks), "runs": .array(runs)]).text
    }

    static func junit(_ report: CertificationReport) -> String {
        let failures = report.results.filter { !$0.passed }.count
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"hotspot-lab certify\" tests=\"\(report.results.count)\" failures=\"\(failures)\">\n"
        xml += "  <testsuite name=\"certify \(Reports.escape(report.helpers.joined(separator: " + ")))\" tests=\"\(report.results.count)\" failures=\"\(failures)\">\n"
        for r in report.results {
            xml += "    <testcase classname=\"certify\" name=\"\(Reports.escape(r.check.id)): \(Reports.escape(r.check.title))\">\n"
            if !r.passed { xml += "      <failure message=\"\(Reports.escape(r.reason))\">\(Reports.escape(r.evidence.joined(separator: "\n")))</failure>\n" }
            xml += "      <system-out>\(Reports.escape(([r.reason] + r.evidence).joined(separator: "\n")))</system-out>\n    </testcase>\n"
        }
        return xml + "  </testsuite>\n</testsuites>\n"
    }

    static func html(_ report: CertificationReport) -> String {
        var body = "<h1>hotspot-lab certify: \(report.passed ? "CERTIFIED" : "NOT CERTIFIED")</h1>\n"
        body += "<p>Helper: <code>\(Reports.escape(report.helpers.joined(separator: " + ")))</code></p>\n<table>\n<tr><th>check</th><th>verdict</th><th>why</th></tr>\n"
        for r in report.results {
            body += "<tr class=\"\(r.passed ? "pass" : "fail")\"><td><b>\(Reports.escape(r.check.id))</b><br>\(Reports.escape(r.check.title))</td>"
            body += "<td>\(r.passed ? "pass" : "FAIL")</td><td>\(Reports.escape(r.reason))"
            if !r.evidence.isEmpty { body += "<pre>\(Reports.escape(r.evidence.joined(separator: "\n")))</pre>" }
            body += "</td></tr>\n"
        }
        body += "</table>\n<h2>Runs</h2>\n<ul>\n"
        for run in report.runs {
            body += "<li><b>\(run.run.rawValue)</b> \(String(format: "%.1f s", run.duration)): logs <a href=\"file://\(Reports.escape(run.logDirectory))\">\(Reports.escape(run.logDirectory))</a>"
            if let trace = run.traceFile { body += ", trace <a href=\"file://\(Reports.escape(trace))\">trace.jsonl</a>" }
            body += "<br><small>\(Reports.escape(run.notes.joined(separator: " · ")))</small></li>\n"
        }
        body += "</ul>\n"
        return """
            <!doctype html><html><head><meta charset="utf-8"><title>hotspot-lab certify</title><style>
            body{font-family:sans-serif;margin:2em;max-width:70em} table{border-collapse:collapse;width:100%}
            td,th{border:1px solid #ccc;padding:.4em;vertical-align:top;text-align:left} tr.pass td:nth-child(2){color:#070}
            tr.fail td:nth-child(2){color:#b00;font-weight:bold} pre{white-space:pre-wrap;font-size:.8em;background:#f6f6f6;padding:.4em}
            </style></head><body>
            \(body)</body></html>

            """
    }
}
