#if canImport(Glibc)
import Glibc
#endif

/// A process and its descendants, from procfs: `/proc/PID/stat` (the parent; utime, stime, and cutime and cstime of
/// the children it reaped) and `/proc/PID/task/TID/children`. The CPU time a tree has spent is what it computed,
/// whatever the machine's load (a process on a busy machine gets fewer CPU-seconds per second, not a different
/// number of them for the same work).
public enum ProcessTree {
    /// Clock ticks per second of /proc's times (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
    public static let ticksPerSecond = Double(max(sysconf(Int32(_SC_CLK_TCK)), 1))

    /// User and system CPU of `pid` and of every process below it (reaped children included), in seconds; nil when
    /// `pid` does not exist. A descendant that exits between the reads is counted by its parent once reaped.
    public static func treeSeconds(_ pid: pid_t) -> Double? {
        treeUsage(pid)?.cpu
    }

    /// What a process tree did up to one moment: the CPU it spent, and how long its live threads waited on a run
    /// queue for a CPU (runnable, not running). A tree that is starved on a busy machine waits; one that sleeps
    /// (for a timer, a socket, a child) neither computes nor waits, however busy the machine is.
    public struct Usage: Sendable, Equatable {
        /// User and system CPU, reaped children included (`treeSeconds`), in seconds.
        public var cpu: Double
        /// Time the tree's live threads spent runnable but not running (field 2 of /proc/PID/task/TID/schedstat), in
        /// seconds; 0 where the kernel keeps no schedstat.
        public var waited: Double
        /// Whether a thread of the tree was runnable (state R) when it was read: a thread starved since before the
        /// last read has not had its wait added to `waited` yet (the kernel adds it when the thread runs).
        public var runnable: Bool
        /// Whether a thread of the tree was in uninterruptible sleep (state D) when it was read: waiting in the kernel
        /// on I/O it will get (a page fault of its binary on a busy disk, or over the VM's 9p share), not on an event
        /// that may never come (that is S, interruptible: a socket, a timer, a child).
        public var blockedOnIO: Bool

        public init(cpu: Double, waited: Double = 0, runnable: Bool = false, blockedOnIO: Bool = false) {
            self.cpu = cpu
            self.waited = waited
            self.runnable = runnable
            self.blockedOnIO = blockedOnIO
        }
    }

    /// `Usage` of `pid` and every process below it; nil when `pid` does not exist.
    public static func treeUsage(_ pid: pid_t) -> Usage? {
        guard let own = seconds(pid) else { return nil }
        var usage = Usage(cpu: own)
        threadWaits(pid, into: &usage)
        var seen: Set<pid_t> = [pid]
        var queue = children(pid)
        while let child = queue.popLast() {
            guard seen.count < 4096, seen.insert(child).inserted else { continue }
            usage.cpu += seconds(child) ?? 0
            threadWaits(child, into: &usage)
            queue += children(child)
        }
        return usage
    }

    /// Adds the run-queue waits of `pid`'s threads, and whether one of them is runnable or blocked on I/O, to `usage`.
    static func threadWaits(_ pid: pid_t, into usage: inout Usage) {
        for tid in threads(pid) {
            let task = "/proc/\(pid)/task/\(tid)"
            if let line = readSmallFile("\(task)/schedstat", limit: 256) {
                let fields = line.split(whereSeparator: { $0 == " " || $0 == "\n" })
                if fields.count > 1, let nanoseconds = UInt64(fields[1]) { usage.waited += Double(nanoseconds) / 1e9 }
            }
            switch statFields(path: "\(task)/stat")?.first {
            case "R": usage.runnable = true
            case "D": usage.blockedOnIO = true
            default: break
            }
        }
    }

    /// The processes of process group `group` that are alive (every state but zombie and dead: a killed process is
    /// alive until it has been scheduled to exit), from /proc/PID/stat's state and pgrp (fields 3 and 5).
    public static func liveMembers(ofGroup group: pid_t) -> [pid_t] {
        numericEntries("/proc").filter { pid in
            guard let fields = statFields(pid), fields.count > 2 else { return false }
            return pid_t(fields[2]) == group && fields[0] != "Z" && fields[0] != "X"
        }
    }

    /// The thread ids of `pid` (`/proc/PID/task`); none when it does not exist.
    public static func threads(_ pid: pid_t) -> [pid_t] {
        numericEntries("/proc/\(pid)/task")
    }

    /// The entries of `directory` whose names are numbers (pids in /proc, thread ids in /proc/PID/task); none when
    /// it cannot be opened.
    static func numericEntries(_ directory: String) -> [pid_t] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var result: [pid_t] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let id = pid_t(name) { result.append(id) }
        }
        return result
    }

    /// utime + stime + cutime + cstime of one process (fields 14-17 of /proc/PID/stat), in seconds.
    public static func seconds(_ pid: pid_t) -> Double? {
        guard let fields = statFields(pid), fields.count > 14 else { return nil }
        var ticks: UInt64 = 0
        for index in 11...14 {
            guard let value = UInt64(fields[index]) else { return nil }
            ticks += value
        }
        return Double(ticks) / ticksPerSecond
    }

    /// The parent of `pid` (field 4 of /proc/PID/stat); nil when it does not exist.
    public static func parent(of pid: pid_t) -> pid_t? {
        statFields(pid).flatMap { $0.count > 1 ? pid_t($0[1]) : nil }
    }

    /// Whether `pid` is `ancestor` or below it (its parent's parent's ... is `ancestor`).
    public static func isInTree(_ pid: pid_t, of ancestor: pid_t) -> Bool {
        var current = pid
        for _ in 0..<64 {
            if current == ancestor { return true }
            guard current > 1, let up = parent(of: current) else { return false }
            current = up
        }
        return false
    }

    /// The fields of /proc/PID/stat after the command name: index 0 is field 3 (the state). The name may hold
    /// spaces and parentheses, so the fields start after the last ')'.
    static func statFields(_ pid: pid_t) -> [Substring]? {
        statFields(path: "/proc/\(pid)/stat")
    }

    /// The same of a stat file by path (a thread's: /proc/PID/task/TID/stat).
    static func statFields(path: String) -> [Substring]? {
        guard let text = readSmallFile(path, limit: 4096), let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// The children of every thread of `pid` (`/proc/PID/task/*/children`); none when it does not exist.
    public static func children(_ pid: pid_t) -> [pid_t] {
        threads(pid).flatMap { tid in
            (readSmallFile("/proc/\(pid)/task/\(tid)/children", limit: 65536) ?? "")
                .split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { pid_t($0) }
        }
    }
}
