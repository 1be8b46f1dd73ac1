import Foundation
import Glibc
import HotspotSystem
import Testing
import TestSupport

@Suite("Process runner")
struct ProcessTests {
    @Test func capturesStdoutStderrAndExitStatus() throws {
        let result = try ProcessRunner.run(ProcessConfiguration("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"]))
        #expect(result.status == .exited(3))
        #expect(result.stdout == "out\n")
        #expect(result.stderr == "err\n")
    }

    @Test func passesEnvironmentAndWorkingDirectory() throws {
        let config = ProcessConfiguration(
            "sh", ["-c", "echo $HSL_TEST_VALUE; pwd"],
            environment: ["HSL_TEST_VALUE": "forty-two", "PATH": "/usr/bin:/bin"], workingDirectory: "/tmp"
        )
        let result = try ProcessRunner.check(config)
        #expect(result.stdout == "forty-two\n/tmp\n")
    }

    @Test func missingExecutableNamesCommandAndErrno() {
        do {
            _ = try ChildProcess.spawn(ProcessConfiguration("/nonexistent/hsl-no-such-tool", ["x"]))
            Issue.record("spawn of a missing executable succeeded")
        } catch let error as SystemError {
            #expect(error.description == "spawn /nonexistent/hsl-no-such-tool x: No such file or directory (ENOENT)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func waitTimesOutThenTerminateSignals() throws {
        let child = try ChildProcess.spawn(ProcessConfiguration("/bin/sleep", ["30"]))
        #expect(child.pid > 0)
        #expect(processExists(child.pid))
        #expect(try child.wait(timeout: .milliseconds(50)) == nil)
        let status = try child.terminate(grace: .seconds(2))
        #expect(status == .signaled(SIGTERM))
        #expect(child.exitStatus == .signaled(SIGTERM))
        // Signalling a reaped child is a no-op, not an error and not a stray kill.
        try child.signal(SIGKILL)
    }

    @Test("terminate of a child in its own process group returns once the whole group is dead: a worker that ignores SIGTERM included")
    func terminateEndsTheWholeGroup() throws {
        let file = "/tmp/hsl-group-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(file) }
        // The outer shell (the group's leader) waits for its worker, which ignores SIGTERM and computes: SIGTERM ends the
        // leader, and only a signal to the group that cannot be ignored ends the worker.
        let child = try ChildProcess.spawn(ProcessConfiguration("/bin/sh", [
            "-c", "sh -c 'trap \"\" TERM; while :; do :; done' & echo $! > \(file).tmp; mv \(file).tmp \(file); wait",
        ], newProcessGroup: true))
        let deadline = ContinuousClock.now + .seconds(30)
        var worker: pid_t?
        while worker == nil, ContinuousClock.now < deadline {
            worker = readSmallFile(file).flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if worker == nil { usleep(2_000) }
        }
        let spinner = try #require(worker, "the shell never wrote its worker's pid")
        defer { if ProcessTree.liveMembers(ofGroup: child.pid).contains(spinner) { kill(spinner, SIGKILL) } }
        // The group is the leader and its worker once the `mv` that published the pid has exited: waited for, as
        // on a loaded machine it may still be in the group when the file appears.
        let settled = ContinuousClock.now + .seconds(30)
        while ProcessTree.liveMembers(ofGroup: child.pid).sorted() != [child.pid, spinner].sorted(), ContinuousClock.now < settled {
            usleep(2_000)
        }
        #expect(ProcessTree.liveMembers(ofGroup: child.pid).sorted() == [child.pid, spinner].sorted())
        let status = try child.terminate(grace: .seconds(2))
        #expect(status == .signaled(SIGTERM), "the leader: \(status)")
        let alive = ProcessTree.liveMembers(ofGroup: child.pid)
        #expect(alive.isEmpty, "alive in the group after terminate returned: \(alive) (the worker is \(spinner))")
    }

    @Test func writesOutputToLogFile() throws {
        let path = "/tmp/hsl-process-test-\(getpid()).log"
        defer { unlink(path) }
        let child = try ChildProcess.spawn(
            ProcessConfiguration("/bin/sh", ["-c", "echo one; echo two >&2"], stdout: .file(path, append: false), stderr: .file(path))
        )
        #expect(try child.wait(timeout: .seconds(10)) == .exited(0))
        let text = readSmallFile(path) ?? ""
        #expect(text.contains("one\n"))
        #expect(text.contains("two\n"))
    }

    @Test func checkReportsFailureWithStderr() {
        #expect(throws: SystemError.self) {
            try ProcessRunner.check(ProcessConfiguration("/bin/sh", ["-c", "echo boom >&2; exit 1"]))
        }
        do {
            try ProcessRunner.check(ProcessConfiguration("/bin/sh", ["-c", "echo boom >&2; exit 1"]))
        } catch {
            #expect("\(error)" == "run /bin/sh -c echo boom >&2; exit 1: exit status 1: boom")
        }
    }

    @Test func runTimeoutKillsChild() {
        do {
            _ = try ProcessRunner.run(ProcessConfiguration("/bin/sleep", ["30"]), timeout: .milliseconds(100))
            Issue.record("expected a timeout")
        } catch let error as SystemError {
            #expect(error.errno == ETIMEDOUT)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func systemErrorFormat() {
        let error = SystemError("create veth", "lab7-ap0 <-> lab7-sta0", errno: EEXIST)
        #expect(error.description == "create veth lab7-ap0 <-> lab7-sta0: File exists (EEXIST)")
        #expect(SystemError("open", "x", reason: "bad").description == "open x: bad")
    }

    @Test func namespaceWrapperRunsThroughNSExec() throws {
        let config = try ProcessConfiguration("hostapd", ["-t", "/tmp/x.conf"], stdout: .pipe).inNetworkNamespace("hsl0001ap")
        #expect(config.executable.hasSuffix("/hotspot-nsexec"))
        #expect(config.arguments == ["/run/netns/hsl0001ap", "--", "hostapd", "-t", "/tmp/x.conf"])
        #expect(config.stdout == .pipe)
    }

    /// Every lab daemon starts through hotspot-nsexec, so it is linked static and without the Swift runtime
    /// (Package.swift): no program interpreter (PT_INTERP) means no dynamic loader and no library to load before its
    /// exec. The control: hotspotd, a Swift program, has one.
    @Test func nsexecLoadsNoSharedLibrary() throws {
        func hasInterpreter(_ path: String) throws -> Bool {
            let file = try #require(fopen(path, "rb"), "open \(path)")
            defer { fclose(file) }
            var bytes = [UInt8](repeating: 0, count: 1 << 16)  // the ELF header and program headers come first
            bytes.removeSubrange(fread(&bytes, 1, bytes.count, file)...)
            #expect(bytes.count > 64 && bytes[0..<4] == [0x7f, 0x45, 0x4c, 0x46] && bytes[4] == 2, "\(path): expected a 64-bit ELF file")
            func value(_ at: Int, _ size: Int) -> Int { (0..<size).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
            let (offset, size, count) = (value(0x20, 8), value(0x36, 2), value(0x38, 2))
            return (0..<count).contains { value(offset + $0 * size, 4) == 3 }  // PT_INTERP
        }
        let nsexec = try NSExec.path()
        #expect(try !hasInterpreter(nsexec), "\(nsexec) has a program interpreter: it loads shared libraries before each daemon's exec")
        #expect(try hasInterpreter(try BuildProducts.locate("hotspotd")), "the control: hotspotd is dynamically linked")
    }

    @Test func namespaceWrapperPassesAResolvConfBeforeTheNamespace() throws {
        let run = try ProcessConfiguration("curl", ["-sS"]).inNetworkNamespace("hsl0001s0", resolvConf: "/tmp/s/resolv.conf")
        #expect(run.arguments == ["--resolv-conf", "/tmp/s/resolv.conf", "/run/netns/hsl0001s0", "--", "curl", "-sS"])
        let tied = try ProcessConfiguration("hotspotd", ["--run-dir", "/tmp/s"]).tiedToThisProcess(inNetworkNamespace: "hsl0001s0", resolvConf: "/tmp/s/resolv.conf")
        #expect(tied.arguments == ["--die-with", String(getpid()), "--resolv-conf", "/tmp/s/resolv.conf", "/run/netns/hsl0001s0", "--", "hotspotd", "--run-dir", "/tmp/s"])
        let plain = try ProcessConfiguration("hotspotd").tiedToThisProcess(inNetworkNamespace: nil)
        #expect(plain.arguments == ["--die-with", String(getpid()), "-", "--", "hotspotd"])
    }

    @Test func startTimeOfSelfIsKnown() {
        #expect(processStartTime(getpid()) != nil)
        #expect(processStartTime(0x3fff_fff0) == nil)
    }
}

/// `ProcessTree`: what a process tree computed, from /proc (the lab's registration wait reads it).
@Suite("Process CPU time, with descendants")
struct ProcessTreeTests {
    /// Waits (polling /proc, at most 60 s) until `condition` holds for the tree's CPU seconds.
    static func waitForCPU(_ pid: pid_t, _ condition: (Double) -> Bool) -> Double? {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let cpu = ProcessTree.treeSeconds(pid), condition(cpu) { return cpu }
            usleep(20_000)
        }
        return ProcessTree.treeSeconds(pid)
    }

    @Test("a shell whose child computes: the tree's CPU grows while the shell's own does not; a sleeper's stays near 0")
    func descendantsCounted() throws {
        // The inner shell is a child, not an exec (the `:` after it): the outer one only waits for it.
        let wrapper = try ChildProcess.spawn(ProcessConfiguration("/bin/sh", ["-c", "sh -c 'while :; do :; done'; :"]))
        let sleeper = try ChildProcess.spawn(ProcessConfiguration("/bin/sleep", ["60"]))
        defer {
            for pid in ProcessTree.children(wrapper.pid) { kill(pid, SIGKILL) }
            _ = try? wrapper.terminate(grace: .seconds(2))
            _ = try? sleeper.terminate(grace: .seconds(2))
        }
        let tree = Self.waitForCPU(wrapper.pid) { $0 >= 0.3 }
        #expect((tree ?? 0) >= 0.3, "the busy child's CPU is counted in its parent's tree: \(tree ?? -1)")
        #expect((ProcessTree.seconds(wrapper.pid) ?? 1) < 0.1, "the waiting shell itself computes nothing")
        #expect(ProcessTree.children(wrapper.pid).count == 1)
        #expect((ProcessTree.treeSeconds(sleeper.pid) ?? 1) < 0.1)
        #expect(ProcessTree.treeSeconds(999_999_999) == nil, "no such process")
    }

    @Test("root: a starved spinner waits on a run queue (its wait grows, it reads runnable); a sleeper neither computes nor waits",
          .requiresRoot)
    func starvedSpinnerWaits() throws {
        // Both spinners on CPU 0; the one at nice 0 has about 68 times the weight of the one at nice 19 (at nice -20,
        // 5900 times: the starved one then ran, and had its wait added, only every few seconds).
        func spinner(nice: Int) throws -> ChildProcess {
            try ChildProcess.spawn(ProcessConfiguration("/usr/bin/nice", ["-n", "\(nice)", "/usr/bin/taskset", "-c", "0", "/bin/sh", "-c", "while :; do :; done"]))
        }
        let starved = try spinner(nice: 19)
        let hog = try spinner(nice: 0)
        let sleeper = try ChildProcess.spawn(ProcessConfiguration("/bin/sleep", ["60"]))
        defer {
            for process in [starved, hog, sleeper] { _ = try? process.terminate(grace: .seconds(2)) }
        }
        // Until both run under taskset's exec of sh (/proc/PID/stat names sh), then the starting point.
        let deadline = ContinuousClock.now + .seconds(60)
        func comm(_ pid: pid_t) -> String? { readSmallFile("/proc/\(pid)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines) }
        while ContinuousClock.now < deadline && (comm(starved.pid) != "sh" || comm(hog.pid) != "sh") { usleep(20_000) }
        let first = try #require(ProcessTree.treeUsage(starved.pid))
        let sleeperFirst = try #require(ProcessTree.treeUsage(sleeper.pid))
        var last = first
        while ContinuousClock.now < deadline, let usage = ProcessTree.treeUsage(starved.pid), usage.waited - first.waited < 0.5 {
            last = usage
            usleep(50_000)
        }
        last = try #require(ProcessTree.treeUsage(starved.pid))
        #expect(last.waited - first.waited >= 0.5, "the starved spinner's run-queue wait grows: \(first) → \(last)")
        #expect(last.cpu - first.cpu < (last.waited - first.waited) / 2, "it waited far more than it ran: \(first) → \(last)")
        #expect(last.runnable, "a spinner is always runnable")
        let sleeperLast = try #require(ProcessTree.treeUsage(sleeper.pid))
        #expect(!sleeperLast.runnable && sleeperLast.waited - sleeperFirst.waited < 0.05 && sleeperLast.cpu < 0.1,
                "a sleeper neither computes nor waits: \(sleeperFirst) → \(sleeperLast)")
        #expect(ProcessTree.treeUsage(999_999_999) == nil, "no such process")
    }
}
