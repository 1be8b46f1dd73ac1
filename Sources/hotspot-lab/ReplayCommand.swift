import ArgumentParser
import Foundation
import LabKit
import HotspotSystem

/// `hotspot-lab replay TRACE`: a recorded run (hotspotd's trace.jsonl) done again in a lab, its state path
/// compared with the recording step by step; `--to-scenario` prints it as a scenario file to keep.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay a hotspotd trace in a lab (the recorded helper answers, or --helper) and report where the state path departs from the recording.")

    @Argument(help: "hotspotd's trace (trace.jsonl).")
    var trace: String

    @Option(name: .customLong("helper"), help: "Run this helper instead of the recorded answers (repeatable).")
    var helpers: [String] = []

    @Option(help: "The topology (default: the one the trace names; a device's trace names none).")
    var topology: String?

    @Option(help: "Replay the recorded pauses this many times faster.")
    var speed: Double = 1

    @Flag(help: "Print the replay as a scenario file (keep it as a regression test) instead of running it.")
    var toScenario = false

    @Option(help: "Write a JUnit XML report.")
    var junit: String?

    @Option(help: "Write a self-contained HTML report.")
    var html: String?

    @Option(help: "Log folder root (default $HOTSPOT_LAB_LOGS or /tmp/hotspot-lab).")
    var logs: String?

    @OptionGroup var placement: Placement
    @OptionGroup var tier: TierOption

    func validate() throws {
        if let problem = ReportFile.refusal([("--junit", junit), ("--html", html)]) { throw ValidationError(problem) }
        _ = try tier.mode()
        guard speed > 0, speed.isFinite else { throw ValidationError("--speed must be a positive number, found \(speed)") }
    }

    func run() async throws {
        let plan: Replay.Plan
        do {
            let file = try TraceFile.load(path: trace)
            plan = try Replay.plan(file, topology: topology, helpers: helpers.isEmpty ? nil : helpers, speed: speed)
        } catch let error as TraceFileError {
            StandardStreams.error("hotspot-lab replay: \(error)\n")
            throw ExitCode(2)
        } catch let error as TopologyError {
            StandardStreams.error("hotspot-lab replay: \(error)\n")
            throw ExitCode(2)
        }
        for note in plan.notes { StandardStreams.error("hotspot-lab replay: warning: \(note)\n") }
        if toScenario {
            print(plan.yaml, terminator: "")
            return
        }
        let mode = try tier.mode() ?? .radio
        if mode == .radio { try await placement.relayIfNeeded(inputs: [trace], logsRoot: logs) }
        LabSignals.install(command: "replay")
        let reporter = ProgressReporter()
        reporter.say("━━ replay of \(trace): \(plan.scenario.steps.count) steps from \(plan.source); recorded path "
                     + (plan.recordedPath.isEmpty ? "(none)" : plan.recordedPath.joined(separator: " → ")))
        let runner = ScenarioRunner(logRoot: logs)
        runner.linkMode = mode
        runner.onStep = { scenario, step in reporter.step(scenario, step) }
        let result = runner.run(plan.scenario)
        reporter.finish(result, timeline: true)
        if let departure = Replay.departure(recorded: plan.recordedPath, replayed: result.path) {
            reporter.say("DEPARTS at state #\(departure.index + 1): recorded \(departure.recorded ?? "(end)"), replay \(departure.replayed ?? "(end)")"
                         + (result.failure.map { "\n  first failing step: \($0.message)" } ?? ""))
        } else if result.passed {
            reporter.say("SAME PATH: the replay entered the recorded states in order (\(plan.recordedPath.count) transitions)")
        }
        if let junit { try ReportFile.write(JUnit.scenarios([result], suite: "hotspot-lab replay"), to: junit) }
        if let html { try ReportFile.write(HTMLReport.render([result], title: "hotspot-lab replay"), to: html) }
        let same = Replay.departure(recorded: plan.recordedPath, replayed: result.path) == nil
        if !(same && result.passed) { throw ExitCode(1) }
    }
}
