import ArgumentParser
import Foundation
import LabKit
import HotspotBench

/// `hotspot-lab bench <area>`: speed and memory targets live here, not in timed tests.
/// The benchmarks themselves are the HotspotBench library (one file per area); this file only maps
/// each area's command line onto it.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run a benchmark and print its results (see bench/README.md for recorded runs).",
        subcommands: [
            // Add each bench area here, one line each.
            BenchCore.self,
            BenchVM.self,
            BenchProtocol.self,
            BenchLab.self,
            BenchSequence.self,
            BenchDemo.self,
            BenchReplay.self,
            BenchProfile.self,
            BenchProviders.self,
        ]
    )
}

/// `hotspot-lab bench core` (`CoreBenchmark`).
struct BenchCore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "core",
        abstract: "Events per second and allocations per event of the pure state machine (the guide's four sequences)."
    )

    @Option(help: "How many times to replay the four sequences.")
    var iterations = 1_000_000

    @Flag(inversion: .prefixedNo, help: "Count mallocs per event with a perf uprobe (needs perf and root).")
    var countMallocs = true

    @Flag(help: .hidden)
    var quiet = false

    func run() throws {
        BenchBuild.announce()
        try CoreBenchmark(iterations: iterations, countMallocs: countMallocs, quiet: quiet).run()
    }
}

/// `hotspot-lab bench vm` (`VMBenchmark`).
struct BenchVM: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vm",
        abstract: "Time the VM runner: start to hwsim ready, to first association, and overhead vs the host."
    )

    @OptionGroup var vm: VMOptionsGroup

    @Option(help: "Runs of each measurement (the median is reported).")
    var runs: Int = 3

    @Option(help: "Target for start -> hwsim ready, in seconds (TCG on a 2-core machine).")
    var target: Double = 8

    func run() async throws {
        BenchBuild.announce()
        guard runs > 0 else { throw ValidationError("--runs must be at least 1") }
        try await VMBenchmark(options: try vm.options(), runs: runs, target: target).run()
    }
}

/// `hotspot-lab bench protocol` (`ProtocolBenchmark`).
struct BenchProtocol: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "protocol",
        abstract: "hotspotd command round trip p50/p99 with 1, 10, 100 helpers; evaluate arbitration with 100 helpers.")

    @Option(help: "Helper counts to measure.") var helpers: [Int] = [1, 10, 100]
    @Option(help: "Maintain round trips per helper count.") var roundTrips: Int = 2000
    @Option(help: "filterScanList rounds per helper count (every helper answers each).") var scanRounds: Int = 200
    @Option(help: "Evaluate arbitrations with the largest helper count.") var arbitrations: Int = 100

    func run() throws {
        BenchBuild.announce()
        try ProtocolBenchmark(helpers: helpers, roundTrips: roundTrips, scanRounds: scanRounds, arbitrations: arbitrations).run()
    }
}

/// `hotspot-lab bench providers` (`ProviderBenchmark`).
struct BenchProviders: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "providers",
        abstract: "A provider pair's cold start (launch to first answer) and warm command round trip, hotspotd in process.")

    @Option(help: "Cold starts (each join launches both providers; leaving stops them).") var coldStarts: Int = 20
    @Option(help: "Maintain round trips to the running authentication provider.") var roundTrips: Int = 1000
    @Flag(help: "Run the evaluation provider in its netns sandbox (root), as hotspotd does by default.") var sandbox = false

    func run() throws {
        BenchBuild.announce()
        guard coldStarts >= 1, roundTrips >= 1 else { throw ValidationError("--cold-starts and --round-trips must be at least 1") }
        try ProviderBenchmark(coldStarts: coldStarts, roundTrips: roundTrips, sandbox: sandbox).run()
    }
}

/// `hotspot-lab bench lab` (`LabBenchmark`).
struct BenchLab: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lab",
        abstract: "Namespace pairs joined by veth: our netlink vs iproute2 `ip` commands (bring-up and teardown)."
    )

    @Option(help: "Comma-separated pair counts.")
    var sizes: String = "1,10,100"

    @Flag(help: "Only measure our netlink code.")
    var skipIP = false

    /// Test hook: build a lab pair by pair, start a sleeper in the first namespace after this many pairs,
    /// print `PAUSED <prefix>` and wait to be killed (used by the SIGKILL-halfway cleanup test).
    @Option(help: .hidden)
    var pauseAfter: Int?

    /// Test hook with --pause-after: also create a radio in each pair's first namespace (needs mac80211_hwsim).
    @Flag(help: .hidden)
    var withRadios = false

    func run() throws {
        BenchBuild.announce()
        LabSignals.install(command: "bench lab")
        try LabBenchmark(sizes: sizes, skipIP: skipIP, pauseAfter: pauseAfter, withRadios: withRadios).run()
    }
}

/// `hotspot-lab bench sequence` (`SequenceBenchmark`).
struct BenchSequence: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sequence",
        abstract: "Time the captive sequence, join request to Authenticated, broken down (association, DHCP, evaluate, authenticate, first general request).")

    @Option(help: "Labs to run (the median and the spread are reported).")
    var runs: Int = 3

    @Option(help: "The topology (its first station joins its first hotspot).")
    var topology: String = "topologies/captive.yaml"

    @OptionGroup var placement: Placement
    @OptionGroup var tier: TierOption

    func run() async throws {
        BenchBuild.announce()
        var bench = try SequenceBenchmark(runs: runs, topologyPath: ScenarioFiles.resolveFolder(topology))
        bench.linkMode = try tier.mode() ?? .radio
        if bench.linkMode == .radio { try await placement.relayIfNeeded() }
        LabSignals.install(command: "bench sequence")
        try bench.run()
    }
}

/// `hotspot-lab bench demo` (`DemoBenchmark`).
struct BenchDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Wall time of `hotspot-lab demo` and of `hotspot-lab run` over the scenario folder (each as a separate command, VM boot included).")

    @Flag(help: "Skip the scenario folder (the demo only).")
    var demoOnly = false

    func run() throws {
        BenchBuild.announce()
        try DemoBenchmark(demoOnly: demoOnly).run()
    }
}

/// `hotspot-lab bench replay` (`ReplayBenchmark`).
struct BenchReplay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Time a replay of the captive sequence: start (lab up) and run time compared with the recording's duration.")

    @Option(help: "The scenario recorded, then replayed.")
    var scenario: String = "topologies/scenarios/captive.yaml"

    @OptionGroup var placement: Placement

    func run() async throws {
        BenchBuild.announce()
        let bench = try ReplayBenchmark(scenarioPath: ScenarioFiles.resolveFolder(scenario))
        try await placement.relayIfNeeded()
        LabSignals.install(command: "bench replay")
        try bench.run()
    }
}

/// `hotspot-lab bench profile` (`ProfileBenchmark`).
struct BenchProfile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Where the emulated machine's time goes in one scenario: processes per binary (BSD accounting) and CPU samples per binary and library (perf).",
        discussion: "Records in the VM, reports on the host. Needs perf (linux-perf). Raw files: acct, perf.data, kallsyms in the output folder.")

    @Option(help: "The scenario to profile.")
    var scenario: String = "topologies/scenarios/captive.yaml"

    @Option(help: "CPU samples per second per CPU.")
    var frequency: Int = 199

    @Flag(help: "Also record call chains (perf record -g), for `perf report -g` of the raw perf.data.")
    var callGraph = false

    @Option(help: "Only print the tables of an earlier profile folder (acct, perf.data, kallsyms).")
    var report: String?

    @OptionGroup var placement: Placement

    func run() async throws {
        BenchBuild.announce()
        if let report { return try ProfileBenchmark.report(folder: report) }
        let bench = try ProfileBenchmark(scenarioPath: ScenarioFiles.resolveFolder(scenario), frequency: frequency, callGraph: callGraph)
        if InVM.isActive, let share = InVM.resultsDirectory {
            try await placement.relayIfNeeded()  // in the VM: no relay; the labs log to the host's folder
            return try bench.record(into: share + "/profile")
        }
        var folder: String?
        do {
            try await placement.relayIfNeeded { folder = $0 }
        } catch let exit as ExitCode {
            guard exit.rawValue == 0, let folder else { throw exit }
            return try ProfileBenchmark.report(folder: folder + "/profile")
        }
        // On a host kernel with mac80211_hwsim: record and report here.
        let here = (ProcessInfo.processInfo.environment["HOTSPOT_LAB_LOGS"] ?? "/tmp/hotspot-lab") + "/profile-\(getpid())"
        try bench.record(into: here)
        try ProfileBenchmark.report(folder: here)
    }
}
