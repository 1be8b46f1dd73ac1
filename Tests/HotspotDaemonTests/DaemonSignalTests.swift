import Foundation
import Glibc
import HotspotSystem
import TestSupport
import Testing

/// hotspotd's signals go through the one signal service (issue 24/27): SIGTERM and SIGINT end the loop cleanly
/// (exit 0, sockets removed), SIGPIPE is ignored (owned), SIGHUP keeps its default; the daemon's threads never
/// take SIGTERM/SIGINT themselves (blocked there; the service's thread takes them).
@Suite("hotspotd signals")
struct DaemonSignalTests {
    /// The signal numbers of a mask line of /proc/PID/status (`SigIgn:`, `SigCgt:`, `SigBlk:`) of `task`.
    static func mask(_ field: String, pid: pid_t, task: pid_t? = nil) -> Set<Int32> {
        let path = task.map { "/proc/\(pid)/task/\($0)/status" } ?? "/proc/\(pid)/status"
        guard let status = readSmallFile(path),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let bits = UInt64(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces), radix: 16) else { return [] }
        return Set((1...64).filter { bits & (1 << UInt64($0 - 1)) != 0 }.map { Int32($0) })
    }

    @Test("SIGTERM and SIGINT stop hotspotd cleanly: exit 0, sockets removed", arguments: [SIGTERM, SIGINT])
    func stopSignalEndsTheLoop(signal: Int32) throws {
        let daemon = try DaemonUnderTest(name: "signal\(signal)")
        defer { try? FileManager.default.removeItem(atPath: daemon.runDir) }
        let pid = daemon.child.pid
        #expect(Self.mask("SigCgt", pid: pid).isSuperset(of: [SIGTERM, SIGINT]))
        #expect(Self.mask("SigIgn", pid: pid).contains(SIGPIPE))
        // SIGHUP: not caught; ignored only when hotspotd was started with it ignored (`nohup`: a disposition the
        // daemon keeps, SignalService.childDefaultSignals), as it is when this test process runs under nohup.
        let startedIgnoringHUP = Self.mask("SigIgn", pid: getpid()).contains(SIGHUP)
        #expect(!Self.mask("SigCgt", pid: pid).contains(SIGHUP) && Self.mask("SigIgn", pid: pid).contains(SIGHUP) == startedIgnoringHUP,
                "SIGHUP ignored by this test process: \(startedIgnoringHUP)")
        // Every thread but one (the signal service's) blocks SIGTERM and SIGINT. That thread unblocks them once it
        // runs, which may come after hotspotd answers (CI run 18 saw none yet on a loaded machine; a stop signal sent
        // meanwhile stays pending, not lost): waited for, with a bound.
        var tasks: [pid_t] = [], taking: [pid_t] = []
        let deadline = ContinuousClock.now + .seconds(20)
        repeat {
            tasks = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []).compactMap { pid_t($0) }
            taking = tasks.filter { !Self.mask("SigBlk", pid: pid, task: $0).contains(SIGTERM) }
            if taking.count == 1 { break }
            usleep(10_000)
        } while ContinuousClock.now < deadline
        #expect(taking.count == 1, "threads taking SIGTERM: \(taking) of \(tasks)")
        kill(pid, signal)
        daemon.child.process.waitUntilExit()
        #expect(daemon.child.process.terminationReason == .exit && daemon.child.process.terminationStatus == 0,
                "\(daemon.child.process.terminationReason) \(daemon.child.process.terminationStatus): \(daemon.child.output)")
        #expect(access(daemon.controlSocket, F_OK) != 0 && access(daemon.helperSocket, F_OK) != 0, "sockets left")
    }
}
