import Foundation
import HotspotSystem
import Testing
import TestSupport
@testable import LabKit
@testable import LabReplay
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabServices
@testable import LabVM

/// The replay cases, run in one tier (`linkMode`): each recording made once per process, each set of replays once
/// when its first test asks. The native tier runs all of them on the host (`NativeReplayRootTests`); the radio tier
/// (`InVMReplayTests`) runs the captive sequence's, the sample that shows replay over the air.
final class ReplayCases: Sendable {
    let linkMode: HotspotLinkMode
    private let recordings = Locked([String: String]())
    private let sequenceRuns = Locked([String: Result<(trace: TraceFile, plan: Replay.Plan, replayed: ScenarioResult), any Error>]())
    private let departingRuns = Locked([Result<(trace: TraceFile, replayed: ScenarioResult), any Error>]?.none)
    private let editedPath = FileManager.default.temporaryDirectory.appendingPathComponent("edited-\(getpid())-\(UUID().uuidString.prefix(8)).jsonl").path

    init(linkMode: HotspotLinkMode) { self.linkMode = linkMode }

    static let sequences = ["captive", "not-captive", "cached", "ui-required"]

    func runner() -> ScenarioRunner {
        let runner = ScenarioRunner()
        runner.linkMode = linkMode
        return runner
    }

    /// Runs a shipped scenario (once per process) and returns its trace file. Two may record at once (different names).
    func record(_ name: String) throws -> String {
        if let trace = recordings.withLock({ $0[name] }), FileManager.default.fileExists(atPath: trace) { return trace }
        if linkMode == .radio { try InVMScenarioTests.loadHwsim() }
        let result = runner().run(try ScenarioParser.load(path: "topologies/scenarios/\(name).yaml"))
        // Thrown, not #expect-ed: the recordings also run on ParallelRuns' threads, outside any test's context.
        guard result.passed, let trace = result.traceFile else {
            throw SystemError("record", "topologies/scenarios/\(name).yaml",
                              reason: result.failure?.message ?? result.setupError ?? "the run left no trace file")
        }
        recordings.withLock { $0[name] = trace }
        return trace
    }

    /// `names` recorded, then replayed from their traces, two at a time (two labs at once, as the scenario suites
    /// run); made once, when the first case asks for it; each case judges its own.
    func sequenceReplay(_ name: String, among names: [String]) throws -> (trace: TraceFile, plan: Replay.Plan, replayed: ScenarioResult) {
        try sequenceRuns.withLock { runs in
            if runs[name] == nil {
                let results = ParallelRuns.map(names, jobs: 2) { name -> Result<(trace: TraceFile, plan: Replay.Plan, replayed: ScenarioResult), any Error> in
                    Result {
                        let trace = try TraceFile.load(path: try self.record(name))
                        let plan = try Replay.plan(trace)
                        return (trace: trace, plan: plan, replayed: self.runner().run(plan.scenario))
                    }
                }
                for (name, result) in zip(names, results) { runs[name] = result }
            }
            return try runs[name]!.get()
        }
    }

    /// The captive recording replayed two ways that must depart (each waits out the step that fails): both at once,
    /// made once when the first of the two tests asks. 0: a helper with the wrong account; 1: an edited recording.
    func departingReplay(_ index: Int) throws -> (trace: TraceFile, replayed: ScenarioResult) {
        try departingRuns.withLock { runs in
            if runs == nil { runs = makeDepartingReplays() }
            return try runs![index].get()
        }
    }

    private func makeDepartingReplays() -> [Result<(trace: TraceFile, replayed: ScenarioResult), any Error>] {
        let captive: String
        do { captive = try record("captive") } catch { return [.failure(error), .failure(error)] }
        let edited = editedPath
        let plans: [@Sendable () throws -> (TraceFile, Replay.Plan)] = [
            {
                let trace = try TraceFile.load(path: captive)
                return (trace, try Replay.plan(trace, helpers: [#"hotspot-helper-portal --account guest:wrong --network "Cafe Lumiere""#]))
            },
            { let trace = try Self.editedCaptive(captive, to: edited); return (trace, try Replay.plan(trace)) },  // the recorded answers, edited one included
        ]
        defer { try? FileManager.default.removeItem(atPath: edited) }  // the replay helper reads it while the replay runs
        return ParallelRuns.map(plans, jobs: 2) { make -> Result<(trace: TraceFile, replayed: ScenarioResult), any Error> in
            Result { let (trace, plan) = try make(); return (trace: trace, replayed: self.runner().run(plan.scenario)) }
        }
    }

    /// The captive recording with its authenticate answer edited to temporaryFailure, as a developer does to ask
    /// "what if the portal had failed?".
    static func editedCaptive(_ original: String, to path: String) throws -> TraceFile {
        var lines = try String(contentsOfFile: original, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let index = lines.firstIndex(where: { $0.contains("\"kind\":\"response\"") && $0.contains("\"commandType\":\"authenticate\"") }),
              lines[index].contains("\"resultCode\":0")
        else { throw SystemError("edit", original, reason: "no authenticate response with resultCode 0 in the recording") }
        lines[index] = lines[index].replacingOccurrences(of: "\"result\":\"success\"", with: "\"result\":\"temporaryFailure\"")
            .replacingOccurrences(of: "\"resultCode\":0", with: "\"resultCode\":6")
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return try TraceFile.load(path: path)
    }

    // MARK: what each case checks

    func checkReplaysToTheSamePath(_ name: String, among names: [String]) throws {
        let (trace, plan, result) = try sequenceReplay(name, among: names)
        #expect(plan.source == "the lab's step records")
        #expect(result.passed, "\(result.failure?.message ?? result.setupError ?? "")")
        #expect(result.tier == linkMode.tier)
        #expect(plan.recordedPath == trace.scenarioPath)
        #expect(result.path == trace.scenarioPath, "replayed \(result.path) vs recorded \(trace.scenarioPath)")
        #expect(Replay.departure(recorded: trace.scenarioPath, replayed: result.path) == nil)
    }

    func checkWrongAccountDeparts() throws {
        let (trace, result) = try departingReplay(0)
        #expect(!result.passed)
        let departure = try #require(Replay.departure(recorded: trace.scenarioPath, replayed: result.path))
        #expect(departure.index == 2, "recorded \(trace.scenarioPath), replayed \(result.path)")
        #expect(departure.recorded == "Authenticated" && departure.replayed == "Failure")
        // The failing step is the first check after the join: the states until the recording's Authenticated.
        let failure = try #require(result.failure)
        #expect(failure.step.text.hasPrefix("wait-state: {state: Authenticated") || failure.step.text.hasPrefix("expect-states: [Evaluating, Authenticating, Authenticated"),
                "\(failure.message)")
    }

    func checkEditedTraceDeparts() throws {
        let (trace, result) = try departingReplay(1)
        #expect(!result.passed)
        let departure = try #require(Replay.departure(recorded: trace.scenarioPath, replayed: result.path))
        #expect(departure.index == 2, "recorded \(trace.scenarioPath), replayed \(result.path)")
        #expect(departure.recorded == "Authenticated" && departure.replayed == "Failure")
        // Failure with temporaryFailure keeps auto-join: the edit, not a crash, made the difference.
        #expect(result.path.prefix(4) == ["Evaluating", "Authenticating", "Failure", "Inactive"], "\(result.path)")
    }

    func checkToScenarioRuns() throws {
        let trace = try TraceFile.load(path: try record("not-captive"))
        let plan = try Replay.plan(trace)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(getpid())-\(linkMode.tier).yaml").path
        try plan.yaml.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = runner().run(try ScenarioParser.load(path: file))
        #expect(result.passed, "\(result.failure?.message ?? result.setupError ?? "")")
        #expect(result.path == trace.scenarioPath)
    }
}

/// Replays end to end in the native tier, on the host kernel (no VM): a recorded run of each of the guide's four
/// sequences replays (with the recorded answers) to the same state path; the captive recording replayed with a helper
/// that has the wrong account, or edited so its login answer is temporaryFailure, departs at the right step;
/// --to-scenario output runs as a scenario. A replay needs no air: the radio tier runs the captive sample
/// (`InVMReplayTests`).
@Suite("Native tier: replay (root)", .serialized, .requiresRoot)
struct NativeReplayRootTests {
    static let cases = ReplayCases(linkMode: .veth)

    @Test("root: a recorded run of each of the four sequences replays to the same state path", arguments: ReplayCases.sequences)
    func replaysToTheSamePath(_ name: String) throws {
        try Self.cases.checkReplaysToTheSamePath(name, among: ReplayCases.sequences)
    }

    @Test("root: the captive recording replayed with a helper that has the wrong account departs where the login fails")
    func divergentReplayIsReportedAtTheRightStep() throws { try Self.cases.checkWrongAccountDeparts() }

    @Test("root: a captive recording edited so its login answer is temporaryFailure departs at that step")
    func editedTraceDepartsAtTheEditedStep() throws { try Self.cases.checkEditedTraceDeparts() }

    @Test("root: --to-scenario output is a scenario file that runs and passes")
    func toScenarioRuns() throws { try Self.cases.checkToScenarioRuns() }
}

/// Replay over the air, in the VM: the captive sequence recorded in the radio tier replays to the same state path
/// (the native tier runs every replay case: `NativeReplayRootTests`).
@Suite("InVM: replay (root)", .tags(.inVM), .serialized,
       .enabled(if: InVM.hwsimAvailable && TestHost.isRoot, "needs root and mac80211_hwsim: runs inside the hotspot-lab VM (see VMSuiteTests)"))
struct InVMReplayTests {
    static let cases = ReplayCases(linkMode: .radio)

    @Test("root: a recorded run of the captive sequence replays over the air to the same state path")
    func captiveReplaysToTheSamePath() throws {
        try Self.cases.checkReplaysToTheSamePath("captive", among: ["captive"])
    }
}
