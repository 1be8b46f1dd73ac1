import ArgumentParser
import Foundation
import HotspotSystem
import LabKit

/// `hotspot-lab up TOPOLOGY`: brings the topology's hotspots and internet up, prints how to enter each
/// namespace and where the logs are, and stays up until Ctrl-C (or `--for`), then tears everything down.
struct UpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract: "Bring a topology up (hotspots, gate, portals, internet); Ctrl-C or `hotspot-lab down` tears it down."
    )

    @Argument(help: "Topology file (see docs/TOPOLOGY.md).")
    var topology = "topologies/captive.yaml"

    @Option(help: "radio (mac80211_hwsim + hostapd) or veth (a station namespace per hotspot joined by a veth; works without wireless).")
    var link: String = "radio"

    @Option(name: .customLong("for"), help: "Tear down after this many seconds instead of waiting for Ctrl-C.")
    var seconds: Double?

    @Option(help: "Log folder root (default $HOTSPOT_LAB_LOGS or /tmp/hotspot-lab).")
    var logs: String?

    @Flag(inversion: .prefixedNo, help: "Start the topology's stations (radio mode): wpa_supplicant, hotspotd and the helpers; drive them with `hotspot-lab ctl --station NAME`.")
    var stations = true

    @Option(help: "The stations' hotspotd maintain interval in seconds.")
    var maintainInterval: Double = 300

    @Option(help: "Use this run id (4 lowercase hex digits; the lab's names start with hsl + it) instead of a free random one.")
    var runID: String?

    @OptionGroup var placement: Placement

    func validate() throws {
        guard ["radio", "veth"].contains(link) else { throw ValidationError("--link: expected radio or veth, found `\(link)`") }
        if let runID, !LabState.isRunPrefix(Lab.namePrefix + runID) {
            throw ValidationError("--run-id: expected 4 lowercase hex digits, found `\(runID)`")
        }
    }

    func run() async throws {
        // Validate before anything is created (and before booting a VM for nothing).
        let parsed: Topology
        do {
            parsed = try TopologyParser.load(path: topology)
        } catch let error as TopologyError {
            upDownWarn("hotspot-lab up: \(error)")
            throw ExitCode(2)
        }
        if link == "radio" { try await placement.relayIfNeeded(logsRoot: logs) }
        // From here on SIGINT, SIGTERM, SIGHUP and SIGPIPE ask for a stop (the signal service, installed in `main`
        // before parsing, ended the command at once until now): bring-up stops at its next step, what exists is
        // torn down, the marker removed (docs/RELIABILITY.md). SIGHUP inherited ignored (`nohup`) stays ignored.
        let shutdown = SignalService.onStop()
        defer { shutdown.cancel() }
        let mode: HotspotLinkMode = link == "radio" ? .radio : .veth
        let start = ContinuousClock.now
        var lab: RunningTopology?
        var marker: String?
        defer { if let marker { unlink(marker) } }
        let stationOptions = stations && mode == .radio && !parsed.stations.isEmpty ? StationLabOptions(maintainInterval: maintainInterval) : nil
        for attempt in 0..<4 where lab == nil {
            // The marker comes first, so that `hotspot-lab down` finds (and stops) a lab still being brought up.
            let id = runID ?? UpMarker.freeRunID()
            if let marker { unlink(marker) }
            marker = UpMarker.write(prefix: Lab.namePrefix + id, topology: topology)
            do {
                lab = try RunningTopology.up(parsed, options: RunningTopologyOptions(linkMode: mode, logRoot: logs, runID: id, stations: stationOptions))
            } catch let error as SystemError where error.errno == EEXIST && runID == nil && attempt < 3 && SignalService.requested == nil {
                continue  // another lab took this run id meanwhile
            } catch {
                if let request = SignalService.stopRequest {
                    upDownWarn("hotspot-lab up: \(request) during bring-up; lab \(Lab.namePrefix + id) torn down")
                    throw ExitCode(request.exitStatus)
                }
                upDownWarn("hotspot-lab up: \(error)")
                throw ExitCode(1)
            }
        }
        guard let lab else {
            upDownWarn("hotspot-lab up: no free run id after 4 tries")
            throw ExitCode(1)
        }
        // A stop that came during the last steps (readiness waits create nothing, so nothing refused it): the
        // summary was not printed, so it is a stop during bring-up like any other.
        if let request = SignalService.stopRequest {
            let errors = lab.down()
            for error in errors { upDownWarn("hotspot-lab down: \(error)") }
            upDownWarn("hotspot-lab up: \(request) during bring-up; lab \(lab.lab.prefix) torn down")
            throw ExitCode(request.exitStatus)
        }
        let elapsed = ContinuousClock.now - start
        upDownSay(lab.summary())
        upDownSay(String(format: "up in %.2f s. Ctrl-C (or `hotspot-lab down`) tears it down.", elapsed.secondsDouble))
        // Up: until a stop request, the end of --for, or stdout's reader gone (`up | head -1`: POLLERR on the pipe;
        // nothing more is written, so no EPIPE would ever tell).
        let reason = SignalService.wait(timeout: seconds.map { .milliseconds(Int64(max($0, 0) * 1000)) }, watchingOutput: 1)
            .map { "\($0)" } ?? "--for \(seconds.map { String(format: "%g", $0) } ?? "") s elapsed"
        let downStart = ContinuousClock.now
        let errors = lab.down()
        let downElapsed = ContinuousClock.now - downStart
        if errors.isEmpty {
            upDownSay(String(format: "lab %@ down in %.2f s (%@); logs kept in %@", lab.lab.prefix,
                         downElapsed.secondsDouble, reason, lab.logDirectory))
        } else {
            for error in errors { upDownWarn("hotspot-lab down: \(error)") }
            throw ExitCode(1)
        }
    }
}

/// `hotspot-lab down`: asks every running `up` to tear its lab down (SIGTERM to its recorded pid), waits,
/// then removes whatever dead runs left.
struct DownCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "down",
        abstract: "Tear down labs started by `hotspot-lab up` (and remove what dead runs left)."
    )

    @Argument(help: "Only this lab prefix (e.g. hsl3fa2); default: all.")
    var prefix: String?

    func run() throws {
        var stopped = 0
        for entry in UpMarker.entries() where prefix == nil || entry.prefix == prefix {
            let running = { processStartTime(entry.pid) == entry.start && !UpMarker.isZombie(entry.pid) }
            if running() {
                _ = try? sendSignal(SIGTERM, toPID: entry.pid)
                let deadline = ContinuousClock.now + .seconds(20)
                // `up` removes its marker once its lab is down (its exit may not be visible yet: a zombie).
                let stillUp = { access(entry.path, F_OK) == 0 && running() }
                while stillUp() && ContinuousClock.now < deadline { usleep(20_000) }
                if stillUp() {
                    upDownWarn("hotspot-lab down: lab \(entry.prefix) (pid \(entry.pid)) did not stop within 20 s")
                    throw ExitCode(1)
                }
                upDownSay("lab \(entry.prefix) (\(entry.topology)) down")
                stopped += 1
            }
            unlink(entry.path)
        }
        let report = LabCleanup.cleanDeadRuns()
        if !report.runs.isEmpty { upDownSay(report.description) }
        if stopped == 0 && report.runs.isEmpty { upDownSay("no lab was up") }
        if !report.errors.isEmpty { throw ExitCode(1) }
    }
}

/// `/run/hotspot-lab-up/<prefix>`: "pid start-time topology" of a running `up`.
enum UpMarker {
    static let directory = LabState.upMarkerDirectory

    struct Entry { var path: String; var prefix: String; var pid: Int32; var start: UInt64; var topology: String }

    /// An ended process its parent has not reaped yet.
    static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = readSmallFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    /// A run id whose lab folder and marker do not exist yet.
    static func freeRunID() -> String {
        var id = ""
        for _ in 0..<64 {
            let text = String(UInt16.random(in: 0...UInt16.max), radix: 16)
            id = String(repeating: "0", count: 4 - text.count) + text
            let prefix = Lab.namePrefix + id
            if access(LabState.root + "/" + prefix, F_OK) != 0 && access(directory + "/" + prefix, F_OK) != 0 { break }
        }
        return id
    }

    static func write(prefix: String, topology: String) -> String? {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let pid = getpid()
        let path = directory + "/" + prefix
        let text = "\(pid) \(processStartTime(pid) ?? 0) \(topology)\n"
        return FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) ? path : nil
    }

    static func entries() -> [Entry] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.sorted().compactMap { name in
            let path = directory + "/" + name
            guard let text = readSmallFile(path) else { return nil }
            let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ", maxSplits: 2).map(String.init)
            guard parts.count == 3, let pid = Int32(parts[0]), let start = UInt64(parts[1]) else { return nil }
            return Entry(path: path, prefix: name, pid: pid, start: start, topology: parts[2])
        }
    }
}

/// One line to stdout, unbuffered (stdout may be a file or a pipe that `up` never closes). When the reader is
/// gone (EPIPE) the line is dropped and a stop is requested, as SIGPIPE would.
func upDownSay(_ text: String) {
    if !StandardStreams.write(text + "\n", to: STDOUT_FILENO) { SignalService.request(SIGPIPE, cause: .outputClosed) }
}

/// One line to stderr. A failed write is not an error here (a SIGPIPE it raised is still a stop request, as for
/// stdout: the signal service's).
func upDownWarn(_ text: String) {
    StandardStreams.error(text + "\n")
}
