import Foundation
import HotspotSystem
import Testing
import TestSupport
@testable import LabKit

/// Replays end to end, in the VM: a recorded run of each of the guide's four sequences replays (with the
/// recorded answers) to the same state path; the captive recording replayed with a helper that has the wrong
/// account departs at the right step; --to-scenario output runs as a scenario.
@Suite("InVM: replay (root)", .tags(.inVM), .serialized,
       .enabled(if: InVM.hwsimAvailable && TestHost.isRoot, "needs root and mac80211_hwsim: runs inside the hotspot-lab VM (see VMSuiteTests)"))
struct InVMReplayTests {
    /// Recordings already made in this boot, by scenario: the replays only read them, so the three tests that
    /// replay the captive recording share one run of it.
    nonisolated(unsafe) static var recordings: [String: String] = [:]
    static let recordingsLock = NSLock()

    /// Runs a shipped scenario (once per boot) and returns its trace file.
    static func record(_ name: String) throws -> String {
        recordingsLock.lock()
        defer { recordingsLock.unlock() }
        if let trace = recordings[name], FileManager.default.fileExists(atPath: trace) { return trace }
        try InVMScenarioTests.loadHwsim()
        let result = ScenarioRunner().run(try ScenarioParser.load(path: "topologies/scenarios/\(name).yaml"))
        #expect(result.passed, "recording \(name): \(result.failure?.message ?? result.setupError ?? "")")
        let trace = try #require(result.traceFile)
        if result.passed { recordings[name] = trace }
        return trace
    }

    @Test("root: a recorded run of each of the four sequences replays to the same state path",
          arguments: ["captive", "not-captive", "cached", "ui-required"])
    func replaysToTheSamePath(_ name: String) throws {
        let trace = try TraceFile.load(path: try Self.record(name))
        let plan = try Replay.plan(trace)
        #expect(plan.source == "the lab's step records")
        let result = ScenarioRunner().run(plan.scenario)
        #expect(result.passed, "\(result.failure?.message ?? result.setupError ?? "")")
        #expect(result.path == trace.path, "replayed \(result.path) vs recorded \(trace.path)")
        #expect(Replay.departure(recorded: trace.path, replayed: result.path) == nil)
    }

    @Test("root: the captive recording replayed with a helper that has the wrong account departs where the login fails")
    func divergentReplayIsReportedAtTheRightStep() throws {
        let trace = try TraceFile.load(path: try Self.record("captive"))
        let plan = try Replay.plan(trace, helpers: [#"hotspot-helper-portal --account guest:wrong --network "Cafe Lumiere""#])
        let result = ScenarioRunner().run(plan.scenario)
        #expect(!result.passed)
        let departure = try #require(Replay.departure(recorded: trace.path, replayed: result.path))
        #expect(departure.index == 2, "recorded \(trace.path), replayed \(result.path)")
        #expect(departure.recorded == "Authenticated" && departure.replayed == "Failure")
        // The failing step is the first check after the join: the states until the recording's Authenticated.
        let failure = try #require(result.failure)
        #expect(failure.step.text.hasPrefix("wait-state: {state: Authenticated") || failure.step.text.hasPrefix("expect-states: [Evaluating, Authenticating, Authenticated"),
                "\(failure.message)")
    }

    @Test("root: a captive recording edited so its login answer is temporaryFailure departs at that step")
    func editedTraceDepartsAtTheEditedStep() throws {
        let original = try Self.record("captive")
        // Edit the recorded authenticate answer, as a developer does to ask "what if the portal had failed?".
        var lines = try String(contentsOfFile: original, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let index = try #require(lines.firstIndex { $0.contains("\"kind\":\"response\"") && $0.contains("\"commandType\":\"authenticate\"") })
        #expect(lines[index].contains("\"resultCode\":0"))
        lines[index] = lines[index].replacingOccurrences(of: "\"result\":\"success\"", with: "\"result\":\"temporaryFailure\"")
            .replacingOccurrences(of: "\"resultCode\":0", with: "\"resultCode\":6")
        let edited = FileManager.default.temporaryDirectory.appendingPathComponent("edited-\(getpid()).jsonl").path
        try lines.joined(separator: "\n").write(toFile: edited, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: edited) }

        let trace = try TraceFile.load(path: edited)
        let plan = try Replay.plan(trace)    // the recorded answers, edited one included
        let result = ScenarioRunner().run(plan.scenario)
        #expect(!result.passed)
        let departure = try #require(Replay.departure(recorded: trace.path, replayed: result.path))
        #expect(departure.index == 2, "recorded \(trace.path), replayed \(result.path)")
        #expect(departure.recorded == "Authenticated" && departure.replayed == "Failure")
        // Failure with temporaryFailure keeps auto-join: the edit, not a crash, made the difference.
        #expect(result.path.prefix(4) == ["Evaluating", "Authenticating", "Failure", "Inactive"], "\(result.path)")
    }

    @Test("root: --to-scenario output is a scenario file that runs and passes")
    func toScenarioRuns() throws {
        let trace = try TraceFile.load(path: try Self.record("not-captive"))
        let plan = try Replay.plan(trace)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(getpid()).yaml").path
        try plan.yaml.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = ScenarioRunner().run(try ScenarioParser.load(path: file))
        #expect(result.passed, "\(result.failure?.message ?? result.setupError ?? "")")
        #expect(result.path == trace.path)
    }
}
