import Foundation
import HotspotCore
import HotspotProtocol
import HotspotStation
import HotspotSystem
import Netlink

/// What one step did.
public struct StepResult: Sendable {
    public var index: Int
    public var step: ScenarioStep
    public var passed: Bool
    /// Seconds since the scenario's lab was up.
    public var elapsed: Double
    public var duration: Double
    /// hotspotd's state after the step.
    public var state: String
    /// Why it failed (names the step, the expected and the actual), or what it saw.
    public var message: String
}

/// One line of the timeline: what happened, from hotspotd's trace.
public struct TimelineEntry: Sendable {
    /// Seconds since the first record of the run.
    public var t: Double
    public var kind: String
    public var text: String
}

/// A scenario's outcome: its steps, the timeline, where the logs and trace are.
public struct ScenarioResult: Sendable {
    public var scenario: Scenario
    public var passed: Bool
    public var steps: [StepResult]
    public var timeline: [TimelineEntry]
    /// The states entered, in order.
    public var path: [String]
    public var duration: Double
    public var labUpSeconds: Double
    public var logDirectory: String
    public var traceFile: String?
    /// Set when the lab could not be built (the scenario did not run).
    public var setupError: String?
    /// Retried once after a failure and passed then.
    public var flaky = false
    public var attempts = 1

    public var failure: StepResult? { steps.first { !$0.passed } }
}

/// Runs scenarios against a real lab: topology up with its stations, steps carried out through hotspotd's
/// control socket, wpa_supplicant, the portals' gate and curl; every expectation checked against hotspotd's
/// trace and status.
public final class ScenarioRunner: @unchecked Sendable {
    public var logRoot: String?
    /// Extra arguments per helper executable; `helperOverride` replaces the topology's helpers.
    public var helperOverride: [String]?
    /// Called after each step (progress lines).
    public var onStep: (@Sendable (Scenario, StepResult) -> Void)?

    public init(logRoot: String? = nil, helperOverride: [String]? = nil) {
        self.logRoot = logRoot
        self.helperOverride = helperOverride
    }

    public func run(_ scenario: Scenario) -> ScenarioResult {
        let start = ContinuousClock.now
        var result = ScenarioResult(scenario: scenario, passed: false, steps: [], timeline: [], path: [], duration: 0, labUpSeconds: 0,
                                    logDirectory: "", traceFile: nil)
        let topology: Topology
        let lab: HotspotLab
        do {
            topology = try TopologyParser.load(path: scenario.topologyPath)
            guard !topology.stations.isEmpty else {
                throw TopologyError(file: topology.file, line: 1, column: 1, field: "stations", message: "scenario \(scenario.name) needs a station; the topology has none")
            }
            lab = try HotspotLab.up(topology, options: HotspotLabOptions(
                linkMode: .radio, logRoot: logRoot,
                stations: StationLabOptions(timeScale: scenario.timeScale, maintainInterval: scenario.maintainInterval,
                                          helperOverride: helperOverride ?? scenario.helpers)))
        } catch {
            result.setupError = "\(error)"
            result.duration = Self.seconds(since: start)
            return result
        }
        defer {
            let errors = lab.down()
            if !errors.isEmpty { FileHandle.standardError.write(Data("hotspot-lab: teardown of \(lab.lab.prefix): \(errors)\n".utf8)) }
        }
        result.labUpSeconds = Self.seconds(since: start)
        result.logDirectory = lab.logDirectory
        // The air: every radio's frames on hwsim0, as a pcap in the lab's log folder (stopped before the lab goes
        // down, whose log copy takes it to the host). Runs at once share hwsim0: each capture holds all of them.
        let capture = AirCapture.start(into: lab.logDirectory + "/air.pcap")
        defer { capture?.stop() }
        guard let station = lab.station(scenario.station) else {
            result.setupError = "\(scenario.file): station `\(scenario.station ?? "")` is not in \(topology.file)"
            return result
        }
        result.traceFile = station.traceFile
        let context = Context(lab: lab, station: station, scenario: scenario)
        // The trace names the scenario and the topology, and records each step: enough to replay the run.
        let helpers = station.helpers.map { h -> JSON in ["command": .string(h.command), "identifier": h.identifier.map(JSON.string) ?? .null] }
        _ = try? station.request(.record(["scenario": .string(scenario.name), "file": .string(scenario.file),
                                          "topology": .string(scenario.topologyPath.hasPrefix("/") ? scenario.topologyPath
                                              : FileManager.default.currentDirectoryPath + "/" + scenario.topologyPath),
                                          "station": .string(station.station.name),
                                          "maintainInterval": .number(scenario.maintainInterval), "timeScale": .number(scenario.timeScale),
                                          "helpers": .array(helpers)]))
        let stepsStart = ContinuousClock.now
        for (index, step) in scenario.steps.enumerated() {
            let stepStart = ContinuousClock.now
            var message = ""
            var passed = true
            _ = try? station.request(.record(["step": .string(step.text), "line": .number(Double(step.line)), "index": .number(Double(index))]))
            do {
                message = try context.perform(step)
            } catch {
                passed = false
                message = "\(error)"
            }
            let state = (try? station.status()["state"]?.stringValue) ?? nil
            let stepResult = StepResult(index: index, step: step, passed: passed, elapsed: Self.seconds(since: stepsStart),
                                        duration: Self.seconds(since: stepStart), state: state ?? "unknown",
                                        message: passed ? message : "step \(index + 1) (\(scenario.file):\(step.line):\(step.column)) `\(step.text)`: \(message)")
            result.steps.append(stepResult)
            onStep?(scenario, stepResult)
            if !passed { break }
        }
        result.passed = result.steps.allSatisfy(\.passed) && result.steps.count == scenario.steps.count
        let records = station.readTrace()
        result.timeline = Timeline.build(records)
        result.path = records.filter { $0["kind"]?.stringValue == "transition" }.compactMap { $0["to"]?.stringValue }
        result.duration = Self.seconds(since: start)
        return result
    }

    /// Runs and, when it fails, runs once more: a pass on the second try is marked flaky.
    public func runWithRetry(_ scenario: Scenario) -> ScenarioResult {
        let first = run(scenario)
        if first.passed { return first }
        var second = run(scenario)
        second.attempts = 2
        second.flaky = second.passed
        return second
    }

    public static func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}

/// A step failed: what was expected and what was seen.
struct StepFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The running scenario's state: the lab, the acting station, the checkpoint for `expect-states`.
final class Context {
    let lab: HotspotLab
    let station: RunningStation
    let scenario: Scenario
    /// Trace line where the states checked by the next `expect-states` begin.
    var stateCheckpoint = 0
    /// Trace line where the next `wait-state` starts looking.
    var waitCursor = 0

    init(lab: HotspotLab, station: RunningStation, scenario: Scenario) {
        self.lab = lab
        self.station = station
        self.scenario = scenario
    }

    var status: JSON { get throws { try station.status() } }

    func helperID(_ name: String) -> String { station.helper(name)?.identifier ?? name }

    func perform(_ step: ScenarioStep) throws -> String {
        switch step.action {
        case .showScanList(let expect):
            let list = try station.showScanList()
            let lines = RunningStation.render(scanList: list)
            for (ssid, annotation) in expect {
                guard let entry = list.first(where: { $0["ssid"]?.stringValue == ssid }) else {
                    throw StepFailure("expected \(ssid) in the scan list; the list shows: \(lines.joined(separator: "; "))")
                }
                let actual = entry["annotation"]?.stringValue
                guard actual == annotation else {
                    throw StepFailure("expected \(ssid) annotated \(annotation.map { "\"\($0)\"" } ?? "with nothing"), "
                                      + "actual \(actual.map { "\"\($0)\"" } ?? "nothing")")
                }
            }
            return "scan list:\n" + lines.map { "      " + $0 }.joined(separator: "\n")
        case .join(let ssid, let password):
            try station.join(ssid, password: password)
            return "join \(ssid)"
        case .autoJoin:
            try station.autoJoin()
            return "auto-join"
        case .leave:
            try station.leave()
            return "leave"
        case .waitState(let state, let timeout):
            waitCursor = try station.waitForState(state, after: waitCursor, timeout: .milliseconds(Int64(timeout * 1000)))
            return "state \(state)"
        case .expectStates(let expected):
            let actual = station.states(from: stateCheckpoint)
            stateCheckpoint = station.traceLineCount()
            guard actual == expected else {
                throw StepFailure("expected \(expected.isEmpty ? "no state change" : "the states " + expected.joined(separator: " -> ")), actual \(actual.isEmpty ? "none" : actual.joined(separator: " -> "))")
            }
            return actual.joined(separator: " -> ")
        case .expectCommand(let command, let result, let helper, let didJustJoin, let absent, let signal, let count):
            return try expectCommand(command, result: result, helper: helper.map(helperID), didJustJoin: didJustJoin, absent: absent,
                                     signal: signal, count: count)
        case .signal(let hotspot, let bssid, let dbm):
            return try setSignal(hotspot: hotspot, bssid: bssid, dbm: dbm)
        case .roam(let bssid, let timeout):
            return try roam(to: bssid, timeout: timeout)
        case .expectNotification(let helper):
            let notes = station.readTrace().filter { $0["kind"]?.stringValue == "notification" }
            let wanted = helper.map(helperID)
            guard let note = notes.first(where: { wanted == nil || $0["helper"]?.stringValue == wanted }) else {
                throw StepFailure("expected a notification\(wanted.map { " from \($0)" } ?? ""), none was posted")
            }
            return "notification \"\(note["title"]?.stringValue ?? "")\": \(note["body"]?.stringValue ?? "")"
        case .foreground(let helper):
            try station.foreground(helper.map(helperID))
            return "foreground \(helper.map(helperID) ?? "none")"
        case .type(let helper, let text):
            guard let running = station.helper(helper) else { throw StepFailure("no helper \(helper) on station \(station.station.name)") }
            try station.type(text, into: running)
            return "typed into \(helper)"
        case .expireSession(let hotspot):
            return try expireSession(hotspot)
        case .logoff(let helper, let expectAccepted):
            let accepted = try station.logoff(helper: helperID(helper))
            guard accepted == expectAccepted else {
                throw StepFailure("expected logoff to be \(expectAccepted ? "accepted" : "refused"), it was \(accepted ? "accepted" : "refused") (state \(try status["state"]?.stringValue ?? "?"))")
            }
            return "logoff \(accepted ? "accepted" : "refused")"
        case .killHelper(let helper):
            guard let running = station.helper(helper) else { throw StepFailure("no helper \(helper) on station \(station.station.name)") }
            try station.kill(helper: running)
            return "killed \(helper) (pid \(running.process.pid))"
        case .restartHotspotd(let delay):
            stateCheckpoint = try station.restartHotspotd(helperDelay: .milliseconds(Int64(delay * 1000)))
            waitCursor = stateCheckpoint
            return "hotspotd restarted"
        case .application(let expect, let url):
            let target = url ?? "http://\(lab.topology.internet.address)/"
            let (code, error) = try station.application(target)
            let allowed = code == 200
            guard allowed == (expect == .allowed) else {
                throw StepFailure("expected the application's GET \(target) to be \(expect.rawValue), it was "
                                  + (allowed ? "allowed (HTTP 200)" : "blocked (\(code.map { "HTTP \($0)" } ?? error))")
                                  + " in state \(try status["state"]?.stringValue ?? "?")")
            }
            return "application \(expect.rawValue): " + (code.map { "HTTP \($0)" } ?? error)
        case .expectAutoJoinDisabled(let ssid, let disabled):
            let list = try status["autoJoinDisabled"]?.arrayValue ?? []
            let isDisabled = list.contains { $0["ssid"]?.stringValue == ssid }
            guard isDisabled == disabled else {
                throw StepFailure("expected auto-join \(disabled ? "disabled" : "enabled") for \(ssid), it is \(isDisabled ? "disabled" : "enabled")")
            }
            return "auto-join \(disabled ? "disabled" : "enabled") for \(ssid)"
        case .expectCache(let ssid, let entry):
            let cache = try status["cache"]?.arrayValue ?? []
            let item = cache.first { $0["ssid"]?.stringValue == ssid }
            let actual: String? = item.map { $0["notCaptive"]?.boolValue == true ? "not captive" : ($0["helper"]?.stringValue ?? "?") }
            let wanted = entry.map { $0 == "not captive" ? $0 : helperID($0) }
            guard actual == wanted else {
                throw StepFailure("expected the cache entry for \(ssid) to be \(wanted ?? "none"), actual \(actual ?? "none")")
            }
            return "cache \(ssid): \(actual ?? "none")"
        case .sleep(let seconds):
            usleep(UInt32(seconds * 1_000_000))
            return "slept \(seconds) s"
        case .accessPoint(let up, let hotspot):
            let running = try hotspotFor(hotspot)
            // Every access point of the hotspot.
            let controls = running.accessPoints.compactMap(\.hostapd)
            guard !controls.isEmpty else { throw StepFailure("hotspot \(running.hotspot.name) has no hostapd (veth mode)") }
            for hostapd in controls {
                let reply = try hostapd.request(up ? "ENABLE" : "DISABLE")
                guard reply.hasPrefix("OK") else { throw StepFailure("hostapd \(up ? "ENABLE" : "DISABLE") answered \(reply)") }
            }
            return "access point\(controls.count > 1 ? "s" : "") of \(running.hotspot.name) \(up ? "back" : "gone")"
        case .uplink(let up, let hotspot):
            return try lab.setUplink(try hotspotFor(hotspot), up: up)
        case .linkQuality(let hotspot, let side, let latency, let jitter, let loss, let rate):
            let running = try hotspotFor(hotspot)
            return try lab.setLinkQuality(running, side: side, latencyMS: latency, jitterMS: jitter, lossPercent: loss, rateKbit: rate)
        case .dns(let mode, let hotspot):
            let running = try hotspotFor(hotspot)
            return try lab.setDNS(hotspot: running.hotspot.name, mode: mode)
        case .stopHelper(let helper, let stop):
            guard let running = station.helper(helper) else { throw StepFailure("no helper \(helper) on station \(station.station.name)") }
            try running.process.signal(stop ? SIGSTOP : SIGCONT)
            return "\(helper) \(stop ? "stopped (hung)" : "continued")"
        case .flap(let count, let low, let high, let seed):
            var generator = SplitMix64(seed: seed)
            var intervals: [String] = []
            for _ in 0..<count {
                try station.leave()
                waitCursor = try station.waitForState("Inactive", after: waitCursor, timeout: .seconds(20))
                let away = low + (high - low) * generator.nextUnit()
                usleep(UInt32(away * 1_000_000))
                try station.autoJoin()
                waitCursor = try station.waitForState("Authenticated", after: waitCursor, timeout: .seconds(30))
                let stay = low + (high - low) * generator.nextUnit()
                usleep(UInt32(stay * 1_000_000))
                intervals.append(String(format: "away %.1f s, back %.1f s", away, stay))
            }
            return "flapped \(count) times (seed \(seed)): " + intervals.joined(separator: "; ")
        case .portal(let kind, let hotspot, let settings):
            let running = try hotspotFor(hotspot)
            try lab.switchPortal(hotspot: running.hotspot.name, kind: kind, settings: settings)
            return kind == "down" ? "portal of \(running.hotspot.name) died" : "portal of \(running.hotspot.name) is now \(kind)"
        case .gate(let authenticated, let hotspot):
            let running = try hotspotFor(hotspot)
            let mac = try station.macAddress()
            let elements = try GateInspector.authenticated(in: running)
            let present = elements.contains { $0.lowercased().hasPrefix(mac.lowercased()) }
            guard present == authenticated else {
                throw StepFailure("expected the gate of \(running.hotspot.name) \(authenticated ? "to hold" : "not to hold") the station \(mac); "
                                  + "its authenticated set: \(elements.isEmpty ? "empty" : elements.joined(separator: ", "))")
            }
            return "gate of \(running.hotspot.name): \(authenticated ? "authenticated" : "not authenticated") (\(elements.joined(separator: ", ")))"
        }
    }

    /// The named hotspot, else the one the station is (or was last) associated with, else the only one.
    func hotspotFor(_ name: String?) throws -> RunningHotspot {
        if let name {
            guard let h = lab.hotspots.first(where: { $0.hotspot.name == name }) else { throw StepFailure("no hotspot \(name) in \(lab.topology.file)") }
            return h
        }
        let ssid = try status["association"]?["ssid"]?.stringValue
            ?? station.readTrace().last(where: { $0["kind"]?.stringValue == "station" && $0["action"]?.stringValue == "associated" })?["ssid"]?.stringValue
        if let h = lab.hotspots.first(where: { $0.hotspot.ssid == ssid }) { return h }
        if lab.hotspots.count == 1 { return lab.hotspots[0] }
        throw StepFailure("which hotspot? name one (`hotspot:`); the station is not associated")
    }

    func expectCommand(_ command: String, result: String?, helper: String?, didJustJoin: Bool?, absent: Bool,
                       signal: ClosedRange<Double>? = nil, count: Int? = nil) throws -> String {
        let records = station.readTrace()
        let commands = records.filter {
            $0["kind"]?.stringValue == "command" && $0["commandType"]?.stringValue == command
                && (helper == nil || $0["helper"]?.stringValue == helper)
                && (didJustJoin == nil || $0["network"]?["didJustJoin"]?.boolValue == didJustJoin)
                && (signal == nil || $0["network"]?["signalStrength"]?.doubleValue.map { signal!.contains($0) } == true)
        }
        let wanted = signal.map { String(format: " with signalStrength in %.2f...%.2f", $0.lowerBound, $0.upperBound) } ?? ""
        if absent {
            guard commands.isEmpty else { throw StepFailure("expected no \(command) command\(wanted), \(commands.count) were sent") }
            return "no \(command)\(wanted)"
        }
        guard !commands.isEmpty else {
            let sent = records.filter { $0["kind"]?.stringValue == "command" }.compactMap { r -> String? in
                guard let type = r["commandType"]?.stringValue else { return nil }
                guard signal != nil, let strength = r["network"]?["signalStrength"]?.doubleValue else { return type }
                return type + String(format: " (signalStrength %.3f)", strength)
            }
            throw StepFailure("expected a \(command) command\(helper.map { " to \($0)" } ?? "")\(wanted), sent: \(sent.isEmpty ? "none" : sent.joined(separator: ", "))")
        }
        if let count, commands.count != count {
            throw StepFailure("expected \(count) \(command) command\(count == 1 ? "" : "s")\(helper.map { " to \($0)" } ?? "")\(wanted) since the start, \(commands.count) were sent")
        }
        let strengths = signal == nil ? "" : " (signalStrength " + commands.compactMap { $0["network"]?["signalStrength"]?.doubleValue }
            .map { String(format: "%.3f", $0) }.joined(separator: ", ") + ")"
        guard let result else { return "\(command) sent\(strengths)" }
        let ids = Set(commands.compactMap { $0["id"]?.intValue })
        let answers = records.filter { $0["kind"]?.stringValue == "response" && ids.contains($0["command"]?.intValue ?? -1) }
        guard answers.contains(where: { $0["result"]?.stringValue == result }) else {
            let seen = answers.compactMap { $0["result"]?.stringValue }
            throw StepFailure("expected \(command) answered \(result), actual \(seen.isEmpty ? "no answer" : seen.joined(separator: ", "))")
        }
        return "\(command) -> \(result)\(strengths)"
    }

    /// Sets what stations receive from the hotspot's access points; when the acting station is associated
    /// with one of them, waits until hotspotd's association carries the new strength (the station polls
    /// wpa_supplicant's SIGNAL_POLL), so the next command is known to carry it.
    func setSignal(hotspot: String?, bssid: String?, dbm: Int?) throws -> String {
        let running = try hotspotFor(hotspot)
        let did = try lab.setSignal(running, bssid: bssid, dbm: dbm)
        let affected = running.accessPoints.map { $0.accessPoint.bssid.text.lowercased() }.filter { bssid == nil || $0 == bssid }
        guard let current = try status["association"]?["bssid"]?.stringValue?.lowercased(), affected.contains(current) else {
            return did + " (the station is not associated with it)"
        }
        let rssi = Double(dbm ?? HotspotLab.signalRange.upperBound)
        let expected = WPAStation.strength(rssi: rssi)
        let start = ContinuousClock.now
        var seen: Double?
        while ContinuousClock.now - start < .seconds(15) {
            seen = try status["association"]?["signalStrength"]?.doubleValue
            if let seen, abs(seen - expected) < 0.02 {
                return did + String(format: "; hotspotd's association: signalStrength %.3f (RSSI %.0f dBm) after %.1f s", seen, rssi,
                                    ScenarioRunner.seconds(since: start))
            }
            usleep(100_000)
        }
        throw StepFailure(did + String(format: "; hotspotd's association still has signalStrength %@ after 15 s, expected %.3f (RSSI %.0f dBm)",
                                       seen.map { String(format: "%.3f", $0) } ?? "none", expected, rssi))
    }

    /// The station's wpa_supplicant moves to `bssid` (a fresh scan first: ROAM needs the BSS in its table);
    /// passes when hotspotd records the association with `bssid`.
    func roam(to bssid: String, timeout: Double) throws -> String {
        let cursor = station.traceLineCount()
        let from = try status["association"]?["bssid"]?.stringValue
        // A scan of the target's channel only (a full scan takes seconds under TCG).
        guard let target = lab.topology.hotspots.flatMap(\.accessPoints).first(where: { $0.bssid.text.lowercased() == bssid }) else {
            throw StepFailure("no access point \(bssid) in \(lab.topology.file)")
        }
        let wpa = try station.wpaControl()
        let scanStart = ContinuousClock.now
        let scan = try wpa.request("SCAN freq=\(target.frequency)")
        guard scan.hasPrefix("OK") || scan.hasPrefix("FAIL-BUSY") else { throw StepFailure("wpa_supplicant answered SCAN freq=\(target.frequency) with \(scan)") }
        _ = try wpa.waitForEvent(["CTRL-EVENT-SCAN-RESULTS"], timeout: .seconds(15))
        let scanned = RunningStation.parseScanResults(try wpa.request("SCAN_RESULTS"))
        guard scanned.contains(where: { $0.bssid.lowercased() == bssid }) else {
            throw StepFailure("\(bssid) is not in the station's scan results (\(scanned.map { "\($0.ssid) \($0.bssid)" }.joined(separator: ", ")))")
        }
        let scanSeconds = ScenarioRunner.seconds(since: scanStart)
        let start = ContinuousClock.now
        let reply = try wpa.request("ROAM \(bssid)")
        guard reply.hasPrefix("OK") else { throw StepFailure("wpa_supplicant answered ROAM \(bssid) with \(reply)") }
        while ContinuousClock.now - start < .milliseconds(Int64(timeout * 1000)) {
            let records = station.readTrace(from: cursor)
            if records.contains(where: { $0["kind"]?.stringValue == "station" && $0["action"]?.stringValue == "associated"
                                         && $0["bssid"]?.stringValue?.lowercased() == bssid }) {
                // hotspotd must have seen a roam (CONNECTED to the new BSSID without a disconnection) and traced both BSSIDs.
                guard let roamed = records.first(where: { $0["kind"]?.stringValue == "station" && $0["action"]?.stringValue == "roamed" }),
                      roamed["to"]?.stringValue?.lowercased() == bssid, from == nil || roamed["from"]?.stringValue?.lowercased() == from?.lowercased() else {
                    let disconnected = records.first { $0["kind"]?.stringValue == "station" && $0["action"]?.stringValue == "disassociated" }
                    throw StepFailure("the station associated with \(bssid), but hotspotd's trace has no `roamed` record from \(from ?? "?") to it"
                                      + (disconnected.map { " (it saw a disconnection: \($0["event"]?.stringValue ?? "?"))" } ?? ""))
                }
                return String(format: "roamed from %@ to %@: hotspotd saw the new association %.2f s after ROAM (scan of %d MHz before: %.2f s)",
                              roamed["from"]?.stringValue ?? "?", bssid, ScenarioRunner.seconds(since: start), target.frequency, scanSeconds)
            }
            usleep(50_000)
        }
        throw StepFailure("the station did not associate with \(bssid) within \(timeout) s (associated with \(try status["association"]?["bssid"]?.stringValue ?? "nothing")); "
                          + "wpa_supplicant log \(station.wpaLog)")
    }

    /// The portal session ends: the station leaves the gate's authenticated set (as at the session length).
    func expireSession(_ hotspotName: String?) throws -> String {
        let running = try hotspotFor(hotspotName)
        try lab.expirePortalSessions(running)
        return "portal session of \(running.hotspot.name) expired (gate set flushed)"
    }
}

/// tcpdump on `hwsim0`, the monitor interface mac80211_hwsim feeds with every radio's frames. Only inside the
/// hotspot-lab VM (there hwsim0 belongs to the VM; on a host with hwsim it is the host's and is left alone).
final class AirCapture: @unchecked Sendable {
    let process: ChildProcess
    let path: String

    private init(process: ChildProcess, path: String) {
        self.process = process
        self.path = path
    }

    static func start(into path: String) -> AirCapture? {
        guard InVM.isActive, FileManager.default.fileExists(atPath: "/sys/class/net/hwsim0"),
              let tcpdump = try? HotspotLab.findTool("tcpdump") else { return nil }
        do {
            try RouteNetlink.current().setUp("hwsim0")
            let log = path + ".log"
            let child = try ChildProcess.spawn(ProcessConfiguration(tcpdump, ["-i", "hwsim0", "-U", "-w", path], stdout: .file(log), stderr: .file(log)))
            let deadline = ContinuousClock.now + .seconds(5)
            while !(readSmallFile(log)?.contains("listening on") ?? false), ContinuousClock.now < deadline, (try? child.poll()) == nil {
                usleep(20_000)
            }
            return AirCapture(process: child, path: path)
        } catch {
            FileHandle.standardError.write(Data("hotspot-lab: no capture of the air: \(error)\n".utf8))
            return nil
        }
    }

    func stop() { _ = try? process.terminate(grace: .seconds(2)) }
}

/// Reads a hotspot's captive gate: the `mac . ip` elements of its authenticated set.
public enum GateInspector {
    public static func authenticated(in running: RunningHotspot) throws -> [String] {
        let result = try ProcessRunner.run(ProcessConfiguration(try HotspotLab.findTool("nft"),
                                                                ["list", "set", GateRuleset.family, GateRuleset.table, GateRuleset.set])
            .inNetworkNamespace(running.namespace.name))
        guard result.status.succeeded else {
            throw SystemError("list the gate set of", running.hotspot.name, reason: "nft: \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        // elements = { 02:00:00:00:0a:00 . 198.51.100.14 timeout 1h expires 59m58s, ... }
        guard let open = result.stdout.range(of: "elements = {") else { return [] }
        let body = result.stdout[open.upperBound...].prefix { $0 != "}" }
        return body.split(separator: ",").compactMap { item in
            let words = item.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
            guard words.count >= 3, words[1] == "." else { return nil }
            return "\(words[0]) . \(words[2])"
        }
    }
}

/// The readable timeline of a run, from hotspotd's trace.
public enum Timeline {
    public static func build(_ records: [JSON]) -> [TimelineEntry] {
        guard let t0 = records.first?["t_ns"]?.doubleValue else { return [] }
        var entries: [TimelineEntry] = []
        func add(_ r: JSON, _ kind: String, _ text: String) {
            entries.append(TimelineEntry(t: ((r["t_ns"]?.doubleValue ?? t0) - t0) / 1e9, kind: kind, text: text))
        }
        for r in records {
            switch r["kind"]?.stringValue ?? "" {
            case "transition":
                add(r, "state", "\(r["from"]?.stringValue ?? "?") → \(r["to"]?.stringValue ?? "?")"
                    + (r["bestHelper"]?.stringValue.map { " (best helper \($0))" } ?? ""))
            case "command":
                var text = "→ \(r["commandType"]?.stringValue ?? "?") to \(r["helper"]?.stringValue ?? "?")"
                if let n = r["network"], let ssid = n["ssid"]?.stringValue {
                    text += " [\(ssid)\(n["didJustJoin"]?.boolValue == true ? ", didJustJoin" : "")]"
                }
                add(r, "command", text)
            case "response":
                let latency = (r["latency_us"]?.doubleValue ?? 0) / 1000
                var text = "← \(r["commandType"]?.stringValue ?? "?") \(r["result"]?.stringValue ?? "?") from \(r["helper"]?.stringValue ?? "?")"
                if r["commandType"]?.stringValue == "evaluate", let c = r["network"]?["confidence"] {
                    text += " (confidence \(c.intValue.flatMap { Confidence(rawValue: $0)?.description } ?? c.stringValue ?? "?"))"
                }
                add(r, "response", text + String(format: " in %.1f ms", latency))
            case "event":
                let name = r["event"]?.stringValue ?? "?"
                switch name {
                case "associated":
                    let n = r["detail"]?["network"]
                    add(r, "event", "associated with \(n?["ssid"]?.stringValue ?? "?") \(n?["bssid"]?.stringValue ?? "")"
                        + (n?["didAutoJoin"]?.boolValue == true ? " (auto-join)" : " (joined by the user)"))
                case "disassociated", "ipUp", "ipDown", "maintainTimerFired":
                    add(r, "event", name + (r["via"]?.stringValue.map { " (\($0))" } ?? ""))
                case "foreground":
                    add(r, "user", "user brings \(r["detail"]?["helper"]?.stringValue ?? "no helper") to the foreground")
                case "deadlinePassed":
                    add(r, "event", "deadline passed for command \(r["detail"]?["command"]?.intValue ?? -1)")
                case "helperGone":
                    add(r, "event", "helper \(r["detail"]?["helper"]?.stringValue ?? "?") gone")
                default: break
                }
            case "network":
                add(r, "network", r["action"]?.stringValue ?? "?")
            case "notification":
                add(r, "notification", "\(r["helper"]?.stringValue ?? "?") posts \"\(r["title"]?.stringValue ?? "")\"")
            case "irregular", "rejected":
                add(r, r["kind"]!.stringValue!, r["message"]?.stringValue ?? "?")
            case "cache":
                add(r, "cache", "cache \(r["network"]?["ssid"]?.stringValue ?? "?"): "
                    + (r["action"]?.stringValue == "remove" ? "removed" : (r["helper"]?.stringValue ?? "not captive")))
            case "autoJoin":
                add(r, "autoJoin", "auto-join \(r["action"]?.stringValue ?? "?")d for \(r["network"]?["ssid"]?.stringValue ?? "?")")
            case "station":
                let action = r["action"]?.stringValue ?? "?"
                if action == "dhcpLease" {
                    add(r, "station", "DHCP lease \(r["lease"]?["ip"]?.stringValue ?? "?")" + String(format: " in %.0f ms", r["latency_ms"]?.doubleValue ?? 0))
                } else if action == "join" {
                    add(r, "user", "user joins \(r["ssid"]?.stringValue ?? "?") (password from \(r["passwordFrom"]?.stringValue ?? "?"))")
                } else if action == "roamed" {
                    add(r, "station", "roamed from \(r["from"]?.stringValue ?? "?") to \(r["to"]?.stringValue ?? "?")")
                } else if action == "signal" {
                    add(r, "station", String(format: "signal %.0f dBm (was %@)", r["rssi"]?.doubleValue ?? 0,
                                             r["previousRSSI"]?.doubleValue.map { String(format: "%.0f dBm", $0) } ?? "?"))
                } else if ["leave", "autoJoin"].contains(action) {
                    add(r, "user", action == "leave" ? "user leaves the network" : "device auto-joins known networks")
                }
            case "logoffRequest":
                add(r, "user", "logoff requested for \(r["helper"]?.stringValue ?? "?")")
            case "logoffAnswer":
                add(r, "event", "logoff \(r["accepted"]?.boolValue == true ? "accepted" : "refused")")
            case "scanList":
                let claimed = (r["networks"]?.arrayValue ?? []).filter { $0["annotation"]?.stringValue != nil }
                add(r, "scanList", "scan list shown: " + claimed.map { "\($0["ssid"]?.stringValue ?? "?") — \($0["annotation"]?.stringValue ?? "")" }.joined(separator: ", "))
            default:
                break
            }
        }
        return entries
    }

    public static func render(_ entries: [TimelineEntry]) -> [String] {
        entries.map { String(format: "%8.3f s  ", $0.t) + $0.text }
    }
}
