import Foundation
import HotspotProtocol
import HotspotSystem
import Testing
@testable import LabKit
@testable import LabVM

/// The end-to-end harness: ONE VM boot runs this same test bundle inside, filtered to the suites tagged
/// `.inVM` (`Tag.inVM` in TestSupport, `InVM.suiteTag`), with HOTSPOT_LAB_IN_VM=1. The inner output is
/// streamed live; the test fails if the inner run fails, or if it ran zero tests (all skipped or
/// filtered away). See docs/VM.md for the convention.
extension VMBootTests {
    @Test("root: the InVM suites pass inside one VM boot (mac80211_hwsim, hostapd, wpa_supplicant, dnsmasq)")
    func suitesInsideOneBoot() async throws {
        let bundle = try #require(VMSuiteRun.testBundlePath(), "cannot find the running test bundle from /proc/self/exe")
        let results = FileManager.default.temporaryDirectory.appendingPathComponent("hslvm-suite-\(getpid())").path
        try FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: results) }
        // The native halves of both parity checks need nothing from the VM: they run beside it, on a thread of their own
        // (mostly waits: maintain intervals, session timers), instead of after it.
        let everySuite = ProcessInfo.processInfo.environment["HOTSPOT_LAB_VM_FILTER"] == nil
        let nativeSide = everySuite ? try SystemThread.start("native parity side") {
            TierParityCheck.prepareNative()
            CertifyParityCheck.prepareNative()
        } : nil
        defer { nativeSide?.join() }
        // As `hotspot-lab` prepares a lab job in the VM: the boot's lab CA made here, which every lab inside takes
        // (InVMCertifyTests checks that one did).
        try PortalTLS.prepareBootCA(share: results, openssl: try RunningTopology.findTool("openssl"))
        let collector = VMOutputCollector(prefix: "[vm] ")
        let job = try VMSuiteRun.job(bundle: bundle)
        // About 810-1050 s under TCG with every InVM suite on a quiet machine; a loaded one (a shared CI machine) has been
        // seen past 1800 s with certify and replay alone, so the bound is an hour (a hang, not a slow run).
        var options = VMOptions(timeout: 3600, resultsDirectory: results, preloadHwsim: VMSuiteRun.preloadHwsim)
        // As `hotspot-lab` runs lab jobs in the VM: the lab's modules load in the background while the bundle starts.
        options.preloadModules = LabKernelModules.modules
        let result = try await VMRunner(options: options).run(job) { collector.append($0, $1) }
        let xml = (try? String(contentsOfFile: "\(results)/xunit.xml", encoding: .utf8)) ?? ""
        let counts = VMSuiteRun.count(xunit: xml)
        print("[vm] inner run: exit \(result.exitCode), \(counts.total) tests, \(counts.skipped) skipped, \(counts.failed) failed; "
              + String(format: "inner started %.2f s, VM done %.2f s after start (%@)", result.innerStarted ?? -1, result.finished, result.accelerator.rawValue))
        #expect(result.exitCode == 0, "the in-VM test run failed (exit \(result.exitCode)); its output is above, prefixed [vm]")
        #expect(!xml.isEmpty, "the in-VM run wrote no xunit.xml")
        #expect(counts.total - counts.skipped > 0, "the in-VM run ran zero tests (\(counts.total) found, \(counts.skipped) skipped)")
        #expect(counts.failed == 0)
        // Parity: every scenario that runs in both tiers ran in the radio tier in the VM (its outcome in the results share)
        // and now runs in the native tier here; the two outcomes must be the same.
        nativeSide?.join()
        // Each native run is judged here too (the same judgment as NativeTierRootTests.scenario, which CI's host suites
        // skip so that the native labs run once: ci/test.sh).
        if everySuite {
            for file in NativeTierRootTests.files { try NativeTierRootTests.judge(file) }
        }
        try TierParityCheck.compare(radioFolder: results + "/" + TierParityCheck.folder, expected: everySuite)
        // The same for certify: the radio verdicts of InVMCertifyTests' sample of broken fixtures against the native tier's.
        try CertifyParityCheck.compare(radioFolder: results + "/" + CertifyParityCheck.folder, expected: everySuite)
    }
}

enum VMSuiteRun {
    /// Whether the suite's VM loads mac80211_hwsim radios=0 before the tests start. Off: by the InVM
    /// convention each suite loads the module itself when it is missing (docs/VM.md), which keeps the
    /// suites independent of how the VM was booted.
    static let preloadHwsim = false

    /// `.build*/debug/HotspotLabPackageTests.xctest` (the process running these tests).
    static func testBundlePath() -> String? {
        guard let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
              exe.hasSuffix(".xctest") else { return nil }
        return exe
    }

    /// Which suites run inside, as `--filter` arguments: every suite tagged `.inVM`, or `$HOTSPOT_LAB_VM_FILTER`
    /// (a regex; a developer running one suite: `HOTSPOT_LAB_VM_FILTER=InVMScenarioTests swift test --filter suitesInsideOneBoot`).
    static func filterArguments(bundle: String) throws -> [String] {
        let custom = ProcessInfo.processInfo.environment["HOTSPOT_LAB_VM_FILTER"] ?? ""
        if !custom.isEmpty { return ["--filter", custom] }
        let suites = try listSuites(bundle: bundle).filter { $0.tags.contains("." + InVM.suiteTag) }.map(\.id)
        guard !suites.isEmpty else {
            throw VMSuiteListError(description: "select the in-VM suites of \(bundle): no suite is tagged .\(InVM.suiteTag)")
        }
        return suites.flatMap { ["--filter", "^" + NSRegularExpression.escapedPattern(for: $0) + "$"] }
    }

    /// The suites of `bundle` (ID, type name, tags), from Swift Testing's own listing: `--list-tests` with its
    /// event stream (version 1 carries each test's tags, as `.name`). Nothing runs. Swift Testing 6.3's
    /// `--filter` cannot select by tag (`--filter tag:NAME` comes in a later release), so the inner run is
    /// given the IDs of the tagged suites instead.
    static func listSuites(bundle: String) throws -> [(id: String, name: String, tags: [String])] {
        let stream = FileManager.default.temporaryDirectory.appendingPathComponent("hslvm-list-\(getpid()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: stream) }
        try ProcessRunner.check(ProcessConfiguration(bundle, [
            "--testing-library", "swift-testing", "--list-tests",
            "--event-stream-output-path", stream, "--event-stream-version", "1",
        ]), timeout: .seconds(120))
        guard let text = try? String(contentsOfFile: stream, encoding: .utf8) else {
            throw VMSuiteListError(description: "list the tests of \(bundle): no event stream in \(stream)")
        }
        return try text.split(separator: "\n").compactMap { line in
            let record = try JSON.parse(Array(line.utf8))
            guard record["kind"]?.stringValue == "test", let test = record["payload"], test["kind"]?.stringValue == "suite",
                  let id = test["id"]?.stringValue, let name = test["name"]?.stringValue else { return nil }
            return (id, name, test["_tags"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        }
    }

    /// The bundle run with Swift Testing only, filtered to the in-VM suites, writing xunit to the results share.
    static func job(bundle: String) throws -> VMJob {
        VMJob(
            executable: bundle,
            arguments: [
                // One kernel is shared by every InVM suite of the boot: run them one at a time.
                "--testing-library", "swift-testing", "--no-parallel",
            ] + (try filterArguments(bundle: bundle)) + [
                "--xunit-output", "\(VMInit.resultsMount)/xunit.xml",
            ],
            workingDirectory: FileManager.default.currentDirectoryPath,
            environment: VMJob.passedEnvironment()
        )
    }

    /// Test cases, skipped and failed ones, from Swift Testing's xunit output.
    static func count(xunit: String) -> (total: Int, skipped: Int, failed: Int) {
        let cases = xunit.components(separatedBy: "<testcase").dropFirst()
        let skipped = cases.filter { $0.components(separatedBy: "</testcase>")[0].contains("<skipped") }.count
        let failed = cases.filter { $0.components(separatedBy: "</testcase>")[0].contains("<failure") }.count
        return (cases.count, skipped, failed)
    }
}

struct VMSuiteListError: Error, CustomStringConvertible {
    var description: String
}

extension VMUnitTests {
    /// The in-VM run selects suites by their `.inVM` tag; it used to select the suites whose type name starts
    /// with `InVM`. Both rules, applied to Swift Testing's listing of this bundle, give the same suites.
    @Test("the .inVM tag selects exactly the InVM suites (listed from this test bundle, nothing run)")
    func inVMSuiteSelection() throws {
        let bundle = try #require(VMSuiteRun.testBundlePath(), "cannot find the running test bundle from /proc/self/exe")
        let suites = try VMSuiteRun.listSuites(bundle: bundle)
        let tagged = Set(suites.filter { $0.tags.contains(".inVM") }.map(\.name))
        let named = Set(suites.filter { $0.id.contains("InVM") }.map(\.name))
        print("in-VM suites by tag: \(tagged.sorted().joined(separator: ", "))")
        #expect(tagged == named)
        #expect(tagged == ["InVMCertifyTests", "InVMHotspotWiFiTests", "InVMHwsimRadioTests", "InVMHwsimTests",
                           "InVMLabCrashRadioTests", "InVMProcessAccountingTests", "InVMReplayTests", "InVMScenarioTests"])
        // The job the VM boot runs filters to exactly those suites' IDs (unless a developer set HOTSPOT_LAB_VM_FILTER).
        guard (ProcessInfo.processInfo.environment["HOTSPOT_LAB_VM_FILTER"] ?? "").isEmpty else { return }
        let arguments = try VMSuiteRun.job(bundle: bundle).arguments
        let filters = zip(arguments, arguments.dropFirst()).filter { $0.0 == "--filter" }.map(\.1)
        #expect(Set(filters) == Set(suites.filter { tagged.contains($0.name) }.map { "^" + NSRegularExpression.escapedPattern(for: $0.id) + "$" }))
    }
}
