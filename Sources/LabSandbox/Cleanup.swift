import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem
import Netlink

/// `/run/hotspot-lab/<prefix>/`: `owner` (pid and start time of the lab's process) and `journal` (one
/// line per object, written before the object is created: `netns NAME`, `radio NAME`,
/// `process PID STARTTIME`).
public enum LabState {
    public static let root = "/run/hotspot-lab"
    /// `hotspot-lab up`'s markers: `<prefix>` holding "pid start-time topology" of the `up` that runs it.
    public static let upMarkerDirectory = "/run/hotspot-lab-up"

    static func makeRoot() throws {
        for path in ["/run", root] where mkdir(path, 0o755) != 0 && Errno.current != EEXIST {
            throw SystemError.current("create directory", path)
        }
    }

    static func writeOwner(_ directory: String) throws {
        let pid = getpid()
        try append("\(pid) \(processStartTime(pid) ?? 0)\n", to: directory + "/owner")
    }

    static func append(_ text: String, to path: String) throws {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 { throw SystemError.current("write lab state", path) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        if write(fd, bytes, bytes.count) != bytes.count { throw SystemError.current("write lab state", path) }
    }

    /// Runs `body` holding the lock on `<stateRoot>/.clean.lock` (flock: also between threads of one process,
    /// each opens the file itself). Cleaners hold it while they judge which runs are dead, and a starting lab
    /// while it creates its directory and writes its owner, so no cleaner ever sees a run directory that has
    /// no owner yet (and removes it under the new lab, as two labs starting at once did). Without the file
    /// (no state root yet) `body` runs unlocked.
    static func withRunsLock<T>(stateRoot: String = root, _ body: () throws -> T) rethrows -> T {
        let lockFD = open(stateRoot + "/.clean.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if lockFD >= 0 {
            while flock(lockFD, LOCK_EX) != 0 && Errno.current == EINTR {}
        }
        defer { if lockFD >= 0 { close(lockFD) } }
        return try body()
    }

    static func removeDirectory(_ directory: String) {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Whether a run prefix looks like ours: `hsl` + 4 lowercase hex digits.
    public static func isRunPrefix(_ name: String) -> Bool {
        guard name.hasPrefix(Lab.namePrefix), name.count == Lab.namePrefix.count + 4 else { return false }
        return name.dropFirst(Lab.namePrefix.count).allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
    }

    /// The recorded owner (pid, start time) of a run, nil if unreadable.
    static func owner(_ directory: String) -> (pid: pid_t, start: UInt64)? {
        guard let text = readSmallFile(directory + "/owner") else { return nil }
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count >= 2, let pid = pid_t(fields[0]), let start = UInt64(fields[1]) else { return nil }
        return (pid, start)
    }

    /// A run is alive while its owner process exists with the recorded start time.
    static func isAlive(_ directory: String) -> Bool {
        guard let owner = owner(directory) else { return false }
        return processStartTime(owner.pid) == owner.start && !isZombie(owner.pid)
    }
}

/// What `clean` removed.
public struct CleanReport: Sendable, CustomStringConvertible {
    public var runs: [String] = []
    public var namespaces: [String] = []
    public var processes: [Int32] = []
    public var radios: [String] = []
    public var links: [String] = []
    /// `/run/hotspot-lab-up/<prefix>` markers of `up` runs that are gone.
    public var markers: [String] = []
    public var liveRuns: [String] = []
    public var errors: [String] = []

    public var description: String {
        var lines: [String] = []
        if runs.isEmpty {
            lines.append("no dead lab runs")
        } else {
            lines.append("removed \(runs.count) dead run(s): \(runs.joined(separator: ", "))")
            lines.append("  namespaces: \(namespaces.count)  processes: \(processes.count)  radios: \(radios.count)  links: \(links.count)")
        }
        if !markers.isEmpty { lines.append("removed \(markers.count) marker(s) of ended `up` runs: \(markers.joined(separator: ", "))") }
        if !liveRuns.isEmpty { lines.append("left \(liveRuns.count) live run(s) alone: \(liveRuns.joined(separator: ", "))") }
        for error in errors { lines.append("error: \(error)") }
        return lines.joined(separator: "\n")
    }
}

/// Removes what dead lab runs left behind. Only names starting with a dead run's prefix are touched;
/// runs whose owner process is alive are left alone.
public enum LabCleanup {
    @discardableResult
    public static func cleanDeadRuns(stateRoot: String = LabState.root, markerDirectory: String = LabState.upMarkerDirectory) -> CleanReport {
        LabState.withRunsLock(stateRoot: stateRoot) { cleanDeadRunsLocked(stateRoot: stateRoot, markerDirectory: markerDirectory) }
    }

    private static func cleanDeadRunsLocked(stateRoot: String, markerDirectory: String) -> CleanReport {
        var report = CleanReport()
        let entries = ((try? FileManager.default.contentsOfDirectory(atPath: stateRoot)) ?? []).sorted()
        for entry in entries where LabState.isRunPrefix(entry) {
            let directory = stateRoot + "/" + entry
            if LabState.isAlive(directory) {
                report.liveRuns.append(entry)
                continue
            }
            clean(run: entry, directory: directory, into: &report)
        }
        removeDeadUpMarkers(directory: markerDirectory, into: &report)
        return report
    }

    /// Removes the markers (`/run/hotspot-lab-up/<prefix>`: "pid start-time topology") whose `up` process
    /// is gone (no process with that pid and start time, or a zombie). Unreadable markers are left alone.
    static func removeDeadUpMarkers(directory: String, into report: inout CleanReport) {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        for name in names where !name.hasPrefix(".") {
            let path = directory + "/" + name
            guard let text = readSmallFile(path) else { continue }
            let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
            guard fields.count >= 2, let pid = pid_t(fields[0]), let start = UInt64(fields[1]) else { continue }
            if processStartTime(pid) == start && !isZombie(pid) { continue }
            if unlink(path) == 0 {
                report.markers.append(name)
            } else if Errno.current != ENOENT {
                report.errors.append("\(SystemError.current("remove up marker", path))")
            }
        }
    }

    static func clean(run prefix: String, directory: String, into report: inout CleanReport) {
        report.runs.append(prefix)
        let journal = (readSmallFile(directory + "/journal") ?? "").split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        var namespaces = Set(journal.filter { $0.count == 2 && $0[0] == "netns" && $0[1].hasPrefix(prefix) }.map { $0[1] })
        namespaces.formUnion(NetworkNamespace.list().filter { $0.hasPrefix(prefix) })

        // 1. processes: the journaled ones (same start time) and any process living in the run's namespaces.
        var victims: [pid_t] = []
        for fields in journal where fields.count == 3 && fields[0] == "process" {
            if let pid = pid_t(fields[1]), let start = UInt64(fields[2]), processStartTime(pid) == start { victims.append(pid) }
        }
        let namespaceInodes = Set(namespaces.compactMap { inode(NetworkNamespace.directory + "/" + $0) })
        if !namespaceInodes.isEmpty {
            for pid in allPIDs() where pid != getpid() {
                if let ino = inode("/proc/\(pid)/ns/net"), namespaceInodes.contains(ino), !victims.contains(pid) { victims.append(pid) }
            }
        }
        for pid in victims {
            do {
                if try sendSignal(SIGKILL, toPID: pid) { report.processes.append(pid) }
            } catch {
                report.errors.append("\(error)")
            }
        }
        for pid in victims { waitGone(pid) }

        // 2. namespaces.
        for name in namespaces.sorted() {
            do {
                try NetworkNamespace.delete(name)
                report.namespaces.append(name)
            } catch {
                report.errors.append("\(error)")
            }
        }

        // 3. radios left (DESTROY_RADIO_ON_CLOSE radios vanished with their creator; wiphys of deleted
        // namespaces return to the root namespace, where DEL_RADIO can see them).
        let radios = journal.filter { $0.count == 2 && $0[0] == "radio" && $0[1].hasPrefix(prefix) }.map { $0[1] }
        if !radios.isEmpty, let hwsim = try? Hwsim() {
            for radio in radios {
                do {
                    try hwsim.deleteRadio(name: radio)
                    report.radios.append(radio)
                } catch let error as SystemError where error.errno == ENODEV || error.errno == ENOENT {
                } catch {
                    report.errors.append("\(error)")
                }
            }
        }

        // 4. links left in the root namespace (radios' interfaces before their move, stray veths).
        if let root = try? RouteNetlink.current(), let links = try? root.links() {
            for link in links where link.name.hasPrefix(prefix) {
                do {
                    try root.deleteLink(link.name)
                    report.links.append(link.name)
                } catch let error as SystemError where error.errno == ENODEV {
                } catch {
                    report.errors.append("\(error)")
                }
            }
        }
        LabState.removeDirectory(directory)
    }

    /// (device, inode) of a path, for comparing namespace identities.
    static func inode(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return "\(info.st_dev):\(info.st_ino)"
    }

    static func allPIDs() -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { pid_t($0) }
    }

    static func waitGone(_ pid: pid_t) {
        for _ in 0..<200 {
            if !processExists(pid) || isZombie(pid) { return }
            usleep(10_000)
        }
    }
}

/// True when the process is a zombie (ended, not yet reaped by its parent).
func isZombie(_ pid: pid_t) -> Bool {
    guard let text = readSmallFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return false }
    return text[text.index(after: close)...].split(separator: " ").first == "Z"
}
