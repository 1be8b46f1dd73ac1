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

    @Option(help: "How many runs' labs at once (each its own namespaces and radio medium, as run --jobs).")
    var jobs: Int = 2

    @Flag(help: "List the checks and exit.")
    var list = false

    @OptionGroup var placement: Placement

    func validate() throws {
        if let shard { do { _ = try Shard.parse(shard) } catch { throw ValidationError("\(error)") } }
        let unknown = checks.filter { id in !CertificationCheck.all.contains { $0.id == id } }
        if !unknown.isEmpty {
            throw ValidationError("--check \(unknown.joined(separator: ", ")): unknown; expected some of: \(CertificationCheck.all.map(\.id).joined(separator: ", "))")
        }
        guard jobs >= 1 else { throw ValidationError("--jobs: expected at least 1, found \(jobs)") }
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
        LabSignals.install(command: "certify")
        var selected = checks.isEmpty ? CertificationCheck.all.map(\.id) : checks
        if let shard { selected = try Shard.parse(shard).select(selected) }
        let certifier = try Certifier(topologyPath: path, helpers: helpers, logRoot: logs, only: selected)
        certifier.jobs = jobs
        let quiet = json
        certifier.onProgress = { line in if !quiet { FileHandle.standardError.write(Data("certify: \(line)\n".utf8)) } }
        let report = certifier.run()
        if json {
            print(CertifyReports.json(report))
        } else {
            for line in CertifyReports.text(report) { print(line) }
            for run in report.runs {
                print(String(format: "run %@: %.1f s, logs %@%@", run.run.rawValue, run.duration, run.logDirectory, run.error.map { ", stopped: \($0)" } ?? ""))
            }
            let failed = report.results.filter { !$0.passed && $0.check.required }
            let notReached = failed.filter(\.notReached).count
            print(failed.isEmpty ? "CERTIFIED: \(report.results.count) checks passed"
                : "NOT CERTIFIED: \(failed.count) required check(s) failed\(notReached > 0 ? " (\(notReached) not reached)" : ""): \(failed.map(\.check.id).joined(separator: ", "))")
        }
        if let junit { try ReportFile.write(CertifyReports.junit(report), to: junit) }
        if let html { try ReportFile.write(CertifyReports.html(report), to: html) }
        if !report.passed { throw ExitCode(1) }
    }
}
