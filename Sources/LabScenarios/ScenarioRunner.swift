import Foundation
import HotspotProtocol
import HotspotSystem
import LabServices
import LabTopology

/// What one step did.
public struct StepResult: Sendable {
    public var index: Int
    public var step: ScenarioStep
    public var passed: Bool
    /// Seconds since the scenario's lab was up.
    public var elapsed: Double
    public var duration: Double
    /// hotspotd's state after the step.
    public var state: String
    /// Why it failed (names the step, the expected and the actual), or what it saw.
    public var message: String
}

/// One line of the timeline: what happened, from hotspotd's trace.
public struct TimelineEntry: Sendable {
    /// Seconds since the first record of the run.
    public var t: Double
    public var kind: String
    public var text: String
}

/// A scenario's outcome: its steps, the timeline, where the logs and trace are.
public struct ScenarioResult: Sendable {
    public var scenario: Scenario
    public var passed: Bool
    public var steps: [StepResult]
    public var timeline: [TimelineEntry]
    /// The states entered, in order.
    public var path: [String]
    public var duration: Double
    public var labUpSeconds: Double
    /// What bringing the lab up spent, part by part (`RunningTopology.timings`: lab CA, each hotspot's services, stations).
    public var labUpParts: [(String, Double)] = []
    public var logDirectory: String
    public var traceFile: String?
    /// Set when the lab could not be built (the scenario did not run).
    public var setupError: String?
    /// Retried once after a failure and passed then.
    public var flaky = false
    public var attempts = 1
    /// The scenario names something its topology does not have (`ScenarioCheck`): nothing was built, no retry.
    public var invalid = false
    /// The states entered up to the end of the last state check, the commands hotspotd sent (`evaluate -> helper`, in
    /// order) and the helpers' results (sorted) in that part: `TierOutcome`, the same in both tiers.
    public var checkedPath: [String] = []
    public var commands: [String] = []
    public var results: [String] = []
    /// The tier it ran in: `radio` (mac80211_hwsim, hostapd, wpa_supplicant) or `native` (links the lab moves).
    public var tier = "radio"

    public var failure: StepResult? { steps.first { !$0.passed } }
}

/// Labs that go down on threads of their own (`ScenarioRunner.teardowns`): a scenario's result (steps, timeline, path)
/// is complete before its lab goes down, so the worker can bring the next scenario's lab up meanwhile. Under the VM's
/// emulation a radio lab's teardown and the copy of its logs to the host took 0.8-1.1 s, on every worker's critical
/// path (bench/README.md). `joinAll` before the command reports or exits: every lab is down and its logs copied then.
public final class LabTeardowns: Sendable {
    private let threads = Locked<[SystemThread]>([])

    public init() {}

    /// Runs `body` on a thread of its own (inline when no thread can be started).
    func run(_ name: String, _ body: @escaping @Sendable () -> Void) {
        do {
            let thread = try SystemThread.start(name, body)
            threads.withLock { $0.append(thread) }
        } catch {
            body()
        }
    }

    /// Labs handed over and not yet joined.
    public var pending: Int { threads.withLock { $0.count } }

    /// Waits until every lab handed over so far is down.
    public func joinAll() {
        while let thread = threads.withLock({ $0.popLast() }) { thread.join() }
    }
}

/// Runs scenarios against a real lab: topology up with its stations, steps carried out through hotspotd's
/// control socket, wpa_supplicant, the portals' gate and curl; every expectation checked against hotspotd's
/// trace and status.
public final class ScenarioRunner: @unchecked Sendable {  // @unchecked: its settings are set before `run` and then only read, also by several ParallelRuns threads at once
    public var logRoot: String?
    /// Extra arguments per helper executable; `helperOverride` replaces the topology's helpers.
    public var helperOverride: [String]?
    /// Called after each step (progress lines).
    public var onStep: (@Sendable (Scenario, StepResult) -> Void)?
    /// The tier: `.radio` (mac80211_hwsim: the VM or a host with it) or `.veth` (the native tier, no radio).
    public var linkMode: HotspotLinkMode = .radio
    /// Where labs go down when `run` returns: nil, before it returns; else on a thread of their own, which the caller
    /// joins (`LabTeardowns.joinAll`) before it reports or exits.
    public var teardowns: LabTeardowns?

    public init(logRoot: String? = nil, helperOverride: [String]? = nil) {
        self.logRoot = logRoot
        self.helperOverride = helperOverride
    }

    public func run(_ scenario: Scenario) -> ScenarioResult {
        let start = ContinuousClock.now
        var result = ScenarioResult(scenario: scenario, passed: false, steps: [], timeline: [], path: [], duration: 0, labUpSeconds: 0,
                                    logDirectory: "", traceFile: nil)
        result.tier = linkMode.tier
        let topology: Topology
        let lab: RunningTopology
        do {
            topology = try TopologyParser.load(path: scenario.topologyPath)
            // Every station, hotspot, helper and access point the scenario names, before anything is built.
            try ScenarioCheck.validate(scenario, against: topology, helperOverride: helperOverride)
            if linkMode != .radio, let undeclared = ScenarioParser.undeclaredNeed(scenario) { throw undeclared }
            if scenario.needsAir, linkMode != .radio {
                throw SystemError("run scenario \(scenario.name) in the native tier", scenario.file,
                                  reason: "it declares `needs: air`; it runs in the radio tier only")
            }
        } catch {
            result.setupError = "\(error)"
            result.invalid = true
            result.duration = Self.seconds(since: start)
            return result
        }
        do {
            lab = try RunningTopology.up(topology, options: RunningTopologyOptions(
                linkMode: linkMode, logRoot: logRoot,
                stations: StationLabOptions(timeScale: scenario.timeScale, maintainInterval: scenario.maintainInterval,
                                          helperOverride: helperOverride ?? scenario.helpers)))
        } catch {
            result.setupError = "\(error)"
            result.duration = Self.seconds(since: start)
            return result
        }
        defer {
            let down: @Sendable () -> Void = {
                let errors = lab.down()
                if !errors.isEmpty { StandardStreams.error("hotspot-lab: teardown of \(lab.lab.prefix): \(errors)\n") }
            }
            if let teardowns { teardowns.run("down \(lab.lab.prefix)", down) } else { down() }
        }
        result.labUpSeconds = Self.seconds(since: start)
        result.labUpParts = lab.timings
        result.logDirectory = lab.logDirectory
        // The air: every radio's frames on hwsim0, as a pcap in the lab's log folder (stopped before the lab goes
        // down, whose log copy takes it to the host). Runs at once share hwsim0: each capture holds all of them.
        let capture = linkMode == .radio ? ScenarioAirCapture.start(into: lab.logDirectory + "/air.pcap") : nil
        defer { capture?.stop() }
        guard let station = lab.station(scenario.station) else {
            result.setupError = "\(scenario.file): station `\(scenario.station ?? "")` is not in \(topology.file)"
            return result
        }
        result.traceFile = station.traceFile
        let context = LabStepContext(lab: lab, station: station)
        // The trace names the scenario and the topology, and records each step: enough to replay the run.
        let helpers = station.helpers.map { h -> JSON in ["command": .string(h.command), "identifier": h.identifier.map(JSON.string) ?? .null] }
        _ = try? station.request(.record(["scenario": .string(scenario.name), "file": .string(scenario.file),
                                          "topology": .string(scenario.topologyPath.hasPrefix("/") ? scenario.topologyPath
                                              : FileManager.default.currentDirectoryPath + "/" + scenario.topologyPath),
                                          "station": .string(station.station.name),
                                          "maintainInterval": .number(scenario.maintainInterval), "timeScale": .number(scenario.timeScale),
                                          "helpers": .array(helpers)]))
        result.steps = Self.runSteps(scenario, in: context, onStep: onStep)
        // The end of the scenario, before the lab goes down: a timer that fires during the teardown (a maintain the
        // portal's end answers) is the teardown's doing, and a replay must not expect it again.
        _ = try? station.request(.record(["scenarioEnded": .string(scenario.name)]))
        result.passed = result.steps.allSatisfy(\.passed) && result.steps.count == scenario.steps.count
        let records = station.readTrace()
        result.timeline = Timeline.build(records)
        result.path = records.compactMap { $0.record.transition?.to }
        (result.checkedPath, result.commands, result.results) = TierOutcome.checked(records, scenario: scenario)
        result.duration = Self.seconds(since: start)
        return result
    }

    /// Carries out the steps in order against `context`, up to the first that fails: each recorded in hotspotd's
    /// trace, performed, and reported with hotspotd's state after it (`onStep`: the progress lines).
    public static func runSteps(_ scenario: Scenario, in context: any StepContext,
                                onStep: (@Sendable (Scenario, StepResult) -> Void)? = nil) -> [StepResult] {
        var results: [StepResult] = []
        let stepsStart = ContinuousClock.now
        for (index, step) in scenario.steps.enumerated() {
            let stepStart = ContinuousClock.now
            var message = ""
            var passed = true
            context.recordStep(step.text, kind: step.kind, line: step.line, index: index)
            // A step that acts (or waits on purpose) ends the stretch in which `expect-states` reads up to the last
            // `wait-state`'s transition; `wait-state` sets a new bound when it matches.
            if !ExpectStatesStep.checksOnly.contains(step.kind) { context.stateBound = nil }
            do {
                message = try step.action.perform(in: context)
            } catch {
                passed = false
                message = "\(error)"
            }
            let state = (try? context.status()["state"]?.stringValue) ?? nil
            let stepResult = StepResult(index: index, step: step, passed: passed, elapsed: Self.seconds(since: stepsStart),
                                        duration: Self.seconds(since: stepStart), state: state ?? "unknown",
                                        message: passed ? message : "step \(index + 1) (\(scenario.file):\(step.line):\(step.column)) `\(step.text)`: \(message)")
            results.append(stepResult)
            onStep?(scenario, stepResult)
            if !passed { break }
        }
        return results
    }

    /// Runs and, when it fails, runs once more: a pass on the second try is marked flaky.
    public func runWithRetry(_ scenario: Scenario) -> ScenarioResult {
        let first = run(scenario)
        // A scenario its topology refutes fails the same way every time: not retried.
        if first.passed || first.invalid { return first }
        var second = run(scenario)
        second.attempts = 2
        second.flaky = second.passed
        return second
    }

    public static func seconds(since start: ContinuousClock.Instant) -> Double { (ContinuousClock.now - start).secondsDouble }
}

