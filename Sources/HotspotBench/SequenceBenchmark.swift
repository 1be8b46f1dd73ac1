import ArgumentParser
import Foundation
import HotspotProtocol
import LabKit

/// `hotspot-lab bench sequence`: the captive sequence from the join request to Authenticated, broken down
/// from hotspotd's trace (association, DHCP, evaluate, authenticate, the first general request through), over
/// several labs; `bench demo`: the wall time of the demo and of the scenario folder.
public struct SequenceBenchmark: Sendable {
    /// Labs to run (the median and the spread are reported).
    public var runs: Int
    /// The topology file (its first station joins its first hotspot).
    public var topologyPath: String
    /// The tier: `.radio` (mac80211_hwsim) or `.veth` (native: no radio, no VM).
    public var linkMode: HotspotLinkMode = .radio
    let parsed: Topology

    /// Checks the arguments and reads the topology (before the command is relayed to the VM).
    public init(runs: Int = 3, topologyPath: String) throws {
        guard runs > 0 else { throw ValidationError("--runs must be at least 1") }
        self.runs = runs
        self.topologyPath = topologyPath
        parsed = try TopologyParser.load(path: topologyPath)
    }

    public func run() throws {
        let path = topologyPath
        let ssid = parsed.hotspots[0].ssid
        let yaml = """
            topology: \(path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path)
            steps:
              - join: \(ssid)
              - wait-state: Authenticated
              - application: allowed
            """
        let scenario = try ScenarioParser.parse(yaml, file: "bench-sequence.yaml")
        var rows: [[String: Double]] = []
        for i in 1...runs {
            let runner = ScenarioRunner()
            runner.linkMode = linkMode
            let result = runner.run(scenario)
            guard result.passed, let traceFile = result.traceFile else {
                print("run \(i): failed: \(result.failure?.message ?? result.setupError ?? "?")")
                throw ExitCode(1)
            }
            let trace = try TraceFile.load(path: traceFile).records
            var row = Self.breakdown(trace)
            row["first general request (the application step after Authenticated)"] = result.steps[2].duration
            row["lab up"] = result.labUpSeconds
            rows.append(row)
            print(String(format: "run %d: join -> Authenticated %.3f s", i, row["join -> Authenticated"] ?? -1))
        }
        let order = ["join -> associated", "associated -> DHCP lease", "lease -> evaluate answered", "evaluate -> authenticate answered",
                     "authenticate answered -> Authenticated", "join -> Authenticated", "first general request (the application step after Authenticated)", "lab up"]
        print("\n| phase | median | min | max |\n|---|---|---|---|")
        for key in order {
            let values = rows.compactMap { $0[key] }.sorted()
            guard !values.isEmpty else { continue }
            print(String(format: "| %@ | %.3f s | %.3f s | %.3f s |", key, values[values.count / 2], values.first!, values.last!))
        }
        print(String(format: "\n%d runs in the %@ tier on %@, %@ build, load average %@", runs, linkMode.tier, InVM.isActive ? "the VM (TCG)" : "the host kernel", BenchBuild.configuration,
                     VMBenchmark.loadAverage()))
    }

    /// Seconds between the trace's milestones of one join.
    static func breakdown(_ trace: [TraceEntry]) -> [String: Double] {
        func time(_ predicate: (TraceRecord) -> Bool) -> Double? { trace.first(where: { predicate($0.record) })?.time.map { $0 / 1e9 } }
        let join = time { $0.userAction?.requestType == "join" }
        let associated = time { $0.station?.action == "associated" }
        let lease = time { $0.station?.action == "dhcpLease" }
        let evaluated = time { $0.response?.commandType == "evaluate" }
        let authenticated = time { $0.response?.commandType == "authenticate" }
        let done = time { $0.transition?.to == "Authenticated" }
        var row: [String: Double] = [:]
        func put(_ key: String, _ a: Double?, _ b: Double?) { if let a, let b { row[key] = b - a } }
        put("join -> associated", join, associated)
        put("associated -> DHCP lease", associated, lease)
        put("lease -> evaluate answered", lease, evaluated)
        put("evaluate -> authenticate answered", evaluated, authenticated)
        put("authenticate answered -> Authenticated", authenticated, done)
        put("join -> Authenticated", join, done)
        return row
    }
}

/// `hotspot-lab bench demo`: wall time of the demo and of the whole scenario folder, in one VM boot each,
/// boot included (run from the host).
public struct DemoBenchmark: Sendable {
    /// Skip the scenario folder (the demo only).
    public var demoOnly: Bool

    public init(demoOnly: Bool = false) { self.demoOnly = demoOnly }

    public func run() throws {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var commands: [(String, [String])] = [("hotspot-lab demo", ["demo"])]
        if !demoOnly {
            commands.append(("hotspot-lab run topologies/scenarios --no-retry --jobs 1", ["run", "--no-retry", "--jobs", "1"]))
            commands.append(("hotspot-lab run topologies/scenarios --no-retry --jobs 2", ["run", "--no-retry", "--jobs", "2"]))
        }
        for (label, arguments) in commands {
            let start = Date()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: exe)
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            print(String(format: "%@: %.1f s wall, exit %d", label, Date().timeIntervalSince(start), process.terminationStatus))
        }
        print("load average \(VMBenchmark.loadAverage())")
    }
}

/// `hotspot-lab bench replay`: record the captive scenario, replay its trace (the recorded answers): the time to
/// start the replay (lab up included) and its run time against the recording's duration at scale 1.
public struct ReplayBenchmark: Sendable {
    /// The scenario recorded, then replayed.
    public var scenarioPath: String
    let recorded: Scenario

    /// Reads the scenario (before the command is relayed to the VM).
    public init(scenarioPath: String) throws {
        self.scenarioPath = scenarioPath
        recorded = try ScenarioParser.load(path: scenarioPath)
    }

    public func run() throws {
        let original = ScenarioRunner().run(recorded)
        guard original.passed, let traceFile = original.traceFile else {
            print("recording failed: \(original.failure?.message ?? original.setupError ?? "?")")
            throw ExitCode(1)
        }
        let trace = try TraceFile.load(path: traceFile)
        let times = trace.records.compactMap(\.time)
        let recordedSeconds = ((times.last ?? 0) - (times.first ?? 0)) / 1e9
        let start = ContinuousClock.now
        let plan = try Replay.plan(trace)
        let result = ScenarioRunner().run(plan.scenario)
        let total = ScenarioRunner.seconds(since: start)
        let same = Replay.departure(recorded: trace.path, replayed: result.path) == nil
        print(String(format: "recording: %@, trace spans %.2f s (lab up %.2f s, whole run %.2f s)", recorded.name, recordedSeconds,
                     original.labUpSeconds, original.duration))
        print(String(format: "replay: start (plan + lab up) %.2f s, steps %.2f s, whole %.2f s; replay/recording (steps vs trace span) %.2f; same path: %@",
                     result.labUpSeconds, result.duration - result.labUpSeconds, total, (result.duration - result.labUpSeconds) / max(recordedSeconds, 0.001),
                     same ? "yes" : "NO"))
        print("load average \(VMBenchmark.loadAverage())")
        if !same || !result.passed { throw ExitCode(1) }
    }
}
