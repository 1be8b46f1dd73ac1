import Foundation
import Glibc
import HotspotSystem
import Netlink
import TestSupport
import Testing
@testable import LabKit
@testable import LabSandbox

/// Issue 27 item 4: signals exact for `hotspot-lab up` (the signal service, `SignalService` in HotspotSystem).
/// On the host with `--link veth --no-stations` (no VM): captive.yaml, 3 namespaces. Every wait is for a line,
/// a state or an exit, never a fixed time.
@Suite("signals exact (root)", .tags(.root), .requiresRoot, .serialized)
struct SignalServiceRootTests {
    static var topology: String { TopologyParserTests.root + "/topologies/captive.yaml" }

    static func logs() throws -> String {
        let dir = NSTemporaryDirectory() + "hsl-sig-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// `up`'s arguments for run id `runID`.
    static func upArguments(_ runID: String, logs: String, seconds: Int = 900) -> [String] {
        ["up", "--link", "veth", "--no-stations", "--for", "\(seconds)", "--run-id", runID, "--logs", logs, topology]
    }

    /// Waits until `file` holds `needle` (or `process` ended, or 300 s passed); returns the file's text.
    @discardableResult
    static func waitFor(_ needle: String, in file: String, while process: ChildProcess? = nil) throws -> String {
        let deadline = ContinuousClock.now + .seconds(300)
        while ContinuousClock.now < deadline {
            let text = readSmallFile(file) ?? ""
            if text.contains(needle) { return text }
            if let process, try process.poll() != nil { return readSmallFile(file) ?? "" }
            usleep(2000)
        }
        return readSmallFile(file) ?? ""
    }

    /// The signal numbers of a mask line of /proc/PID/status (`SigIgn:`, `SigCgt:`).
    static func mask(_ field: String, of pid: pid_t) -> Set<Int32> {
        guard let status = readSmallFile("/proc/\(pid)/status"),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let bits = UInt64(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces), radix: 16) else { return [] }
        return Set((1...64).filter { bits & (1 << UInt64($0 - 1)) != 0 }.map { Int32($0) })
    }

    static func cleanUp(_ prefix: String, _ child: ChildProcess?) {
        if let child, (try? child.poll()) == nil { _ = try? child.terminate(grace: .seconds(10)) }
        if !NetworkNamespace.list().filter({ $0.hasPrefix(prefix) }).isEmpty { _ = LabCleanup.cleanDeadRuns() }
    }

    @Test("`up | head -1` tears the lab down as soon as head exits (POLLERR on stdout), not after --for")
    func upNoticesItsStdoutClosing() throws {
        let logs = try Self.logs()
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let hotspotLab = try BuildProducts.locate("hotspot-lab")
        let runID = SignalChaosRootTests.freeRunID()
        let prefix = Lab.namePrefix + runID
        let errors = logs + "/up-\(runID).err"
        let command = ([hotspotLab] + Self.upArguments(runID, logs: logs, seconds: 900)).map { "'\($0)'" }.joined(separator: " ")
        // The shell ends when both have: head after one line, up once it noticed and tore down.
        let start = ContinuousClock.now
        let result = try ProcessRunner.run(ProcessConfiguration("bash", ["-c", "\(command) 2>'\(errors)' | head -1"]), timeout: .seconds(300))
        let took = ContinuousClock.now - start
        defer { Self.cleanUp(prefix, nil) }
        #expect(result.status == .exited(0), "\(result.status): \(readSmallFile(errors) ?? "")")
        #expect(result.stdout.hasPrefix("lab \(prefix) up: "), "head read: \(result.stdout)")
        #expect(took < .seconds(300), "up stayed up \(took) after head exited (its --for is 900 s)")
        let left = try SignalChaosRootTests.leftovers(prefix: prefix, logs: logs)
        #expect(left.isEmpty, "left: \(left)")
    }

    @Test("nohup: SIGHUP stays ignored (not caught), SIGTERM still tears down; the lab names the signal that stopped it")
    func nohupKeepsSighupIgnored() throws {
        let logs = try Self.logs()
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let hotspotLab = try BuildProducts.locate("hotspot-lab")
        let runID = SignalChaosRootTests.freeRunID()
        let prefix = Lab.namePrefix + runID
        let output = logs + "/up-\(runID).txt"
        // nohup sets SIGHUP to SIG_IGN and execs in place: the child's pid is up's.
        let child = try ChildProcess.spawn(ProcessConfiguration("nohup", [hotspotLab] + Self.upArguments(runID, logs: logs),
                                                                stdout: .file(output), stderr: .file(output)))
        defer { Self.cleanUp(prefix, child) }
        let text = try Self.waitFor("tears it down", in: output, while: child)
        try #require(text.contains("tears it down"), "up did not come up: \(text)")
        #expect(Self.mask("SigIgn", of: child.pid).contains(SIGHUP), "SIGHUP not ignored")
        #expect(!Self.mask("SigCgt", of: child.pid).contains(SIGHUP), "SIGHUP caught despite nohup")
        #expect(Self.mask("SigCgt", of: child.pid).isSuperset(of: [SIGINT, SIGTERM, SIGPIPE]))
        // SIGHUP then SIGTERM: were SIGHUP taken, it would be the first stop and named in the last line.
        try child.signal(SIGHUP)
        try child.signal(SIGTERM)
        let status = try child.wait(timeout: .seconds(120))
        let final = readSmallFile(output) ?? ""
        #expect(status == .exited(0), "\(String(describing: status)): \(final)")
        #expect(final.contains("lab \(prefix) down in") && final.contains("(SIGTERM)"), "\(final)")
        #expect(!final.contains("SIGHUP"), "\(final)")
        let left = try SignalChaosRootTests.leftovers(prefix: prefix, logs: logs)
        #expect(left.isEmpty, "left: \(left)")
    }

    /// Runs `up` as a background job of a non-interactive shell (`bash -c 'up … & wait'`), which starts it with
    /// SIGINT ignored; returns the shell, up's pid and its output file.
    static func backgroundUp(_ hotspotLab: String, _ runID: String, logs: String) throws -> (ChildProcess, pid_t, String) {
        let output = logs + "/up-\(runID).txt"
        let command = ([hotspotLab] + Self.upArguments(runID, logs: logs)).map { "'\($0)'" }.joined(separator: " ")
        let shell = try ChildProcess.spawn(ProcessConfiguration("bash", ["-c", "\(command) >'\(output)' 2>&1 & echo $!; wait $!"],
                                                                stdout: .pipe, stderr: .discard))
        let pid = pid_t(readFirstLine(fd: shell.stdoutFD!, timeout: .seconds(10)).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        return (shell, pid, output)
    }

    /// The issue's repro: `bash -c 'hotspot-lab up … & sleep 0.02; kill -INT $!; wait'` must stop the lab. A
    /// non-interactive shell starts a background job with SIGINT ignored (POSIX 2.11; `sleep` there, the control,
    /// shows it); up takes SIGINT over all the same (docs/DECISIONS.md), so `kill -INT` stops it whenever it comes
    /// once the handler is in place. The moment is taken from /proc (SigCgt), not from a sleep: a SIGINT sent
    /// before the handler exists is dropped by the kernel while the shell's SIG_IGN holds, whatever up does. Before
    /// issue 27's decision up kept SIGINT ignored and ran its whole --for.
    @Test("a background job of a shell (SIGINT inherited ignored): SIGINT is taken over and stops up at once, at its start and once the lab is up")
    func backgroundJobStopsOnSigint() throws {
        let logs = try Self.logs()
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let hotspotLab = try BuildProducts.locate("hotspot-lab")
        // Control: what the shell hands a background job.
        let control = try ChildProcess.spawn(ProcessConfiguration("bash", ["-c", "sleep 60 & echo $!; wait"], stdout: .pipe, stderr: .discard))
        let sleeper = pid_t(readFirstLine(fd: control.stdoutFD!, timeout: .seconds(10)).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        // The forked shell sets the disposition before it execs: read it once the child is `sleep`.
        let execDeadline = ContinuousClock.now + .seconds(10)
        while sleeper > 0, readSmallFile("/proc/\(sleeper)/comm") != "sleep\n", ContinuousClock.now < execDeadline { usleep(1000) }
        let controlIgnored = sleeper > 0 ? Self.mask("SigIgn", of: sleeper) : []
        if sleeper > 0 { kill(sleeper, SIGKILL) }
        if try control.wait(timeout: .seconds(10)) == nil { _ = try? control.terminate(grace: .seconds(1)) }
        #expect(controlIgnored.contains(SIGINT), "the shell did not start its background job with SIGINT ignored: \(controlIgnored)")

        // 1. SIGINT as soon as the handler is in (the repro's early moment): up ends by it at once, nothing is left.
        do {
            let runID = SignalChaosRootTests.freeRunID()
            let prefix = Lab.namePrefix + runID
            let (shell, pid, output) = try Self.backgroundUp(hotspotLab, runID, logs: logs)
            defer { Self.cleanUp(prefix, shell) }
            try #require(pid > 0)
            let deadline = ContinuousClock.now + .seconds(300)
            while !Self.mask("SigCgt", of: pid).contains(SIGINT), (try? shell.poll()) == nil, ContinuousClock.now < deadline { usleep(200) }
            try #require(Self.mask("SigCgt", of: pid).contains(SIGINT), "up never caught SIGINT: SigIgn \(Self.mask("SigIgn", of: pid))")
            let start = ContinuousClock.now
            kill(pid, SIGINT)
            let status = try shell.wait(timeout: .seconds(300))
            let took = ContinuousClock.now - start
            let final = readSmallFile(output) ?? ""
            // Killed by SIGINT before anything was made, 130 with the message during bring-up, or 0 and the cause.
            #expect(status == .exited(130) || (status == .exited(0) && final.contains("(SIGINT)")), "\(String(describing: status)): \(final)")
            #expect(took < .seconds(300), "up stayed \(took) after SIGINT (its --for is 900 s)")
            let left = try SignalChaosRootTests.leftovers(prefix: prefix, logs: logs)
            #expect(left.isEmpty, "left: \(left)")
        }

        // 2. SIGINT once the lab is up: torn down, the cause named.
        do {
            let runID = SignalChaosRootTests.freeRunID()
            let prefix = Lab.namePrefix + runID
            let (shell, pid, output) = try Self.backgroundUp(hotspotLab, runID, logs: logs)
            defer { Self.cleanUp(prefix, shell) }
            try #require(pid > 0)
            let text = try Self.waitFor("tears it down", in: output, while: shell)
            try #require(text.contains("tears it down"), "up did not come up: \(text)")
            #expect(Self.mask("SigCgt", of: pid).contains(SIGINT) && !Self.mask("SigIgn", of: pid).contains(SIGINT))
            kill(pid, SIGINT)
            let status = try shell.wait(timeout: .seconds(300))
            let final = readSmallFile(output) ?? ""
            #expect(status == .exited(0), "\(String(describing: status)): \(final)")
            #expect(final.contains("lab \(prefix) down in") && final.contains("(SIGINT)"), "\(final)")
            let left = try SignalChaosRootTests.leftovers(prefix: prefix, logs: logs)
            #expect(left.isEmpty, "left: \(left)")
        }
    }

    @Test("a SIGTERM pending from before exec (blocked by the parent) is honoured at once: up ends by it, nothing is made")
    func pendingSignalHonoured() throws {
        let logs = try Self.logs()
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let hotspotLab = try BuildProducts.locate("hotspot-lab")
        let runID = SignalChaosRootTests.freeRunID()
        let prefix = Lab.namePrefix + runID
        let output = logs + "/up-\(runID).txt"
        // Block SIGTERM, send it to ourselves (pending), exec up: the mask and the pending signal survive exec.
        let script = """
            import os, signal, sys
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
            os.kill(os.getpid(), signal.SIGTERM)
            os.execv(sys.argv[1], sys.argv[1:])
            """
        let child = try ChildProcess.spawn(ProcessConfiguration("python3", ["-c", script, hotspotLab] + Self.upArguments(runID, logs: logs),
                                                                stdout: .file(output), stderr: .file(output)))
        defer { Self.cleanUp(prefix, child) }
        let status = try child.wait(timeout: .seconds(120))
        #expect(status == .signaled(SIGTERM), "\(String(describing: status)): \(readSmallFile(output) ?? "")")
        #expect(!(readSmallFile(output) ?? "").contains("tears it down"))
        let left = try SignalChaosRootTests.leftovers(prefix: prefix, logs: logs)
        #expect(left.isEmpty, "left: \(left)")
    }

    /// Signals aimed at the last steps of bring-up (after the last object is made: readiness waits), where
    /// nothing refuses to be made: each run either printed its summary (then it ends 0) or ends 128 + signal
    /// with the message, never 0 without a summary.
    @Test("a signal in the last bring-up step: 128 + signal and the message, or the summary and 0")
    func signalInLastBringUpStep() throws {
        let logs = try Self.logs()
        defer { try? FileManager.default.removeItem(atPath: logs) }
        var outcomes: [String] = []
        for run in 0..<8 {
            let signal = [SIGINT, SIGTERM, SIGHUP, SIGPIPE][run % 4]
            let runID = SignalChaosRootTests.freeRunID()
            let prefix = Lab.namePrefix + runID
            // multi-hotspot (no stations) journals 17 lines; the 17th is its last process, then readiness waits follow.
            let child = try SignalChaosRootTests.startUp(runID: runID, logs: logs, stage: 17)
            try child.signal(signal)
            let status = try child.wait(timeout: .seconds(120))
            let text = readSmallFile(logs + "/up-\(runID).txt") ?? ""
            let summary = text.contains("tears it down")
            outcomes.append("\(signalName(signal)): \(status.map { "\($0)" } ?? "running"), summary \(summary)")
            if summary {
                #expect(status == .exited(0), "run \(run): \(text)")
            } else {
                #expect(status == .exited(128 + signal), "run \(run): \(String(describing: status)) without a summary: \(text)")
                #expect(text.contains("\(signalName(signal)) during bring-up; lab \(prefix) torn down"), "run \(run): \(text)")
            }
            let left = try SignalChaosRootTests.leftovers(prefix: prefix, logs: logs)
            #expect(left.isEmpty, "run \(run): left: \(left)")
            Self.cleanUp(prefix, child)
        }
        print("last-step signals: \(outcomes.joined(separator: "; "))")
    }
}
