import ArgumentParser
import Foundation
import HotspotSystem
import LabKit

/// `hotspot-lab demo`: the guide's four sequences (captive, not captive, cached, UI required) on the
/// default topologies with the reference helpers, each with a readable timeline. The README's main command.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the four sequences of the guide (captive, not captive, cached, UI required) end to end and print their timelines.")

    @Option(help: "Folder of the demo's scenario files.")
    var scenarios: String = "topologies/scenarios"

    @Option(help: "Log folder root (default $HOTSPOT_LAB_LOGS or /tmp/hotspot-lab).")
    var logs: String?

    @Option(help: "Also write a JUnit XML report here.")
    var junit: String?

    @Option(help: "Write a self-contained HTML report.")
    var html: String?

    @Option(help: "Sequences at a time, each in its own lab with its own radio medium (1: one after another, each step printed as it happens).")
    var jobs: Int = 2

    @OptionGroup var placement: Placement
    @OptionGroup var tier: TierOption

    static let sequences = ["captive", "not-captive", "cached", "ui-required"]

    /// Under TCG every program of the lab runs about 100x slower than native, and a debug build's programs take about
    /// 1.4x a release build's time there (bench/README.md, "Release builds and café-only certify runs").
    static var buildHint: String {
        #if DEBUG
        return "; a debug build: `swift build -c release && .build/release/hotspot-lab demo` takes about 0.7 of its time"
        #else
        return ""
        #endif
    }

    func validate() throws {
        if let problem = ReportFile.refusal([("--junit", junit), ("--html", html)]) { throw ValidationError(problem) }
        guard jobs >= 1 else { throw ValidationError("--jobs: expected at least 1, found \(jobs)") }
        _ = try tier.mode()
    }

    func run() async throws {
        let folder = ScenarioFiles.resolveFolder(scenarios)
        let loaded = try ScenarioFiles.load(Self.sequences.map { "\(folder)/\($0).yaml" })
        // The radio path by default (what the guide shows); the native tier on the host kernel with --link native.
        let mode = try tier.mode() ?? .radio
        if mode == .radio {
            labSay("hotspot-lab demo: the radio tier (mac80211_hwsim radios, hostapd, wpa_supplicant); `hotspot-lab demo --link native` runs the same sequences in seconds without radios" + Self.buildHint)
            try await placement.relayIfNeeded(logsRoot: logs)
        }
        LabSignals.install(command: "demo")
        let reporter = ProgressReporter()
        // Labs in parallel (issue 19): each lab has its own air namespace and radios, so they do not hear each
        // other; step lines carry the scenario's name and each timeline is printed whole when its sequence ends.
        reporter.named = jobs > 1
        let runner = ScenarioRunner(logRoot: logs)
        runner.linkMode = mode
        runner.onStep = { scenario, step in reporter.step(scenario, step) }
        // A worker brings its next lab up while the last one goes down (and its logs are copied out of the VM).
        let teardowns = LabTeardowns()
        runner.teardowns = teardowns
        let start = ContinuousClock.now
        let results = ParallelRuns.map(loaded, jobs: jobs) { scenario in
            reporter.say("\n━━ \(scenario.name) (\(mode.tier) tier): \(scenario.description)")
            let result = runner.run(scenario)
            reporter.finish(result, timeline: true)
            return result
        }
        teardowns.joinAll()
        reporter.summary(results, wall: ContinuousClock.now - start)
        if let junit { try ReportFile.write(JUnit.scenarios(results, suite: "hotspot-lab demo"), to: junit) }
        if let html { try ReportFile.write(HTMLReport.render(results, title: "hotspot-lab demo"), to: html) }
        if !results.allSatisfy(\.passed) { throw ExitCode(1) }
    }
}

/// `hotspot-lab run SCENARIO...`: runs scenario files (or folders of them), each in its own lab; a failed
/// scenario is retried once and marked flaky if it then passes.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run scenario files (docs/SCENARIOS.md): progress per step, JUnit/JSON reports, retry-once flaky marking.")

    @Argument(help: "Scenario files or folders of them (default topologies/scenarios).")
    var scenarios: [String] = []

    @Option(name: .customLong("helper"), help: "Run this helper command instead of the topology's (repeat for several).")
    var helpers: [String] = []

    @Option(help: "Run only shard K of N (K/N, 1-based): scenarios sorted by file name, every N-th from the K-th.")
    var shard: String?

    @Option(help: "Scenarios at a time, each in its own lab (every lab has its own radio medium).")
    var jobs: Int = 1

    @Flag(help: "Do not retry a failed scenario.")
    var noRetry = false

    @Option(help: "Write a JUnit XML report (one test case per scenario).")
    var junit: String?

    @Option(help: "Write a JSON result.")
    var json: String?

    @Option(help: "Write a self-contained HTML report.")
    var html: String?

    @Flag(help: "Print each scenario's timeline.")
    var timeline = false

    @Option(help: "Log folder root (default $HOTSPOT_LAB_LOGS or /tmp/hotspot-lab).")
    var logs: String?

    @OptionGroup var placement: Placement
    @OptionGroup var tier: TierOption

    func validate() throws {
        if let problem = ReportFile.refusal([("--junit", junit), ("--json", json), ("--html", html)]) { throw ValidationError(problem) }
        _ = try tier.mode()
        if let shard {
            do { _ = try Shard.parse(shard) } catch { throw ValidationError("\(error)") }
        }
        guard jobs >= 1 else { throw ValidationError("--jobs: expected at least 1, found \(jobs)") }
    }

    func run() async throws {
        var files = try ScenarioFiles.expand(scenarios.isEmpty ? [ScenarioFiles.resolveFolder("topologies/scenarios")] : scenarios)
        if let shard { files = try Shard.parse(shard).select(files) }
        var loaded = try ScenarioFiles.load(files, helperOverride: helpers.isEmpty ? nil : helpers)
        // No tier asked for and no mac80211_hwsim here: the native tier for what does not need the air, the VM only for
        // what does (after the native part; its reports go to NAME-radio.EXT). docs/SCENARIOS.md, "Tiers".
        let split = tier.link == nil && placement.location == .auto && placement.resolve().placement == .vm
        let mode = try tier.mode() ?? (split ? .veth : .radio)
        let needRadio = loaded.filter { $0.needsAir || ($0.needsNetem && !NetemSupport.available) }
        if split {
            labSay("hotspot-lab run: the native tier on this kernel for \(loaded.count - needRadio.count) scenario(s)"
                   + (needRadio.isEmpty ? "" : ", then the radio tier in the VM for \(needRadio.count) that need the air: \(needRadio.map(\.name).joined(separator: ", "))")
                   + " (--link radio: all in the radio tier)")
            loaded = loaded.filter { s in !needRadio.contains { $0.file == s.file } }
        } else if mode == .radio {
            try await placement.relayIfNeeded(logsRoot: logs)
        } else {
            // The native tier runs what does not need the air; the rest is named, not run (and not counted as passed).
            for scenario in loaded where scenario.needsAir {
                labSay("hotspot-lab run: \(scenario.name) skipped in the native tier: it declares `needs: air` (run it with --link radio)")
            }
            for scenario in loaded where !scenario.needsAir && scenario.needsNetem && !NetemSupport.available {
                labSay("hotspot-lab run: \(scenario.name) skipped in the native tier: it declares `needs: netem` and this kernel has no netem (run it with --link radio: the VM's kernel has it)")
            }
            loaded = loaded.filter { !$0.needsAir && (!$0.needsNetem || NetemSupport.available) }
        }
        LabSignals.install(command: "run")
        let reporter = ProgressReporter()
        reporter.named = jobs > 1
        let runner = ScenarioRunner(logRoot: logs, helperOverride: helpers.isEmpty ? nil : helpers)
        runner.linkMode = mode
        runner.onStep = { scenario, step in reporter.step(scenario, step) }
        let teardowns = LabTeardowns()
        runner.teardowns = teardowns
        let start = ContinuousClock.now
        let retry = !noRetry
        let showTimeline = timeline
        let results = ParallelRuns.map(loaded, jobs: jobs) { scenario in
            reporter.say("━━ \(scenario.name) (\(scenario.file), \(mode.tier) tier)")
            let result = retry ? runner.runWithRetry(scenario) : runner.run(scenario)
            reporter.finish(result, timeline: showTimeline)
            return result
        }
        teardowns.joinAll()
        reporter.summary(results, wall: ContinuousClock.now - start)
        if let junit { try ReportFile.write(JUnit.scenarios(results, suite: "hotspot-lab run"), to: junit) }
        if let json { try ReportFile.write(Reports.json(results), to: json) }
        if let html { try ReportFile.write(HTMLReport.render(results, title: "hotspot-lab run"), to: html) }
        var radioPassed = true
        if split, !needRadio.isEmpty {
            var arguments = ["run", "--link", "radio", "--jobs", "\(jobs)"] + (noRetry ? ["--no-retry"] : []) + (timeline ? ["--timeline"] : [])
            arguments += helpers.flatMap { ["--helper", $0] } + (logs.map { ["--logs", $0] } ?? [])
            for (flag, path) in [("--junit", junit), ("--json", json), ("--html", html)] {
                if let path { arguments += [flag, Self.radioReport(path)] }
            }
            arguments += needRadio.map(\.file)
            do {
                try await placement.relayIfNeeded(arguments: arguments, logsRoot: logs)
            } catch let exit as ExitCode {
                radioPassed = exit.rawValue == 0
            }
        }
        if !results.allSatisfy(\.passed) || !radioPassed { throw ExitCode(1) }
    }

    /// Where the radio part of a split run writes a report: `report.xml` -> `report-radio.xml`.
    static func radioReport(_ path: String) -> String {
        let ext = (path as NSString).pathExtension
        let base = ext.isEmpty ? path : String(path.dropLast(ext.count + 1))
        return base + "-radio" + (ext.isEmpty ? "" : "." + ext)
    }
}

enum ScenarioFiles {
    /// `topologies/scenarios` relative to the working directory, else to the package this binary was built in.
    static func resolveFolder(_ folder: String) -> String {
        if FileManager.default.fileExists(atPath: folder) || folder.hasPrefix("/") { return folder }
        var dir = (CommandLine.arguments[0] as NSString).deletingLastPathComponent
        for _ in 0..<4 {
            dir = (dir as NSString).deletingLastPathComponent
            if FileManager.default.fileExists(atPath: dir + "/" + folder) { return dir + "/" + folder }
        }
        return folder
    }

    static func expand(_ paths: [String]) throws -> [String] {
        var files: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw ValidationError("scenario \(path): No such file or directory")
            }
            if isDirectory.boolValue {
                let names = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted()
                files += names.map { path + "/" + $0 }
            } else {
                files.append(path)
            }
        }
        return files
    }

    /// Parses every file and its topology, and checks what each names against its topology, before anything runs
    /// (on the host, before a VM boots): a bad file stops the run with file:line:column.
    static func load(_ files: [String], helperOverride: [String]? = nil) throws -> [Scenario] {
        var scenarios: [Scenario] = []
        for file in files {
            do {
                let scenario = try ScenarioParser.load(path: file)
                let topology = try TopologyParser.load(path: scenario.topologyPath)
                try ScenarioCheck.validate(scenario, against: topology, helperOverride: helperOverride)
                if let undeclared = ScenarioParser.undeclaredNeed(scenario) { throw undeclared }
                scenarios.append(scenario)
            } catch let error as TopologyError {
                StandardStreams.error("hotspot-lab: \(error)\n")
                throw ExitCode(2)
            }
        }
        return scenarios
    }
}

/// Progress lines: one per step (name, elapsed, state), then the outcome.
final class ProgressReporter: @unchecked Sendable {  // @unchecked: `named` is set before the runs start; output is written with `lock` held
    let lock = HotspotSystem.Mutex()
    /// Prefix every line with the scenario's name (scenarios running at once).
    var named = false

    func say(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        labSay(line)   // EPIPE: a stop request, not a crash
    }

    func step(_ scenario: Scenario, _ step: StepResult) {
        let mark = step.passed ? "✓" : "✗"
        var line = (named ? "[\(scenario.name)] " : "") + String(format: "  %@ %6.2f s  %-14@ %@", mark, step.elapsed, step.state as NSString, step.step.text as NSString)
        if !step.passed { line += "\n      FAILED: " + step.message }
        else if step.message.contains("\n") { line += "\n    " + step.message }
        say(line)
    }

    func finish(_ result: ScenarioResult, timeline: Bool) {
        if let setup = result.setupError {
            say("  ✗ \(result.scenario.name): the lab could not be built: \(setup)")
            return
        }
        // One block, written at once: with labs in parallel another scenario's step lines must not cut into it.
        var block: [String] = []
        if timeline {
            block.append("  timeline\(named ? " of " + result.scenario.name : "") (hotspotd's trace, \(result.traceFile ?? "?")):")
            for line in Timeline.render(result.timeline) { block.append("    " + line) }
        }
        let verdict = result.passed ? (result.flaky ? "PASSED (flaky: failed once, passed on retry)" : "PASSED") : "FAILED"
        block.append(String(format: "  %@ %@%@ in %.1f s (%@ tier, lab up %.1f s); states: %@; logs %@", result.passed ? "✓" : "✗",
                            (named ? result.scenario.name + " " : "") as NSString, verdict as NSString,
                            result.duration, result.tier as NSString, result.labUpSeconds, result.path.joined(separator: " → ") as NSString, result.logDirectory as NSString))
        say(block.joined(separator: "\n"))
    }

    func summary(_ results: [ScenarioResult], wall: Duration) {
        let passed = results.filter(\.passed).count
        let seconds = wall.secondsDouble
        say("")
        for r in results {
            say("  \(r.passed ? "✓" : "✗") \(r.scenario.name)\(r.flaky ? " (flaky)" : "")" + (r.failure.map { ": \($0.message)" } ?? r.setupError.map { ": \($0)" } ?? ""))
        }
        let tiers = Array(Set(results.map(\.tier))).sorted().joined(separator: " and ")
        say(String(format: "%d passed, %d failed (%.1f s, %@ tier)", passed, results.count - passed, seconds, tiers as NSString))
    }
}

/// JSON results (JUnit XML: LabKit's `JUnit.scenarios`).
enum Reports {
    static func json(_ results: [ScenarioResult]) throws -> String {
        let objects: [[String: Any]] = results.map { r in
            [
                "name": r.scenario.name, "file": r.scenario.file, "tier": r.tier, "passed": r.passed, "flaky": r.flaky, "attempts": r.attempts,
                "duration_s": r.duration, "labUp_s": r.labUpSeconds,
                "labUpParts": r.labUpParts.map { ["part": $0.0, "s": $0.1] as [String: Any] }, "path": r.path, "checkedPath": r.checkedPath, "commands": r.commands, "results": r.results, "logs": r.logDirectory,
                "trace": r.traceFile ?? NSNull(), "setupError": r.setupError ?? NSNull(),
                "steps": r.steps.map { s in
                    ["step": s.step.text, "line": s.step.line, "passed": s.passed, "elapsed_s": s.elapsed, "state": s.state, "message": s.message] as [String: Any]
                },
                "timeline": r.timeline.map { ["t_s": $0.t, "kind": $0.kind, "text": $0.text] as [String: Any] },
            ]
        }
        let data = try JSONSerialization.data(withJSONObject: ["scenarios": objects], options: [.prettyPrinted, .sortedKeys])
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
