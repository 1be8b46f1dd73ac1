import Foundation
import Testing
@testable import LabKit
@testable import LabVM

/// Root tests that boot the real VM (qemu, TCG here). One suite, serialized, so that run together two of its VMs never
/// compete for the two cores. `VMSuiteTests.swift` adds the test that runs the in-VM suites; ci/test.sh runs that one
/// alone (CI's longest path) and the three short boots with the host suites, beside it.
@Suite("VM boots (root, qemu)", .serialized, .enabled(if: VMTestSupport.canBoot, VMTestSupport.bootSkipReason))
struct VMBootTests {
    @Test("root: inner exit code, stdout and stderr come back intact; the VM has no network device but lo")
    func exitCodeAndOutput() async throws {
        let collector = VMOutputCollector(prefix: "[vm exit test] ")
        let script = """
            printf 'out line 1\\nout line 2\\n'; echo 'err line' >&2; \
            printf 'ifaces:'; ls /sys/class/net | tr '\\n' ' '; echo; \
            printf 'in-vm=%s cwd=%s\\n' "$HOTSPOT_LAB_IN_VM" "$PWD"; \
            printf 'clocksource=%s\\n' "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" >&2; exit 7
            """
        let job = VMJob(executable: "/bin/sh", arguments: ["-c", script], workingDirectory: "/usr/share", environment: ["PATH": "/usr/bin:/bin"])
        let result = try await VMRunner(options: VMOptions(timeout: 120, preloadHwsim: false)).run(job) { collector.append($0, $1) }
        #expect(result.exitCode == 7)
        #expect(collector.stdout == "out line 1\nout line 2\nifaces:lo \nin-vm=1 cwd=/usr/share\n")
        // Under TCG the guest keeps time with the TSC (`tsc=reliable`), not the HPET it falls back to otherwise: `tsc`,
        // or `tsc-early` until the kernel's refined calibration (a second or two into the boot) switches to it.
        let clocksource = result.accelerator == .tcg ? ["tsc", "tsc-early"] : ["kvm-clock"]
        #expect(clocksource.map { "err line\nclocksource=\($0)\n" }.contains(collector.stderr), "\(collector.stderr)")
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
        #expect(Date().timeIntervalSince(start) < 30, "the VM must be stopped promptly (a bound for a hang, not a pace: the boot timeout is 0.5 s, the stop's grace 2 s)")
    }

    @Test("root: Ctrl-C stops the VM: hotspot-lab vm exits 130, its qemu is gone, its run folder removed")
    func interrupt() throws {
        let bundle = try #require(VMSuiteRun.testBundlePath(), "cannot find the running test bundle")
        let cli = ((bundle as NSString).deletingLastPathComponent as NSString).appendingPathComponent("hotspot-lab")
        try #require(FileManager.default.isExecutableFile(atPath: cli), "\(cli) not built (run swift build first, as ci/test.sh does)")
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let child = try VMChild.spawn([cli, "vm", "--", "selftest", "hwsim"], stdout: fds[1], stderr: fds[1])
        close(fds[1])
        let collector = VMOutputCollector(prefix: "[vm ctrl-c test] ")
        let reader = VMPipeReader(fd: fds[0]) { collector.append(.stdout, $0) }
        defer { child.stop(grace: 1); reader.finish() }

        // Wait until the job runs inside the VM: its run folder (owner = the CLI's pid) has `started`.
        var runDir: String?
        let deadline = Date().addingTimeInterval(90)
        while runDir == nil && Date() < deadline && child.poll() == nil {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? [] where name.hasPrefix("hotspot-lab-vm.") {
                let dir = "/tmp/\(name)"
                if (try? String(contentsOfFile: "\(dir)/owner", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) == "\(child.pid)",
                   FileManager.default.fileExists(atPath: "\(dir)/results/started") {
                    runDir = dir
                }
            }
            usleep(50_000)
        }
        let dir = try #require(runDir, "the VM never started the job")
        let qemuPIDs = VMTestSupport.children(of: child.pid)
        #expect(!qemuPIDs.isEmpty, "no qemu child found")
        kill(child.pid, SIGINT)
        let status = child.wait()
        reader.finish()
        #expect(VMChild.exitCode(status: status) == 130)
        #expect(collector.stdout.contains("hotspot-lab vm: interrupted, VM stopped"))
        for pid in qemuPIDs { #expect(kill(pid, 0) != 0, "qemu \(pid) still running") }
        #expect(!FileManager.default.fileExists(atPath: dir), "run folder \(dir) left behind")
    }
}
