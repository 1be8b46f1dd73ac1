import Foundation
import Testing
@testable import LabKit

/// The end-to-end harness: ONE VM boot runs this same test bundle inside, filtered to the suites whose
/// type name starts with `InVM` (`InVM.suiteFilter`), with HOTSPOT_LAB_IN_VM=1. The inner output is
/// streamed live; the test fails if the inner run fails, or if it ran zero tests (all skipped or
/// filtered away). See docs/VM.md for the convention.
extension VMBootTests {
    @Test("root: the InVM suites pass inside one VM boot (mac80211_hwsim, hostapd, wpa_supplicant, dnsmasq)")
    func suitesInsideOneBoot() async throws {
        let bundle = try #require(VMSuiteRun.testBundlePath(), "cannot find the running test bundle from /proc/self/exe")
        let results = FileManager.default.temporaryDirectory.appendingPathComponent("hslvm-suite-\(getpid())").path
        try FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: results) }
        let collector = VMOutputCollector(prefix: "[vm] ")
        let job = VMSuiteRun.job(bundle: bundle)
        // About 810 s under TCG with every InVM suite (certify 276 s, scenarios ~330 s, replay 161 s); room for a slow machine.
        let options = VMOptions(timeout: 1800, resultsDirectory: results, preloadHwsim: VMSuiteRun.preloadHwsim)
        let result = try await VMRunner(options: options).run(job) { collector.append($0, $1) }
        let xml = (try? String(contentsOfFile: "\(results)/xunit.xml", encoding: .utf8)) ?? ""
        let counts = VMSuiteRun.count(xunit: xml)
        print("[vm] inner run: exit \(result.exitCode), \(counts.total) tests, \(counts.skipped) skipped, \(counts.failed) failed; "
              + String(format: "inner started %.2f s, VM done %.2f s after start (%@)", result.innerStarted ?? -1, result.finished, result.accelerator.rawValue))
        #expect(result.exitCode == 0, "the in-VM test run failed (exit \(result.exitCode)); its output is above, prefixed [vm]")
        #expect(!xml.isEmpty, "the in-VM run wrote no xunit.xml")
        #expect(counts.total - counts.skipped > 0, "the in-VM run ran zero tests (\(counts.total) found, \(counts.skipped) skipped)")
        #expect(counts.failed == 0)
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

    /// Which suites run inside: every `InVM` suite, or `$HOTSPOT_LAB_VM_FILTER` (a developer running one suite:
    /// `HOTSPOT_LAB_VM_FILTER=InVMScenarioTests swift test --filter suitesInsideOneBoot`).
    static var filter: String {
        let custom = ProcessInfo.processInfo.environment["HOTSPOT_LAB_VM_FILTER"] ?? ""
        return custom.isEmpty ? InVM.suiteFilter : custom
    }

    /// The bundle run with Swift Testing only, filtered to the in-VM suites, writing xunit to the results share.
    static func job(bundle: String) -> VMJob {
        VMJob(
            executable: bundle,
            arguments: [
                // One kernel is shared by every InVM suite of the boot: run them one at a time.
                "--testing-library", "swift-testing", "--no-parallel", "--filter", filter,
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
