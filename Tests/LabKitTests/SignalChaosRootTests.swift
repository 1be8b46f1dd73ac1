import Foundation
import HotspotSystem
import Netlink
import TestSupport
import Testing
@testable import LabKit
@testable import LabSandbox

/// Issue 17: `hotspot-lab up` killed by SIGINT, SIGTERM, SIGHUP or SIGPIPE at any moment of bring-up (or
/// after it) leaves nothing; killed by SIGKILL, its daemons still die (the lab's guardian, the parent-death
/// signal) and `clean` removes the rest, markers included. Foreign namespaces, links and nft tables are never
/// touched. On the host with `--link veth` (no VM), multi-hotspot.yaml: 9 namespaces and 9 daemons.
@Suite("up under signals (root)", .tags(.root), .requiresRoot, .serialized)
struct SignalChaosRootTests {
    static let stopSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGPIPE]

    /// What one killed run left: namespaces, root links, state folder, marker, live processes.
    struct Leftovers: CustomStringConvertible {
        var namespaces: [String] = []
        var links: [String] = []
        var stateFolder = false
        var marker = false
        var processes: [String] = []
        var isEmpty: Bool { namespaces.isEmpty && links.isEmpty && !stateFolder && !marker && processes.isEmpty }
        var description: String {
            "namespaces \(namespaces), links \(links), state folder \(stateFolder), marker \(marker), processes \(processes)"
        }
    }

    static func leftovers(prefix: String, logs: String) throws -> Leftovers {
        var found = Leftovers()
        found.namespaces = NetworkNamespace.list().filter { $0.hasPrefix(prefix) }
        found.links = try RouteNetlink.current().links().map(\.name).filter { $0.hasPrefix(prefix) }
        found.stateFolder = access(LabState.root + "/" + prefix, F_OK) == 0
        found.marker = access(LabState.upMarkerDirectory + "/" + prefix, F_OK) == 0
        found.processes = livingProcesses(mentioning: [logs + "/" + prefix + "/", LabState.root + "/" + prefix + "/"])
        return found
    }

    /// Processes (not zombies) whose command line names one of `needles`: every lab daemon names its log
    /// folder, the guardian its journal.
    static func livingProcesses(mentioning needles: [String]) -> [String] {
        LabCleanup.allPIDs().compactMap { pid -> String? in
            guard pid != getpid(), !LabCleanupProbe.isZombie(pid),
                  let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
            let line = String(decoding: raw.map { $0 == 0 ? 32 : $0 }, as: UTF8.self)
            return needles.contains(where: { line.contains($0) }) ? "\(pid): \(line.prefix(120))" : nil
        }
    }

    static func freeRunID() -> String {
        while true {
            let id = format4Hex(UInt16.random(in: 0...UInt16.max))
            let prefix = Lab.namePrefix + id
            if access(LabState.root + "/" + prefix, F_OK) != 0, !NetworkNamespace.list().contains(where: { $0.hasPrefix(prefix) }) {
                return id
            }
        }
    }

    static func journalLines(_ prefix: String) -> Int {
        (readSmallFile(LabState.root + "/" + prefix + "/journal") ?? "").split(separator: "\n").count
    }

    /// Starts `up` and returns once its journal has `stage` lines (or `up` printed its summary, or ended).
    static func startUp(runID: String, logs: String, stage: Int) throws -> ChildProcess {
        let hotspotLab = try BuildProducts.locate("hotspot-lab")
        let topology = FileManager.default.currentDirectoryPath + "/topologies/multi-hotspot.yaml"
        let output = logs + "/up-\(runID).txt"
        let child = try ChildProcess.spawn(ProcessConfiguration(
            hotspotLab, ["up", "--link", "veth", "--no-stations", "--run-id", runID, "--logs", logs, topology],
            stdout: .file(output), stderr: .file(output)))
        let prefix = Lab.namePrefix + runID
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, try child.poll() == nil {
            if journalLines(prefix) >= stage { break }
            if (readSmallFile(output) ?? "").contains("up in ") { break }
            usleep(500)
        }
        return child
    }

    static func makeForeignObjects(_ name: String) throws {
        try ProcessRunner.check(ProcessConfiguration("ip", ["netns", "add", name]))
        try ProcessRunner.check(ProcessConfiguration("ip", ["link", "add", name, "type", "veth", "peer", "name", name + "p"]))
        try ProcessRunner.check(ProcessConfiguration("nft", ["add", "table", "inet", name]))
    }

    static func foreignObjectsPresent(_ name: String) throws -> [String: Bool] {
        let tables = try ProcessRunner.run(ProcessConfiguration("nft", ["list", "tables"])).stdout
        return [
            "netns": NetworkNamespace.list().contains(name),
            "link": try RouteNetlink.current().links().contains { $0.name == name },
            "nft table": tables.contains("table inet \(name)\n") || tables.hasSuffix("table inet \(name)"),
        ]
    }

    static func removeForeignObjects(_ name: String) {
        _ = try? ProcessRunner.run(ProcessConfiguration("ip", ["netns", "del", name]))
        _ = try? ProcessRunner.run(ProcessConfiguration("ip", ["link", "del", name]))
        _ = try? ProcessRunner.run(ProcessConfiguration("nft", ["delete", "table", "inet", name]))
    }

    @Test("32 kills of up (SIGINT, SIGTERM, SIGHUP, SIGPIPE at random moments of bring-up) leave nothing; foreign objects stay")
    func rootStopSignalsAtRandomMomentsLeaveNothing() throws {
        let foreign = "xchaos" + String(getpid() & 0xffff, radix: 16)
        try Self.makeForeignObjects(foreign)
        defer { Self.removeForeignObjects(foreign) }
        let logs = NSTemporaryDirectory() + "hsl-chaos-\(getpid())"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }

        var report: [String] = []
        var dirty = 0
        for kill in 0..<32 {
            let signal = Self.stopSignals[kill % Self.stopSignals.count]
            // Moments: from before the first object (stage 0) to after the summary (multi-hotspot journals 18 lines).
            let stage = Int.random(in: 0...19)
            let runID = Self.freeRunID()
            let prefix = Lab.namePrefix + runID
            let child = try Self.startUp(runID: runID, logs: logs, stage: stage)
            usleep(UInt32.random(in: 0...20_000))
            try child.signal(signal)
            let status = try child.wait(timeout: .seconds(120))
            let left = try Self.leftovers(prefix: prefix, logs: logs)
            let line = "kill \(kill): \(signalName(signal)) at journal line \(stage): \(status.map { "\($0)" } ?? "still running")"
            report.append(line)
            // Killed before it took over shutdown (nothing created yet), torn down during bring-up (128 + signal
            // and the message), or after it, once the summary was printed (0). Never 0 without the summary.
            let text = readSmallFile(logs + "/up-\(runID).txt") ?? ""
            let expected: [HotspotSystem.ExitStatus] = text.contains("tears it down") ? [.exited(0)]
                : text.contains("during bring-up; lab \(prefix) torn down") ? [.exited(128 + signal)] : [.signaled(signal)]
            if status == nil || !left.isEmpty || !expected.contains(status ?? HotspotSystem.ExitStatus.exited(-1)) {
                dirty += 1
                Issue.record("\(line); left: \(left)\n\(readSmallFile(logs + "/up-\(runID).txt") ?? "")")
                if status == nil { _ = try? child.terminate(grace: .seconds(5)) }
                _ = LabCleanup.cleanDeadRuns()
            }
        }
        #expect(dirty == 0, "\(report.joined(separator: "\n"))")
        let foreignLeft = try Self.foreignObjectsPresent(foreign)
        #expect(foreignLeft.values.allSatisfy { $0 }, "foreign objects: \(foreignLeft)")
    }

    @Test("hotspot-lab down during bring-up stops that lab (its marker exists from the start)")
    func rootDownDuringBringUp() throws {
        let logs = NSTemporaryDirectory() + "hsl-chaos-down-\(getpid())"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let runID = Self.freeRunID()
        let prefix = Lab.namePrefix + runID
        let child = try Self.startUp(runID: runID, logs: logs, stage: 4)
        let hotspotLab = try BuildProducts.locate("hotspot-lab")
        let down = try ProcessRunner.run(ProcessConfiguration(hotspotLab, ["down", prefix]), timeout: .seconds(60))
        #expect(down.status == .exited(0), "down: \(down.stdout) \(down.stderr)")
        #expect(down.stdout.contains("lab \(prefix) ("), "down: \(down.stdout)")
        #expect(!down.stdout.contains("no lab was up"), "down: \(down.stdout)")
        let status = try child.wait(timeout: .seconds(120))
        #expect(status == .exited(128 + SIGTERM) || status == .exited(0), "up: \(String(describing: status))")
        let left = try Self.leftovers(prefix: prefix, logs: logs)
        #expect(left.isEmpty, "after down: \(left)")
        if !left.isEmpty { _ = LabCleanup.cleanDeadRuns() }
    }

    @Test("up killed with SIGKILL mid-bring-up: its daemons die with it; clean removes the rest and the marker")
    func rootSigkillLeavesOnlyWhatCleanSees() throws {
        let foreign = "xchaok" + String(getpid() & 0xffff, radix: 16)
        try Self.makeForeignObjects(foreign)
        defer { Self.removeForeignObjects(foreign) }
        let logs = NSTemporaryDirectory() + "hsl-chaos-kill-\(getpid())"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }

        for stage in [6, 12, 19] {
            let runID = Self.freeRunID()
            let prefix = Lab.namePrefix + runID
            let child = try Self.startUp(runID: runID, logs: logs, stage: stage)
            try child.signal(SIGKILL)
            #expect(try child.wait(timeout: .seconds(10)) == .signaled(SIGKILL))
            // The guardian kills the daemons as soon as it sees its parent gone.
            let deadline = ContinuousClock.now + .seconds(10)
            var processes = Self.livingProcesses(mentioning: [logs + "/" + prefix + "/", LabState.root + "/" + prefix + "/"])
            while !processes.isEmpty, ContinuousClock.now < deadline {
                usleep(10_000)
                processes = Self.livingProcesses(mentioning: [logs + "/" + prefix + "/", LabState.root + "/" + prefix + "/"])
            }
            #expect(processes.isEmpty, "stage \(stage): daemons outlived up's SIGKILL: \(processes)")
            let hotspotLab = try BuildProducts.locate("hotspot-lab")
            let clean = try ProcessRunner.run(ProcessConfiguration(hotspotLab, ["clean"]), timeout: .seconds(60))
            #expect(clean.status == .exited(0), "clean: \(clean.stdout) \(clean.stderr)")
            let left = try Self.leftovers(prefix: prefix, logs: logs)
            #expect(left.isEmpty, "stage \(stage): after clean: \(left)")
        }
        let foreignLeft = try Self.foreignObjectsPresent(foreign)
        #expect(foreignLeft.values.allSatisfy { $0 }, "foreign objects: \(foreignLeft)")
    }
}
