import Foundation
import HotspotProtocol
import Testing
@testable import LabKit
@testable import LabReplay
@testable import LabScenarioModel
@testable import LabScenarios

/// Traces read for a replay (no root): truncated, reordered and newer-format traces get errors naming the
/// line and what can be replayed is; a recorded run becomes a scenario of its actions with the recorded
/// states checked between them; the departure of two paths is found at the right step.
@Suite("Trace files and replay plans (no root)")
struct ReplayTests {
    static func line(_ seq: Int, _ t: Int, _ kind: String, _ fields: [String: JSON] = [:]) -> String {
        var o = fields
        o["seq"] = .number(Double(seq))
        o["t_ns"] = .number(Double(t))
        o["kind"] = .string(kind)
        return JSON.object(o).text
    }

    /// A recorded captive run as the scenario runner leaves it: the header, each step, the states.
    static var captive: [String] {
        [
            line(1, 1_000_000_000, "start", ["traceVersion": 1, "timeScale": 1, "maintainInterval_ms": 4000]),
            line(2, 1_100_000_000, "event", ["event": "helperRegistered", "detail": ["helper": "com.hotspotlab.portal", "displayName": "Portal Login"]]),
            line(3, 1_200_000_000, "labAction", ["action": ["scenario": "captive", "topology": "topologies/captive.yaml", "maintainInterval": 4, "timeScale": 1]]),
            line(4, 1_300_000_000, "labAction", ["action": ["step": "join: Cafe Lumiere", "line": 10]]),
            line(5, 2_500_000_000, "transition", ["from": "Inactive", "to": "Evaluating"]),
            line(6, 2_800_000_000, "transition", ["from": "Evaluating", "to": "Authenticating"]),
            line(7, 3_400_000_000, "transition", ["from": "Authenticating", "to": "Authenticated"]),
            line(8, 3_500_000_000, "labAction", ["action": ["step": "wait-state: Authenticated", "line": 11]]),
            line(9, 3_600_000_000, "labAction", ["action": ["step": "leave", "line": 12]]),
            line(10, 3_700_000_000, "transition", ["from": "Authenticated", "to": "Inactive"]),
            line(11, 3_800_000_000, "labAction", ["action": ["step": "auto-join", "line": 13]]),
            line(12, 5_000_000_000, "transition", ["from": "Inactive", "to": "Maintaining"]),
            line(13, 5_100_000_000, "transition", ["from": "Maintaining", "to": "Authenticated"]),
        ]
    }

    @Test("a whole trace: every record, the state path")
    func wholeTrace() throws {
        let trace = try TraceFile.parse(Self.captive.joined(separator: "\n") + "\n", file: "t.jsonl")
        #expect(trace.records.count == 13)
        #expect(trace.warnings.isEmpty)
        #expect(trace.path == ["Evaluating", "Authenticating", "Authenticated", "Inactive", "Maintaining", "Authenticated"])
    }

    @Test("truncated, reordered, newer: the line is named; what comes before is replayed")
    func damagedTraces() throws {
        var lines = Self.captive
        let truncated = try TraceFile.parse(lines.joined(separator: "\n") + "\n" + #"{"kind":"transition","seq":14,"#, file: "t.jsonl")
        #expect(truncated.records.count == 13)
        #expect(truncated.warnings == ["t.jsonl:14: truncated record (the file ends mid-record); replaying the 13 records before it"])

        lines.swapAt(5, 6)
        let reordered = try TraceFile.parse(lines.joined(separator: "\n"), file: "t.jsonl")
        #expect(reordered.records.count == 5)
        #expect(reordered.warnings.first?.hasPrefix("t.jsonl:6: seq 7 follows seq 5: records are missing or reordered; replaying the 5 records") == true)

        var newer = Self.captive
        newer[0] = Self.line(1, 1_000_000_000, "start", ["traceVersion": 2])
        let error = #expect(throws: TraceFileError.self) { try TraceFile.parse(newer.joined(separator: "\n"), file: "t.jsonl") }
        #expect(error?.description == "t.jsonl:1: trace format version 2 is newer than this hotspot-lab reads (1); update hotspot-lab")

        let garbage = #expect(throws: TraceFileError.self) { try TraceFile.parse("not json\n", file: "g.jsonl") }
        #expect(garbage?.line == 1)
    }

    @Test("a recorded run becomes its actions, with the recorded states awaited and checked between them")
    func planFromLabSteps() throws {
        let trace = try TraceFile.parse(Self.captive.joined(separator: "\n"), file: "/x/trace.jsonl")
        let plan = try Replay.plan(trace)
        #expect(plan.source == "the lab's step records")
        #expect(plan.scenario.topologyPath == "topologies/captive.yaml")
        #expect(plan.scenario.maintainInterval == 4)
        let texts = plan.scenario.steps.map(\.text)
        #expect(texts.filter { !$0.hasPrefix("sleep") } == [
            "join: Cafe Lumiere",
            "wait-state: {state: Evaluating, timeout: 23}", "wait-state: {state: Authenticating, timeout: 20}",
            "wait-state: {state: Authenticated, timeout: 21}", "expect-states: [Evaluating, Authenticating, Authenticated]",
            "leave",
            "wait-state: {state: Inactive, timeout: 20}", "expect-states: [Inactive]",
            "auto-join",
            "wait-state: {state: Maintaining, timeout: 23}", "wait-state: {state: Authenticated, timeout: 20}",
            "expect-states: [Maintaining, Authenticated]",
        ])
        // No helper given: the recorded answers.
        #expect(plan.scenario.helpers == [#"hotspot-replay-helper --trace "/x/trace.jsonl" --identifier com.hotspotlab.portal --speed 1.0"#])
        // The scenario file parses back to the same steps.
        let again = try ScenarioParser.parse(plan.yaml, file: "again.yaml")
        #expect(again.steps.map(\.text) == texts)
    }

    /// The pause before an action is counted from the last state entered since the previous action (written
    /// `sleep: {seconds: S, since: state}`, S the recorded time from the state to the action), so a loaded machine that
    /// sees the state late does not push the action past a timer; with no state in between, from the last record.
    @Test("a recorded pause after a state is slept from that state's trace time; one after no state, from now")
    func pauseSinceTheState() throws {
        let lines = Array(Self.captive.prefix(7)) + [
            Self.line(8, 3_450_000_000, "maintainTimer", ["action": "arm", "after_ms": 4000]),
            Self.line(9, 5_400_000_000, "labAction", ["action": ["step": "leave", "line": 12]]),
            Self.line(10, 5_500_000_000, "transition", ["from": "Authenticated", "to": "Inactive"]),
            Self.line(11, 6_500_000_000, "labAction", ["action": ["step": "foreground: com.x", "line": 13]]),
            Self.line(12, 7_500_000_000, "labAction", ["action": ["step": "auto-join", "line": 14]]),
        ]
        let plan = try Replay.plan(try TraceFile.parse(lines.joined(separator: "\n"), file: "/x/trace.jsonl"))
        let sleeps = plan.scenario.steps.map(\.text).filter { $0.hasPrefix("sleep") }
        // join: 1.3 s after the header's line, no state before it; leave: 2.0 s after Authenticated (not 1.95 s after the
        // timer's record); foreground: 1.0 s after Inactive; auto-join: 1.0 s after the foreground step, no state between.
        #expect(sleeps == ["sleep: {seconds: 2.00, since: state}", "sleep: {seconds: 1.00, since: state}", "sleep: 1.00"], "\(sleeps)")
        let again = try ScenarioParser.parse(plan.yaml, file: "again.yaml")
        #expect(again.steps.map(\.text) == plan.scenario.steps.map(\.text))
    }

    @Test("what happened after the scenario ended (a maintain the lab's teardown failed) is neither replayed nor compared")
    func tailAfterScenarioEndIsNotReplayed() throws {
        let lines = Self.captive + [
            Self.line(14, 5_200_000_000, "labAction", ["action": ["scenarioEnded": "captive"]]),
            Self.line(15, 9_100_000_000, "transition", ["from": "Authenticated", "to": "Maintaining"]),
            Self.line(16, 9_300_000_000, "transition", ["from": "Maintaining", "to": "Evaluating"]),
        ]
        let trace = try TraceFile.parse(lines.joined(separator: "\n"), file: "/x/trace.jsonl")
        #expect(trace.scenarioEnd == 13)
        #expect(trace.path.suffix(2) == ["Maintaining", "Evaluating"])
        #expect(trace.scenarioPath == ["Evaluating", "Authenticating", "Authenticated", "Inactive", "Maintaining", "Authenticated"])
        let plan = try Replay.plan(trace)
        #expect(plan.recordedPath == trace.scenarioPath)
        #expect(plan.scenario.steps.map(\.text).last == "expect-states: [Maintaining, Authenticated]")
        #expect(plan.notes.contains { $0.contains("2 transition(s) after the scenario ended") }, "\(plan.notes)")
        // Without the mark (an older recording) the whole trace is the scenario, as before.
        let unmarked = try TraceFile.parse(Self.captive.joined(separator: "\n"), file: "/x/trace.jsonl")
        #expect(unmarked.scenarioEnd == unmarked.records.count && unmarked.scenarioPath == unmarked.path)
    }

    @Test("a trace without lab steps: actions from the events hotspotd saw; without a topology, a clear error")
    func planFromEvents() throws {
        let lines = [
            Self.line(1, 0, "start", ["traceVersion": 1]),
            Self.line(2, 10, "event", ["event": "associated", "via": "control", "detail": ["network": ["ssid": "Cafe", "bssid": "02:00:00:00:00:01", "didAutoJoin": false]]]),
            Self.line(3, 20, "transition", ["from": "Inactive", "to": "Evaluating"]),
            Self.line(4, 30, "event", ["event": "foreground", "via": "control", "detail": ["helper": "com.x"]]),
            Self.line(5, 40, "logoffRequest", ["helper": "com.x", "via": "control"]),
            Self.line(6, 50, "logoffAnswer", ["helper": "com.x", "accepted": false]),
        ]
        let trace = try TraceFile.parse(lines.joined(separator: "\n"), file: "d.jsonl")
        let missing = #expect(throws: TraceFileError.self) { try Replay.plan(trace) }
        #expect(missing?.message.contains("give --topology FILE with the networks Cafe") == true)
        let plan = try Replay.plan(trace, topology: "topologies/captive.yaml", helpers: ["my-helper"])
        #expect(plan.scenario.steps.map(\.text).filter { !$0.hasPrefix("sleep") } == [
            "join: Cafe", "wait-state: {state: Evaluating, timeout: 20}", "expect-states: [Evaluating]",
            "foreground: com.x", "logoff: {helper: com.x, expect: refused}",
        ])
        #expect(plan.scenario.helpers == ["my-helper"])
    }

    @Test("a maintain timer the lab fired (via control) is fired again at that point; one that ran out (via timer) is left to the timer")
    func planFiresTheMaintainTimer() throws {
        let lines = [
            Self.line(1, 0, "start", ["traceVersion": 1]),
            Self.line(2, 10, "event", ["event": "associated", "via": "control", "detail": ["network": ["ssid": "Cafe", "bssid": "02:00:00:00:00:01", "didAutoJoin": false]]]),
            Self.line(3, 20, "transition", ["from": "Inactive", "to": "Evaluating"]),
            Self.line(4, 30, "transition", ["from": "Evaluating", "to": "Authenticated"]),
            Self.line(5, 40, "event", ["event": "maintainTimerFired", "via": "control"]),
            Self.line(6, 50, "transition", ["from": "Authenticated", "to": "Maintaining"]),
            Self.line(7, 60, "transition", ["from": "Maintaining", "to": "Authenticated"]),
            Self.line(8, 70, "event", ["event": "maintainTimerFired", "via": "timer"]),
            Self.line(9, 80, "transition", ["from": "Authenticated", "to": "Maintaining"]),
        ]
        let trace = try TraceFile.parse(lines.joined(separator: "\n"), file: "d.jsonl")
        let steps = try Replay.plan(trace, topology: "topologies/captive.yaml", helpers: ["my-helper"]).scenario.steps.map(\.text)
        #expect(steps.filter { $0 == "fire-maintain-timer" }.count == 1, "\(steps)")
        let fire = try #require(steps.firstIndex(of: "fire-maintain-timer"))
        #expect(steps[..<fire].contains { $0.hasPrefix("wait-state: {state: Authenticated") }, "fired once Authenticated: \(steps)")
        #expect(steps[fire...].contains { $0.hasPrefix("wait-state: {state: Maintaining") }, "\(steps)")
    }

    @Test("steps that name a helper by its executable name it by the identifier it registered with (the replay runs other executables)")
    func helperNamesBecomeIdentifiers() throws {
        let lines = [
            Self.line(1, 0, "start", ["traceVersion": 1]),
            Self.line(2, 10, "labAction", ["action": ["scenario": "ui", "topology": "topologies/ui-required.yaml",
                                                      "helpers": [["command": #"hotspot-helper-voucher --network "Grand Hotel Guest""#, "identifier": "com.hotspotlab.voucher"]]]]),
            Self.line(3, 20, "labAction", ["action": ["step": "foreground: hotspot-helper-voucher"]]),
            Self.line(4, 30, "labAction", ["action": ["step": "type: {helper: hotspot-helper-voucher, text: ROOM-4217}"]]),
        ]
        let plan = try Replay.plan(try TraceFile.parse(lines.joined(separator: "\n"), file: "u.jsonl"))
        #expect(plan.scenario.steps.map(\.text) == ["foreground: com.hotspotlab.voucher", "type: {helper: com.hotspotlab.voucher, text: ROOM-4217}"])
    }

    @Test("signal and roam steps are lab actions: replayed as written; the expectations around them are not")
    func signalAndRoamAreReplayed() throws {
        let lines = [
            Self.line(1, 0, "start", ["traceVersion": 1]),
            Self.line(2, 10, "labAction", ["action": ["scenario": "roaming", "topology": "topologies/roaming.yaml"]]),
            Self.line(3, 20, "labAction", ["action": ["step": "signal: {hotspot: cafe, bssid: 02:00:00:00:01:00, dbm: -50}"]]),
            Self.line(4, 30, "labAction", ["action": ["step": "roam: 02:00:00:00:01:01"]]),
            Self.line(5, 40, "labAction", ["action": ["step": "expect-command: {command: maintain, max-signal-strength: 0.7}"]]),
        ]
        let plan = try Replay.plan(try TraceFile.parse(lines.joined(separator: "\n"), file: "r.jsonl"))
        #expect(plan.scenario.steps.map(\.text) == ["signal: {hotspot: cafe, bssid: 02:00:00:00:01:00, dbm: -50}", "roam: 02:00:00:00:01:01"])
        let roam = try #require(plan.scenario.steps[1].action as? RoamStep, "\(plan.scenario.steps[1].action)")
        #expect(roam.bssid == "02:00:00:00:01:01" && roam.timeout == 30, "\(roam)")
    }

    @Test("where two state paths part")
    func departure() {
        #expect(Replay.departure(recorded: ["Evaluating", "Authenticated"], replayed: ["Evaluating", "Authenticated"]) == nil)
        let d = Replay.departure(recorded: ["Evaluating", "Authenticating", "Authenticated"], replayed: ["Evaluating", "Authenticating", "Failure", "Inactive"])
        #expect(d?.index == 2 && d?.recorded == "Authenticated" && d?.replayed == "Failure")
        let short = Replay.departure(recorded: ["Evaluating", "Authenticated"], replayed: ["Evaluating"])
        #expect(short?.index == 1 && short?.replayed == nil)
    }
}
