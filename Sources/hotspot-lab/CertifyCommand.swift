import ArgumentParser
import Foundation
import HotspotProtocol
import LabKit
import HotspotSystem

/// `hotspot-lab certify --helper CMD`: a vendor's helper through the battery of named checks
/// (docs/CERTIFY.md); pass or fail per check with the trace records that prove it.
struct CertifyCommand: AsyncParsableCommand {
    /// The exit status when the lab, not the helper, failed every run a failed check reads (`noVerdict`): not 1, so a
    /// vendor's CI can tell "run again" from "fix the helper".
    static let noVerdictStatus: Int32 = 3

    static let configuration = CommandConfiguration(
        commandName: "certify",
        abstract: "Certify a helper: named checks, each pass or fail with its evidence from hotspotd's trace; exit 0 only when every required check passes.")

    @Option(name: .customLong("helper"), help: "The helper command to certify (any executable speaking the protocol; repeat for several processes).")
    var helpers: [String] = []

    @Option(help: "A provider pair's evaluation provider command (certifies an app instead of a helper; docs/PROVIDERS.md).")
    var evaluationProvider: String?

    @Option(help: "A provider pair's authentication provider command.")
    var authenticationProvider: String?

    @Option(help: "The provider pair's app bundle identifier.")
    var app: String = "com.hotspotlab.certify"

    @Option(help: "An app manifest: one app as a topology's `apps:` entry (bundle-id, evaluation-provider, authentication-provider; docs/TOPOLOGY.md \"Apps\"); its manager is enabled for the certification.")
    var appManifest: String?

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
    @OptionGroup var tier: TierOption

    func validate() throws {
        if let problem = ReportFile.refusal([("--junit", junit), ("--html", html)]) { throw ValidationError(problem) }
        if let shard { do { _ = try Shard.parse(shard) } catch { throw ValidationError("\(error)") } }
        let providers = evaluationProvider != nil || authenticationProvider != nil || appManifest != nil
        if appManifest != nil, evaluationProvider != nil || authenticationProvider != nil {
            throw ValidationError("--app-manifest and --evaluation-provider/--authentication-provider: the manifest declares the providers; give one or the other")
        }
        let available = CertificationCheck.all + (providers ? CertificationCheck.providerChecks : [])
        let unknown = checks.filter { id in !available.contains { $0.id == id } }
        if !unknown.isEmpty {
            let pairChecks = unknown.allSatisfy { id in CertificationCheck.providerChecks.contains { $0.id == id } }
            throw ValidationError(pairChecks
                ? "--check \(unknown.joined(separator: ", ")): a provider pair's check; give --evaluation-provider CMD --authentication-provider CMD"
                : "--check \(unknown.joined(separator: ", ")): unknown; expected some of: \(available.map(\.id).joined(separator: ", "))")
        }
        guard jobs >= 1 else { throw ValidationError("--jobs: expected at least 1, found \(jobs)") }
        if providers && !helpers.isEmpty {
            throw ValidationError("--helper and --evaluation-provider/--authentication-provider: certify a helper or a provider pair, not both")
        }
        if !list && !providers && helpers.isEmpty {
            throw ValidationError("--helper CMD is required: the helper to certify (or --evaluation-provider CMD --authentication-provider CMD: a provider pair)")
        }
    }

    func run() async throws {
        if list {
            // The thirteen; with a provider pair given, its four checks too.
            let listed = CertificationCheck.all + (evaluationProvider != nil || authenticationProvider != nil || appManifest != nil ? CertificationCheck.providerChecks : [])
            for c in listed { print("\(c.id): \(c.title) (runs: \(c.runs.map(\.rawValue).joined(separator: ", ")))") }
            return
        }
        let path = ScenarioFiles.resolveFolder(topology)
        do {
            _ = try TopologyParser.load(path: path)
        } catch let error as TopologyError {
            StandardStreams.error("hotspot-lab certify: \(error)\n")
            throw ExitCode(2)
        }
        // The pair (or the manifest, checked here, before a VM boots).
        var pair = evaluationProvider != nil || authenticationProvider != nil
            ? Certifier.providerApp(evaluation: evaluationProvider, authentication: authenticationProvider, bundleIdentifier: app) : nil
        if let appManifest {
            do {
                var manifest = try TopologyParser.loadApp(path: appManifest)
                guard manifest.hasProviders else {
                    throw TopologyError(file: appManifest, line: 1, column: 1, field: "helper",
                                        message: "a legacy helper app: certify it with --helper CMD; a manifest names a provider pair")
                }
                manifest.manager = ManagerConfiguration(isEnabled: true, evaluatedSSIDs: manifest.manager?.evaluatedSSIDs ?? [],
                                                        evaluationProviderBundleIdentifier: manifest.manager?.evaluationProviderBundleIdentifier)
                pair = manifest
            } catch let error as TopologyError {
                StandardStreams.error("hotspot-lab certify: \(error)\n")
                throw ExitCode(2)
            }
        }
        // No check of certify needs the air: the native tier by default where the radio tier would need the VM
        // (docs/SCENARIOS.md, "Tiers"); where the host has mac80211_hwsim, or with --link radio, the radio tier.
        let mode = try tier.mode() ?? (placement.location == .auto && placement.resolve().placement == .vm ? .veth : .radio)
        if mode == .radio { try await placement.relayIfNeeded(logsRoot: logs) }
        LabSignals.install(command: "certify")
        var selected = checks.isEmpty ? (CertificationCheck.all + (evaluationProvider != nil || authenticationProvider != nil || appManifest != nil
            ? CertificationCheck.providerChecks : [])).map(\.id) : checks
        if let shard { selected = try Shard.parse(shard).select(selected) }
        let certifier = try Certifier(topologyPath: path, helpers: helpers, logRoot: logs, only: selected, app: pair)
        certifier.jobs = jobs
        certifier.linkMode = mode
        if !json { StandardStreams.error("certify: the \(mode.tier) tier\(mode == .veth ? " (no radio, no VM; --link radio for mac80211_hwsim)" : "")\n") }
        let quiet = json
        certifier.onProgress = { line in if !quiet { StandardStreams.error("certify: \(line)\n") } }
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
            if report.noVerdict {
                let runs = report.labFailedRuns.map { "\($0.run.rawValue) (\($0.error ?? "?"))" }.joined(separator: "; ")
                print("NO VERDICT: the lab failed run(s) \(runs) in both attempts; the checks that read them "
                      + "(\(failed.map(\.check.id).joined(separator: ", "))) say nothing about the helper. Run certify again; "
                      + "exit status \(Self.noVerdictStatus)")
            } else {
                print(failed.isEmpty ? "CERTIFIED: \(report.results.count) checks passed"
                    : "NOT CERTIFIED: \(failed.count) required check(s) failed\(notReached > 0 ? " (\(notReached) not reached)" : ""): \(failed.map(\.check.id).joined(separator: ", "))")
            }
        }
        if let junit { try ReportFile.write(CertifyReports.junit(report), to: junit) }
        if let html { try ReportFile.write(CertifyReports.html(report), to: html) }
        if report.noVerdict { throw ExitCode(Self.noVerdictStatus) }
        if !report.passed { throw ExitCode(1) }
    }
}
