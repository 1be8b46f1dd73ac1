import Foundation
import Testing
@testable import LabKit

/// Root tests that boot the real VM (qemu, TCG here). One suite, serialized, so two VMs never compete
/// for the two cores. `VMSuiteTests.swift` adds the test that runs the in-VM suites.
@Suite("VM boots (root, qemu)", .serialized, .enabled(if: VMTestSupport.canBoot, VMTestSupport.bootSkipReason))
struct VMBootTests {
    @Test("root: inner exit code, stdout and stderr come back intact; the VM has no network device but lo")
    func exitCodeAndOutput() async throws {
        let collector = VMOutputCollector(prefix: "[vm exit test] ")
        let script = """
            printf 'out line 1\\nout line 2\\n'; echo 'err line' >&2; \
            printf 'ifaces:'; ls /sys/class/net | tr '\\n' ' '; echo; \
            printf 'in-vm=%s cwd=%s\\n' "$HOTSPOT_LAB_IN_VM" "$PWD"; exit 7
            """
        let job = VMJob(executable: "/bin/sh", arguments: ["-c", script], workingDirectory: "/usr/share", environment: ["PATH": "/usr/bin:/bin"])
        let result = try await VMRunner(options: VMOptions(timeout: 120, preloadHwsim: false)).run(job) { collector.append($0, $1) }
        #expect(result.exitCode == 7)
        #expect(collector.stdout == "out line 1\nout line 2\nifaces:lo \nin-vm=1 cwd=/usr/share\n")
        #expect(collector.stderr == "err line\n")
        #expect(result.innerStarted != nil)
        print(String(format: "[vm exit test] %@: prepared %.2f s, inner started %.2f s, qemu ended %.2f s after start",
                     result.accelerator.rawValue, result.prepared, result.innerStarted ?? -1, result.finished))
    }

    @Test("root: a VM that does not start the job in time is stopped, with the console tail in the error")
    func bootTimeout() async throws {
        let job = VMJob(executable: "/bin/true", arguments: [])
        let start = Date()
        let error = await #expect(throws: VMError.self) {
            _ = try await VMRunner(options: VMOptions(timeout: 30, bootTimeout: 0.5, preloadHwsim: false)).run(job) { _, _ in }
        }
        guard case .bootTimeout(let seconds, let tail)? = error else {
            Issue.record("expected bootTimeout, got \(String(describing: error))")
            return
        }
        #expect(seconds == 0.5)
        #expect(!tail.isEmpty)
        #expect(error?.description.contains("did not start within 0.5 s (VM hung or panicked); last console lines:") == true)
        #expect(Date().timeIntervalSince(start) < 10, "the VM must be stopped promptly")
    }
}
