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

    @OptionGroup var placement: Placement

    func validate() throws {
        guard ["radio", "veth"].contains(link) else { throw ValidationError("--link: expected radio or veth, found `\(link)`") }
    }

    func run() async throws {
        // Validate before anything is created (and before booting a VM for nothing).
        let parsed: Topology
        do {
            parsed = try TopologyParser.load(path: topology)
        } catch let error as TopologyError {
            FileHandle.standardError.write(Data("hotspot-lab up: \(error)\n".utf8))
            throw ExitCode(2)
        }
        if link == "radio" { try await placement.relayIfNeeded() }
        let mode: HotspotLinkMode = link == "radio" ? .radio : .veth
        let start = ContinuousClock.now
        let lab: HotspotLab
        do {
            let stationOptions = stations && mode == .radio && !parsed.stations.isEmpty ? StationLabOptions(maintainInterval: maintainInterval) : nil
            lab = try HotspotLab.up(parsed, options: HotspotLabOptions(linkMode: mode, logRoot: logs, stations: stationOptions))
        } catch {
            FileHandle.standardError.write(Data("hotspot-lab up: \(error)\n".utf8))
            throw ExitCode(1)
        }
        let elapsed = ContinuousClock.now - start
        let marker = UpMarker.write(prefix: lab.lab.prefix, topology: topology)
        upDownSay(lab.summary())
        upDownSay(String(format: "up in %.2f s. Ctrl-C (or `hotspot-lab down`) tears it down.", Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds)))
        await UpMarker.waitForSignal(seconds: seconds)
        let downStart = ContinuousClock.now
        let errors = lab.down()
        let downElapsed = ContinuousClock.now - downStart
        if let marker { unlink(marker) }
        if errors.isEmpty {
            upDownSay(String(format: "lab %@ down in %.2f s; logs kept in %@", lab.lab.prefix,
                         Double(downElapsed.components.seconds) + Double(downElapsed.components.attoseconds) / 1e18, lab.logDirectory))
        } else {
            for error in errors { FileHandle.standardError.write(Data("hotspot-lab down: \(error)\n".utf8)) }
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
                    FileHandle.standardError.write(Data("hotspot-lab down: lab \(entry.prefix) (pid \(entry.pid)) did not stop within 20 s\n".utf8))
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
    static let directory = "/run/hotspot-lab-up"

    struct Entry { var path: String; var prefix: String; var pid: Int32; var start: UInt64; var topology: String }

    /// An ended process its parent has not reaped yet.
    static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = readSmallFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
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

    /// Returns on SIGINT or SIGTERM, or after `seconds`.
    static func waitForSignal(seconds: Double?) async {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "hotspot-lab.up.signals")
        let once = Once()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            var sources: [any DispatchSourceProtocol] = []
            for sig in [SIGINT, SIGTERM] {
                let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
                source.setEventHandler { if once.fire() { continuation.resume() } }
                source.resume()
                sources.append(source)
            }
            if let seconds {
                let timer = DispatchSource.makeTimerSource(queue: queue)
                timer.schedule(deadline: .now() + seconds)
                timer.setEventHandler { if once.fire() { continuation.resume() } }
                timer.resume()
                sources.append(timer)
            }
            once.keep(sources)
        }
    }

    final class Once: @unchecked Sendable {
        private let lock = HotspotSystem.Mutex()
        private var fired = false
        private var retained: [any DispatchSourceProtocol] = []
        func fire() -> Bool {
            lock.lock()
            defer { lock.unlock() }
            if fired { return false }
            fired = true
            return true
        }
        func keep(_ sources: [any DispatchSourceProtocol]) {
            lock.lock()
            retained = sources
            lock.unlock()
        }
    }
}

/// One line to stdout, unbuffered (stdout may be a file or a pipe that `up` never closes).
func upDownSay(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
