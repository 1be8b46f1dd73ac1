import Foundation
import HotspotSystem
import Netlink
import Testing
import TestSupport
@testable import LabKit
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabVM

/// The sequences end to end, inside the hotspot-lab VM (one boot for every InVM suite, VMSuiteTests):
/// real radios (mac80211_hwsim), hostapd, wpa_supplicant, dnsmasq, the nftables gate, the portals,
/// hotspotd on the station's interface, the reference helpers as processes. Every shipped scenario
/// (topologies/scenarios) must pass; a failure prints the failing step and the trace's timeline.
@Suite("InVM: scenarios end to end (root)", .tags(.inVM), .serialized,
       .enabled(if: InVM.hwsimAvailable && TestHost.isRoot, "needs root and mac80211_hwsim: runs inside the hotspot-lab VM (see VMSuiteTests)"))
struct InVMScenarioTests {
    static let folder = "topologies/scenarios"
    static var files: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".yaml") && !nativeOnlyForNow($0) }.sorted()
    }

    /// The IPv6 scenarios (topologies/dual.yaml, v6-only.yaml) run in the native tier only for now
    /// (NativeTierRootTests, on the host): in CI on 2026-11-26 all 12 passed in the VM too, but their tier parity did
    /// not hold (the order of commands to the two helpers, and one result without its command type, differed between
    /// the tiers). Open in issues 25 and 26 until the parity comparison or the scenarios are made exact.
    static func nativeOnlyForNow(_ file: String) -> Bool {
        file.hasPrefix("dual-") || file.hasPrefix("v6-only-") || file.hasPrefix("ipv6-")
    }

    static func loadHwsim() throws {
        _ = sigpipeReported
        if !FileManager.default.fileExists(atPath: "/sys/module/mac80211_hwsim") {
            _ = try ProcessRunner.check(ProcessConfiguration("modprobe", ["mac80211_hwsim", "radios=0"]), timeout: .seconds(30))
        }
    }

    /// A SIGPIPE in this process (a write to a socket or pipe whose reader is gone, without MSG_NOSIGNAL) is
    /// reported with the writing thread's stack on stderr (the bundle's frames as offsets: `addr2line -f -e BUNDLE`),
    /// instead of ending the whole in-VM run with exit 141 (seen once, 2026-11-29, three labs at a time beside two CPU
    /// hogs: the inner run died between two scenarios and named no cause). The scenario, certify and radio replay
    /// suites load hwsim through `loadHwsim`, which installs it first; it is never installed on the host (where
    /// `TLSClientTests` checks that a broken pipe is an error).
    static let sigpipeReported: Void = {
        // glibc's backtrace(3), which Swift's Glibc module does not export, looked up before any signal comes, and
        // called once here: its first call loads libgcc_s (dlopen, malloc), which a signal handler must not do.
        if let b = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "backtrace"), let s = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "backtrace_symbols_fd") {
            let backtrace = unsafeBitCast(b, to: SigpipeBacktrace.self)
            var frame: UnsafeMutableRawPointer?
            _ = backtrace(&frame, 1)
            sigpipeBacktrace = (backtrace, unsafeBitCast(s, to: SigpipeSymbols.self))
        }
        signal(SIGPIPE) { _ in
            let text = "SIGPIPE in the in-VM test process (a write to a closed socket or pipe), ignored; the writer:\n"
            _ = text.withCString { write(2, $0, strlen($0)) }
            guard let (backtrace, symbols) = sigpipeBacktrace else { return }
            // The frames on the handler's stack, not the heap.
            withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: 64) { frames in
                symbols(frames.baseAddress, backtrace(frames.baseAddress, Int32(frames.count)), 2)
            }
        }
    }()

    /// Runs a scenario (retried once: a pass on the retry is reported as flaky, hostap-style) and reports
    /// the failing step and the timeline when it fails.
    static func run(_ scenario: Scenario) throws -> ScenarioResult {
        try loadHwsim()
        let result = ScenarioRunner().runWithRetry(scenario)
        if result.flaky { print("FLAKY: scenario \(scenario.name) failed once and passed on the retry") }
        if !result.passed {
            print("scenario \(scenario.name) failed; timeline:\n" + Timeline.render(result.timeline).joined(separator: "\n"))
        }
        #expect(result.setupError == nil, "\(result.setupError ?? "")")
        #expect(result.passed, "\(result.failure?.message ?? result.setupError ?? "not every step ran")")
        #expect(NetworkNamespace.list().filter { $0.hasPrefix("hsl") && !$0.hasPrefix("hslt") }.isEmpty, "a lab left namespaces behind")
        return result
    }

    /// The state paths of the guide's four sequences, asserted again from the trace on top of each file's own steps.
    static let guidePaths: [String: [String]] = [
        "captive": ["Evaluating", "Authenticating", "Authenticated", "Maintaining", "Authenticated"],
        "not-captive": ["Evaluating", "Authenticated"],
        "cached": ["Evaluating", "Authenticating", "Authenticated", "Inactive", "Maintaining", "Authenticated"],
        "ui-required": ["Evaluating", "Authenticating", "PresentingUI", "Authenticated"],
    ]

    /// Every shipped scenario, run two labs at a time (issue 19: each lab has its own air namespace and radios, and
    /// the vCPUs were idle most of a scenario's time), each retried once; then the namespaces left behind. Run once,
    /// the first time a test asks; each file's test then judges its own result. Three at a time, the longest first,
    /// was 0.84 of the time alone but not beside the rest of CI, and cost 1.26 times the CPU (bench/README.md, stop 47).
    static let shipped: (results: [String: Result<ScenarioResult, any Error>], leftovers: [String]) = {
        let outcomes = ParallelRuns.map(files, jobs: 2) { file -> Result<ScenarioResult, any Error> in
            Result {
                try loadHwsim()
                let scenario = try ScenarioParser.load(path: folder + "/" + file)
                let result = ScenarioRunner().runWithRetry(scenario)
                print("scenario \(file): \(result.passed ? "passed" : "FAILED") in \(String(format: "%.1f", result.duration)) s (lab up \(String(format: "%.1f", result.labUpSeconds)) s)")
                if result.flaky { print("FLAKY: scenario \(scenario.name) failed once and passed on the retry") }
                if !result.passed {
                    print("scenario \(scenario.name) failed; timeline:\n" + Timeline.render(result.timeline).joined(separator: "\n"))
                }
                return result
            }
        }
        let leftovers = NetworkNamespace.list().filter { $0.hasPrefix("hsl") && !$0.hasPrefix("hslt") }
        return (Dictionary(uniqueKeysWithValues: zip(files, outcomes)), leftovers)
    }()

    @Test("root: every shipped scenario passes end to end (two labs at a time)", arguments: files)
    func scenario(_ file: String) throws {
        let scenario = try ScenarioParser.load(path: Self.folder + "/" + file)
        let result = try #require(Self.shipped.results[file]).get()
        #expect(result.setupError == nil, "\(result.setupError ?? "")")
        #expect(result.passed, "\(result.failure?.message ?? result.setupError ?? "not every step ran")")
        #expect(Self.shipped.leftovers.isEmpty, "labs left namespaces behind: \(Self.shipped.leftovers)")
        if let path = Self.guidePaths[scenario.name] {
            #expect(result.path == path, "state path of \(scenario.name) from hotspotd's trace")
        }
        // Every step ran and each left hotspotd in a known state.
        #expect(result.steps.count == scenario.steps.count)
        #expect(!result.timeline.isEmpty)
        // The air was captured: a pcap with frames (more than its 24-byte header) in the lab's log folder.
        let size = (try? FileManager.default.attributesOfItem(atPath: result.logDirectory + "/air.pcap")[.size] as? Int) ?? 0
        #expect(size > 24, "air.pcap of \(scenario.name): \(size) bytes")
        // Parity (docs/SCENARIOS.md, "Tiers"): a scenario that runs in both tiers leaves its radio outcome in the results
        // share; the host side (VMBootTests.suitesInsideOneBoot) runs the native tier and compares.
        #expect(result.tier == "radio")
        if !scenario.needsAir, let folder = InVM.resultsDirectory {
            let data = try JSONEncoder().encode(TierOutcome(result))
            try FileManager.default.createDirectory(atPath: folder + "/" + TierParityCheck.folder, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: folder + "/" + TierParityCheck.folder + "/\(scenario.name).json", contents: data))
        }
    }

    @Test("root: a scenario that expects the wrong state fails, naming the step, the expected and the actual state")
    func wrongExpectationFails() throws {
        try Self.loadHwsim()
        let scenario = try ScenarioParser.parse("""
            topology: \(FileManager.default.currentDirectoryPath)/topologies/captive.yaml
            steps:
              - join: Cafe Lumiere
              - wait-state: Authenticated
              - expect-states: [Evaluating, Authenticated]
              - leave
            """, file: "wrong.yaml")
        let result = ScenarioRunner().run(scenario)
        #expect(!result.passed)
        let failure = try #require(result.failure)
        #expect(failure.index == 2)
        #expect(failure.message.contains("step 3 (wrong.yaml:5:5) `expect-states: [Evaluating, Authenticated]`"), "\(failure.message)")
        #expect(failure.message.contains("expected the states Evaluating -> Authenticated, actual Evaluating -> Authenticating -> Authenticated"),
                "\(failure.message)")
        #expect(result.steps.count == 3, "the run stops at the failing step")
        #expect(failure.state == "Authenticated")
    }
}

/// glibc's backtrace and backtrace_symbols_fd, for `InVMScenarioTests.sigpipeReported`'s handler (set once, before
/// the handler is installed; read only by it).
nonisolated(unsafe) private var sigpipeBacktrace: (SigpipeBacktrace, SigpipeSymbols)?
private typealias SigpipeBacktrace = @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>?, Int32) -> Int32
private typealias SigpipeSymbols = @convention(c) (UnsafePointer<UnsafeMutableRawPointer?>?, Int32, Int32) -> Void
