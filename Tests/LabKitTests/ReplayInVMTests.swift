import Foundation
import HotspotSystem
import Testing
import TestSupport
@testable import LabKit
@testable import LabCertify
@testable import LabReplay
@testable import LabReports
@testable import LabSandbox
@testable import LabScenarios
@testable import LabServices
@testable import LabTopology
@testable import LabVM

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

    /// Runs a shipped scenario (once per boot) and returns its trace file. Two may record at once (different names).
    static func record(_ name: String) throws -> String {
        let cached: String? = recordingsLock.withLock { recordings[name] }
        if let trace = cached, FileManager.default.fileExists(atPath: trace) { return trace }
        try InVMScenarioTests.loadHwsim()
        let result = ScenarioRunner().run(try ScenarioParser.load(path: "topologies/scenarios/\(name).yaml"))
        // Thrown, not #expect-ed: the recordings also run on ParallelRuns' threads, outside any test's context.
        guard result.passed, let trace = result.traceFile else {
            throw SystemError("record", "topologies/scenarios/\(name).yaml",
                              reason: result.failure?.message ?? result.setupError ?? "the run left no trace file")
        }
        recordingsLock.withLock { recordings[name] = trace }
        return trace
    }

    static let sequences = ["captive", "not-captive", "cached", "ui-required"]

    /// Each sequence recorded, then replayed from its trace: two sequences at a time (two labs at once, as the
    /// scenario suite runs), made once when the first case asks; each case judges its own.
    static let sequenceReplays: [Result<(trace: TraceFile, plan: Replay.Plan, replayed: ScenarioResult), any Error>] =
        ParallelRuns.map(sequences, jobs: 2) { name in
            Result {
                let trace = try TraceFile.load(path: try record(name))
                let plan = try Replay.plan(trace)
                return (trace, plan, ScenarioRunner().run(plan.scenario))
            }
        }

    @Test("root: a recorded run of each of the four sequences replays to the same state path",
          arguments: sequences)
    func replaysToTheSamePath(_ name: String) throws {
        let index = try #require(Self.sequences.firstIndex(of: name))
        let (trace, plan, result) = try Self.sequenceReplays[index].get()
        #expect(plan.source == "the lab's step records")
        #expect(result.passed, "\(result.failure?.message ?? result.setupError ?? "")")
        #expect(result.path == trace.path, "replayed \(result.path) vs recorded \(trace.path)")
        #expect(Replay.departure(recorded: trace.path, replayed: result.path) == nil)
    }

    /// The captive recording replayed two ways that must depart (each waits out the step that fails, about 20 s under
    /// TCG): both at once, made once when the first of the two tests asks.
    static let departingReplays: [Result<(trace: TraceFile, replayed: ScenarioResult), any Error>] = {
        let captive: String
        do { captive = try record("captive") } catch { return [.failure(error), .failure(error)] }
        let plans: [() throws -> (TraceFile, Replay.Plan)] = [
            {
                let trace = try TraceFile.load(path: captive)
                return (trace, try Replay.plan(trace, helpers: [#"hotspot-helper-portal --account guest:wrong --network "Cafe Lumiere""#]))
            },
            { let trace = try editedCaptive(captive); return (trace, try Replay.plan(trace)) },  // the recorded answers, edited one included
        ]
        defer { try? FileManager.default.removeItem(atPath: editedPath) }  // the replay helper reads it while the replay runs
        return ParallelRuns.map(plans, jobs: 2) { make in
            Result { let (trace, plan) = try make(); return (trace, ScenarioRunner().run(plan.scenario)) }
        }
    }()

    static let editedPath = FileManager.default.temporaryDirectory.appendingPathComponent("edited-\(getpid()).jsonl").path

    /// The captive recording with its authenticate answer edited to temporaryFailure, as a developer does to ask
    /// "what if the portal had failed?".
    static func editedCaptive(_ original: String) throws -> TraceFile {
        var lines = try String(contentsOfFile: original, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let index = lines.firstIndex(where: { $0.contains("\"kind\":\"response\"") && $0.contains("\"commandType\":\"authenticate\"") }),
              lines[index].contains("\"resultCode\":0")
        else { throw SystemError("edit", original, reason: "no authenticate response with resultCode 0 in the recording") }
        lines[index] = lines[index].replacingOccurrences(of: "\"result\":\"success\"", with: "\"result\":\"temporaryFailure\"")
            .replacingOccurrences(of: "\"resultCode\":0", with: "\"resultCode\":6")
        try lines.joined(separator: "\n").write(toFile: editedPath, atomically: true, encoding: .utf8)
        return try TraceFile.load(path: editedPath)
    }

    @Test("root: the captive recording replayed with a helper that has the wrong account departs where the login fails")
    func divergentReplayIsReportedAtTheRightStep() throws {
        let (trace, result) = try Self.departingReplays[0].get()
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
        let (trace, result) = try Self.departingReplays[1].get()
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
