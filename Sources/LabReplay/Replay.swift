import Foundation
import HotspotCore
import HotspotProtocol
import Yams
import LabScenarios
import LabServices
import LabTopology

/// A trace file that cannot be replayed (or only in part): the line and what is wrong.
public struct TraceFileError: Error, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var message: String
    public var description: String { "\(file):\(line): \(message)" }
}

/// hotspotd's trace (docs/TRACE.md), read for a replay: every record with its line, checked. A truncated,
/// reordered or incomplete tail is cut off with a warning naming the line (what comes before is replayed);
/// a newer format version, or nothing usable, is an error.
public struct TraceFile: Sendable {
    public var file: String
    public var records: [TraceEntry]
    public var lines: [Int]
    public var warnings: [String]

    public static func load(path: String) throws -> TraceFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TraceFileError(file: path, line: 0, message: "cannot read the trace: \(String(cString: strerror(errno)))")
        }
        return try parse(String(decoding: data, as: UTF8.self), file: path)
    }

    public static func parse(_ text: String, file: String) throws -> TraceFile {
        var trace = TraceFile(file: file, records: [], lines: [], warnings: [])
        let rawLines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var lastSeq: Int?
        var lastTime: Double?
        for (offset, raw) in rawLines.enumerated() {
            let number = offset + 1
            if raw.allSatisfy(\.isWhitespace) { continue }
            guard let record = TraceEntry(line: Array(raw.utf8)) else {
                let isLast = rawLines[(offset + 1)...].allSatisfy { $0.allSatisfy(\.isWhitespace) }
                trace.warnings.append("\(file):\(number): " + (isLast ? "truncated record (the file ends mid-record)" : "not a JSON object")
                                      + "; replaying the \(trace.records.count) records before it")
                break
            }
            guard record.isPositioned, let t = record.time else {
                trace.warnings.append("\(file):\(number): a record without kind, seq or t_ns; replaying the \(trace.records.count) records before it")
                break
            }
            let seq = record.seq
            if let start = record.record.start {
                if let version = start.traceVersion, version > traceFormatVersion {
                    throw TraceFileError(file: file, line: number,
                                         message: "trace format version \(version) is newer than this hotspot-lab reads (\(traceFormatVersion)); update hotspot-lab")
                }
                lastSeq = nil
                lastTime = nil
            }
            if let lastSeq, seq != lastSeq + 1 {
                trace.warnings.append("\(file):\(number): seq \(seq) follows seq \(lastSeq): records are missing or reordered; "
                                      + "replaying the \(trace.records.count) records before it")
                break
            }
            if let lastTime, t < lastTime {
                trace.warnings.append("\(file):\(number): time goes backwards (t_ns \(Int64(t)) after \(Int64(lastTime))): records are reordered; "
                                      + "replaying the \(trace.records.count) records before it")
                break
            }
            lastSeq = seq
            lastTime = t
            trace.records.append(record)
            trace.lines.append(number)
        }
        guard !trace.records.isEmpty else {
            throw TraceFileError(file: file, line: 1, message: "no replayable record" + (trace.warnings.first.map { " (\($0))" } ?? ""))
        }
        return trace
    }

    /// The states entered, in order.
    public var path: [String] { records.compactMap { $0.record.transition?.to } }
    /// Where the recorded scenario ended (the lab's `scenarioEnded` mark), else the end of the trace: after it, the
    /// trace holds the lab going down, which is nothing to replay.
    public var scenarioEnd: Int { records.firstIndex { $0.record.labAction?.action.scenarioEnded != nil } ?? records.count }
    /// The states entered before the scenario ended: what a replay reproduces.
    public var scenarioPath: [String] { records[..<scenarioEnd].compactMap { $0.record.transition?.to } }
}

/// Turns a recorded run into a scenario that does the same things to the world (the environment side: what
/// the user and the lab did), waits for the states the recording reached before each action, and checks the
/// states entered between actions: the first `expect-states` that fails is where the new run departs.
public enum Replay {
    /// The text a replay runs for a recorded step, from its kind's `StepKind.replay` (nil: not replayed, an
    /// expectation: the recording's states are expected instead; or a kind this hotspot-lab does not know).
    static func replayed(_ text: String) -> String? {
        let kind = String(text.prefix { $0 != ":" }).trimmingCharacters(in: .whitespaces)
        return StepRegistry.kind(kind)?.replay.replayed(text)
    }

    public struct Plan: Sendable {
        public var scenario: Scenario
        /// The recorded state path, up to the scenario's end (`TraceFile.scenarioPath`).
        public var recordedPath: [String]
        /// How each action was found (the lab's own step records, or the events hotspotd saw).
        public var source: String
        /// The recorded helpers (identifier, display name).
        public var helpers: [(identifier: String, displayName: String)]
        public var notes: [String]
        /// The scenario as a file (`--to-scenario`).
        public var yaml: String
    }

    /// `topology`: required when the trace does not name its own (a trace from a device, or from `ctl`).
    public static func plan(_ trace: TraceFile, topology: String? = nil, helpers: [String]? = nil, speed: Double = 1) throws -> Plan {
        var notes = trace.warnings
        let header = trace.records.compactMap { $0.record.labAction?.action }.first { $0.scenario != nil }
        let start = trace.records.lazy.compactMap(\.record.start).first
        guard let topologyPath = topology ?? header?.topology else {
            let ssids = Set(trace.records.compactMap(\.record.event).filter { $0.event == "associated" }.map { $0.detail?.network?.ssid.inline ?? "?" })
            throw TraceFileError(file: trace.file, line: 1, message: "the trace does not name its topology; give --topology FILE with the networks "
                                 + (ssids.isEmpty ? "it needs" : ssids.sorted().joined(separator: ", ")))
        }
        let timeScale = header?.timeScale ?? start?.timeScale ?? 1
        let maintain = header?.maintainInterval
            ?? start?.maintainInterval_ms.map { $0 / 1000 / timeScale } ?? 300
        var recordedHelpers: [(String, String)] = []
        for e in trace.records.compactMap(\.record.event) where e.event == "helperRegistered" {
            if let id = e.detail?.helper, !recordedHelpers.contains(where: { $0.0 == id }) {
                recordedHelpers.append((id, e.detail?.displayName ?? id))
            }
        }
        let replayHelpers = helpers ?? recordedHelpers.map { "hotspot-replay-helper --trace \"\(trace.file)\" --identifier \($0.0) --speed \(speed)" }

        // Steps name helpers by executable or identifier; the replay's helpers may be other executables
        // (the recorded answers), so a value that is an executable's name becomes the identifier it registered with.
        var identifiers: [String: String] = [:]
        for h in header?.helpers ?? [] {
            if let command = h.command, let id = h.identifier,
               let exe = RunningStation.executableName(command) {
                identifiers[exe] = id
            }
        }

        // Where the recorded scenario ended (its lab going down after it is not replayed), else the whole trace.
        let end = trace.scenarioEnd
        let afterEnd = trace.records[end...].compactMap(\.record.transition?.to)
        if !afterEnd.isEmpty {
            notes.append("not replayed: \(afterEnd.count) transition(s) after the scenario ended, while its lab went down (\(afterEnd.joined(separator: " -> ")))")
        }

        // The actions, with where they stand in the trace.
        var actions: [(index: Int, step: Node)] = []
        var source = "the lab's step records"
        for (i, r) in trace.records.enumerated() where i < end {
            guard let text = r.record.labAction?.action.step else { continue }
            // Expectations inside an action are the original run's; the replay checks the states instead.
            guard let replayed = replayed(text) else { continue }
            guard let step = try LabYAML.compose(replayed, file: "\(trace.file):\(trace.lines[i]) (step)") else { continue }
            actions.append((i, renaming(step, identifiers)))
        }
        if actions.isEmpty {
            source = "the events hotspotd saw (user actions, associations)"
            actions = eventActions(trace)
            if actions.isEmpty { notes.append("no user or lab action in the trace: the replay only starts the lab and compares the states") }
        }

        // Before each action, the states the recording entered since the previous one.
        var steps: [Node] = []
        var previous = 0
        var previousTime = trace.records.first?.time ?? 0
        // Each recorded state is awaited in turn (a wait finds the first transition to it after the previous one),
        // with time for the recorded gap (timers) three times over plus 20 s; then the segment is checked whole.
        func segment(upTo end: Int) {
            var states: [String] = []
            var last = previous > 0 ? trace.records[previous - 1].time : trace.records.first?.time
            for record in trace.records[previous..<end] {
                guard let state = record.record.transition?.to else { continue }
                let t = record.time ?? 0
                let gap = max(0, (t - (last ?? t)) / 1e9)
                steps.append(step("wait-state", ["state": Node(state), "timeout": Node(String(Int(min(600, gap * 3 + 20))))]))
                states.append(state)
                last = t
            }
            if !states.isEmpty { steps.append(step("expect-states", Node(states.map { Node($0) }))) }
        }
        for (index, action) in actions {
            segment(upTo: index)
            // The recorded pause before the action (scaled by `speed`): from the last state entered since the previous
            // action, counted from that state's trace time in the replay (`sleep: {since: state}`), so the action keeps
            // its place against hotspotd's timers however late a loaded machine sees the state; with no state in
            // between, from the last thing that happened, counted from now.
            let segmentRecords = trace.records[previous..<index]
            let stateTime = segmentRecords.last(where: { $0.record.transition != nil })?.time
            let from = stateTime ?? segmentRecords.last?.time ?? previousTime
            let gap = ((trace.records[index].time ?? from) - from) / 1e9 / speed
            if gap >= 0.2 {
                let seconds = Node(String(format: "%.2f", min(gap, 60)))
                steps.append(step("sleep", stateTime == nil ? seconds : Node([(Node("seconds"), seconds), (Node("since"), Node("state"))])))
            }
            steps.append(action)
            previous = index + 1
            previousTime = trace.records[index].time ?? previousTime
        }
        // The tail: the states after the last action, up to the scenario's end.
        segment(upTo: end)
        let name = header?.scenario.map { "replay-\($0)" } ?? "replay"
        let yaml = try render(name: name, topology: topologyPath, maintain: maintain, timeScale: timeScale, helpers: replayHelpers,
                          steps: steps.isEmpty ? [step("sleep", "1")] : steps, trace: trace.file)
        // No folder in the name: the topology path stays as recorded (relative to where the run was started).
        let scenario = try ScenarioParser.parse(yaml, file: "replay.yaml")
        return Plan(scenario: scenario, recordedPath: trace.scenarioPath, source: source,
                    helpers: recordedHelpers.map { (identifier: $0.0, displayName: $0.1) }, notes: notes, yaml: yaml)
    }

    /// A step of `kind` with `value` (`kind: value`), as a scenario file's list item.
    static func step(_ kind: String, _ value: Node) -> Node {
        Node([(Node(kind), value)])
    }

    /// `node` with every scalar that is an executable's name in `identifiers` replaced by its identifier (a whole
    /// value, never part of one).
    static func renaming(_ node: Node, _ identifiers: [String: String]) -> Node {
        switch node {
        case .scalar(let scalar):
            guard let id = identifiers[scalar.string] else { return node }
            return Node(id)
        case .mapping(let mapping):
            return Node(mapping.map { ($0.key, renaming($0.value, identifiers)) })
        case .sequence(let sequence):
            return Node(sequence.map { renaming($0, identifiers) })
        case .alias:
            return node
        }
    }

    /// A `join` step for the SSID of a request or network object: `join: TEXT` for a plain UTF-8 SSID (as
    /// before), else `join: {ssid_hex: HEX}`: the bytes, whatever they are.
    static func joinStep(_ ssid: SSID?) -> Node {
        guard let ssid else { return step("join", "?") }
        if ssid.isUTF8, SSIDText.inline(ssid) == ssid.text { return step("join", Node(ssid.text)) }
        return step("join", Node([(Node("ssid_hex"), Node(ssid.hex))]))
    }

    /// Actions from what hotspotd recorded of the user and the world (no lab step records).
    static func eventActions(_ trace: TraceFile) -> [(index: Int, step: Node)] {
        var actions: [(Int, Node)] = []
        for (i, r) in trace.records.enumerated() {
            switch r.record {
            case .userAction(let u):
                switch u.requestType {
                case "join": actions.append((i, joinStep(u.requestSSID)))
                case "leave": actions.append((i, "leave"))
                case "autoJoin": actions.append((i, "auto-join"))
                default: break
                }
            case .event(let e):
                guard e.origin.via == "control" else { continue }
                switch e.event {
                case "associated":
                    let n = e.detail?.network
                    actions.append((i, n?.didAutoJoin == true ? "auto-join" : joinStep(n?.ssid.ssid)))
                case "disassociated": actions.append((i, "leave"))
                case "foreground": actions.append((i, step("foreground", Node(e.detail?.helper ?? "null"))))
                case "scanListShown": actions.append((i, "show-scan-list"))
                // The lab (or `hotspot-lab ctl`) fired the maintain timer: the replay fires it at the same point.
                case "maintainTimerFired": actions.append((i, "fire-maintain-timer"))
                default: break
                }
            case .logoffRequest(let l):
                guard l.via == "control" else { continue }
                // The logoff's expectation is what the recording answered.
                let answer = trace.records[(i + 1)...].lazy.compactMap(\.record.logoffAnswer).first
                let expect = answer?.accepted == false ? "refused" : "accepted"
                actions.append((i, step("logoff", Node([(Node("helper"), Node(l.helper)), (Node("expect"), Node(expect))]))))
            default:
                break
            }
        }
        return actions
    }

    /// The scenario file a replay runs (`hotspot-lab replay --to-scenario`), written by `LabYAML.write`.
    static func render(name: String, topology: String, maintain: Double, timeScale: Double, helpers: [String], steps: [Node], trace: String) throws -> String {
        var fields: [(Node, Node)] = [
            ("name", Node(name)),
            ("description", "the recorded run's actions, its states checked between them"),
            ("topology", Node(topology)),
            ("maintain-interval", Node("\(maintain)")),
            ("time-scale", Node("\(timeScale)")),
        ]
        // What the recorded steps need beyond the native tier (docs/SCENARIOS.md, "Tiers").
        let kinds = Set(steps.map { $0.mapping?.keys.first?.string ?? $0.string ?? "" })
        if !kinds.isDisjoint(with: ScenarioParser.airStepKinds) { fields.append(("needs", "air")) } else if kinds.contains("link") { fields.append(("needs", "netem")) }
        if !helpers.isEmpty { fields.append(("helpers", Node(helpers.map { Node($0) }))) }
        fields.append(("steps", Node(steps)))
        return try LabYAML.write(Node(fields), comment: "Replay of \(trace) (hotspot-lab replay --to-scenario); schema: docs/SCENARIOS.md")
    }

    /// Where two state paths part: nil when equal.
    public static func departure(recorded: [String], replayed: [String]) -> (index: Int, recorded: String?, replayed: String?)? {
        for i in 0..<max(recorded.count, replayed.count) {
            let a = i < recorded.count ? recorded[i] : nil
            let b = i < replayed.count ? replayed[i] : nil
            if a != b { return (i, a, b) }
        }
        return nil
    }
}
