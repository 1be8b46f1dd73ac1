import HotspotCore
import Foundation
import HotspotProtocol
import Testing
@testable import LabKit
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabServices
@testable import LabTopology
import PortalKinds

/// A fake lab for the runner: hotspotd's trace is a list the test scripts (what each user action makes
/// hotspotd record), every call is logged, the lab's answers are set by the test.
final class FakeStepContext: StepContext {
    let topology: Topology
    var stationName = "phone"
    var stateCheckpoint = 0
    var waitCursor = 0
    var stateBound: Int?
    var matchedTransition: Int?
    var calls: [String] = []
    var trace: [JSON] = []
    /// Records appended to the trace when the user joins (and auto-joins, leaves).
    var onJoin: [JSON] = []
    var onAutoJoin: [JSON] = []
    var onLeave: [JSON] = []
    /// Records appended when a `dns` step acts (what hotspotd traced while the action was under way).
    var onDNS: [JSON] = []
    /// Records appended while an `application` step's request is under way, and during a `sleep` (what hotspotd's
    /// timers traced meanwhile).
    var onApplication: [JSON] = []
    var onPause: [JSON] = []
    /// Records that reach the trace only after a wait answered "already there" from the status (`statusAfterLeave`).
    var lateRecords: [JSON] = []
    /// The state `leave` puts in the status before its transition record is read (nil: as `onLeave` says).
    var statusAfterLeave: String?
    /// Each step's record goes into the trace too, as hotspotd writes it (what `after:` looks for); off by default so
    /// the other tests' line numbers stay the scripted records'.
    var traceSteps = false
    var statusValue: JSON = ["state": "Inactive"]
    /// Helpers by executable name: (pid, identifier).
    var helpers: [String: (pid: Int32, identifier: String)] = ["hotspot-helper-portal": (4242, "com.hotspotlab.portal")]
    var applicationAnswer: (status: Int?, error: String) = (200, "")
    var probeAnswers: [String: ProbeObservation] = [:]
    var logoffAnswer = true
    var gate: [String] = []
    var mac = "02:00:00:00:0a:00"
    var hostapdReplies = ["OK"]
    var recorded: [String] = []

    /// CLOCK_MONOTONIC as the steps read it (`sleep: {since: state}`), against the trace's `t_ns`.
    var now: Duration = .seconds(100)

    init(topology: Topology) { self.topology = topology }

    func monotonicNow() -> Duration { now }

    static func transition(_ from: String, _ to: String) -> JSON { ["kind": "transition", "from": .string(from), "to": .string(to)] }

    func append(_ records: [JSON]) {
        trace += records
        if let last = records.last(where: { $0["kind"]?.stringValue == "transition" }), let state = last["to"]?.stringValue {
            statusValue = ["state": .string(state)]
        }
    }

    func status() throws -> JSON { statusValue }
    func readTrace(from line: Int) -> [TraceEntry] { trace.dropFirst(line).map(TraceEntry.init(json:)) }
    func traceLineCount() -> Int { trace.count }
    func waitForState(_ state: String, after cursor: Int, timeout: Duration) throws -> Int {
        calls.append("waitForState \(state) after \(cursor)")
        guard let index = trace.indices.first(where: { $0 >= cursor && trace[$0]["kind"]?.stringValue == "transition" && trace[$0]["to"]?.stringValue == state })
        else {
            // Already there, as the real lab answers from hotspotd's status when no transition has been read since the
            // cursor; `lateRecords` are what hotspotd had written but the lab had not read yet.
            guard statusValue["state"]?.stringValue == state else { throw StepFailure("timed out waiting for \(state)") }
            append(lateRecords)
            lateRecords = []
            return cursor
        }
        return index + 1
    }
    func showScanList() throws -> [TraceScanListEntry] {
        calls.append("showScanList")
        return [TraceScanListEntry(network: TraceNetwork(ssid: TraceSSID(text: "Cafe Lumiere"), security: "open"), annotation: "Portal Login", claimedBy: nil)]
    }
    func join(_ ssid: SSID, password: String?) throws {
        calls.append("join \(ssid.isUTF8 ? ssid.text : "hex:" + ssid.hex) \(password ?? "-")")
        append(onJoin)
    }
    func autoJoin() throws {
        calls.append("autoJoin")
        append(onAutoJoin)
    }
    func fireMaintainTimer() throws { calls.append("fire-maintain-timer") }
    func leave() throws {
        calls.append("leave")
        append(onLeave)
        if let statusAfterLeave { statusValue = ["state": .string(statusAfterLeave)] }
    }
    func foreground(_ identifier: String?) throws { calls.append("foreground \(identifier ?? "none")") }
    func logoff(helper identifier: String) throws -> Bool {
        calls.append("logoff \(identifier)")
        return logoffAnswer
    }
    func restartHotspotd(helperDelay: Duration) throws -> Int {
        calls.append("restartHotspotd \(helperDelay)")
        return trace.count
    }
    func recordStep(_ text: String, kind: String, line: Int, index: Int) {
        recorded.append("\(index) \(line) \(text)")
        if traceSteps {
            trace.append(["kind": "labAction", "action": ["step": .string(text), "stepKind": .string(kind), "line": .number(Double(line)),
                                                         "index": .number(Double(index))]])
        }
    }
    func waitForTransition(to state: String, after cursor: Int, timeout: Duration) throws -> Int {
        calls.append("waitForTransition \(state) after \(cursor)")
        guard let index = trace.indices.first(where: { $0 >= cursor && trace[$0]["kind"]?.stringValue == "transition" && trace[$0]["to"]?.stringValue == state })
        else { throw StepFailure("timed out waiting for a transition to \(state)") }
        return index + 1
    }
    func helperPID(_ name: String) -> Int32? { helpers[name]?.pid ?? helpers.values.first { $0.identifier == name }?.pid }
    func helperIdentifier(_ name: String) -> String? { helpers[name]?.identifier ?? helpers.values.first { $0.identifier == name }?.identifier }
    func type(_ text: String, intoHelper name: String) throws { calls.append("type \(text) into \(name)") }
    func killHelper(_ name: String) throws { calls.append("kill \(name)") }
    func signalHelper(_ name: String, _ signal: Int32) throws { calls.append("signal \(signal) to \(name)") }
    func macAddress() throws -> String { mac }
    func application(_ url: String) throws -> (status: Int?, error: String) {
        calls.append("application \(url)")
        append(onApplication)
        return applicationAnswer
    }
    func probe(_ urls: [String]) throws -> [ProbeObservation] {
        calls.append("probe " + urls.joined(separator: " "))
        return urls.map { probeAnswers[$0] ?? .failed("no route") }
    }
    func wpaRequest(_ command: String) throws -> String {
        calls.append("wpa \(command)")
        return "OK"
    }
    func wpaWaitForEvent(_ prefixes: [String], timeout: Duration) throws -> String { prefixes.first ?? "" }
    var wpaLog: String { "/tmp/wpa.log" }
    func hostapdCount(hotspot: String) throws -> Int { hostapdReplies.count }
    func hostapdRequest(hotspot: String, index: Int, _ command: String) throws -> String {
        calls.append("hostapd \(hotspot) #\(index) \(command)")
        return hostapdReplies[index]
    }
    func setUplink(hotspot: String, up: Bool) throws -> String {
        calls.append("uplink \(hotspot) \(up ? "up" : "down")")
        return "uplink of \(hotspot) \(up ? "up" : "down")"
    }
    func setLinkQuality(hotspot: String, side: LinkSide, latencyMS: Int, jitterMS: Int, lossPercent: Double, rateKbit: Int) throws -> String {
        calls.append("link \(hotspot) \(side) \(latencyMS) \(jitterMS) \(lossPercent) \(rateKbit)")
        return "netem on \(hotspot)"
    }
    func setDNS(hotspot: String, mode: String) throws -> String {
        append(onDNS)
        calls.append("dns \(hotspot) \(mode)")
        return "DNS of \(hotspot): \(mode)"
    }
    func switchPortal(hotspot: String, kind: String, settings: [String: String]) throws { calls.append("portal \(hotspot) \(kind) \(settings)") }
    func gateAuthenticated(hotspot: String) throws -> [String] {
        calls.append("gate \(hotspot)")
        return gate
    }
    func setSignal(hotspot: String, bssid: String?, dbm: Int?) throws -> String {
        calls.append("signal \(hotspot) \(bssid ?? "all") \(dbm.map(String.init) ?? "normal")")
        return "signal of \(hotspot) set"
    }
    func expirePortalSessions(hotspot: String) throws { calls.append("expire \(hotspot)") }
    func pause(_ seconds: Double) {
        calls.append("pause \(seconds)")
        append(onPause)
    }
}

/// The scenario runner without root or a lab: parsed scenarios run against `FakeStepContext`; the calls each
/// step makes, the pass/fail of expectations and the messages (exactly as the progress lines print them).
@Suite("Scenario runner against a fake lab (no root)")
struct ScenarioRunnerTests {
    static func topology() throws -> Topology { try TopologyParser.load(path: "topologies/captive.yaml") }

    /// The captive sequence as hotspotd records it after a join.
    static let captiveRecords: [JSON] = [
        FakeStepContext.transition("Inactive", "Evaluating"),
        ["kind": "command", "id": 1, "commandType": "evaluate", "helper": "com.hotspotlab.portal", "network": ["didJustJoin": true]],
        ["kind": "response", "command": 1, "result": "success"],
        FakeStepContext.transition("Evaluating", "Authenticating"),
        ["kind": "command", "id": 2, "commandType": "authenticate", "helper": "com.hotspotlab.portal"],
        ["kind": "response", "command": 2, "result": "success"],
        FakeStepContext.transition("Authenticating", "Authenticated"),
        ["kind": "notification", "helper": "com.hotspotlab.portal", "title": "Cafe", "body": "Signed in"],
    ]

    /// A fake lab whose join makes hotspotd trace the captive sequence (`captiveRecords`).
    static func captiveContext() throws -> FakeStepContext {
        let context = FakeStepContext(topology: try topology())
        context.onJoin = captiveRecords
        return context
    }

    static func run(_ steps: String, _ context: FakeStepContext) throws -> [StepResult] {
        let scenario = try ScenarioParser.parse("topology: ../captive.yaml\nsteps:\n" + steps, file: "topologies/scenarios/s.yaml")
        return ScenarioRunner.runSteps(scenario, in: context)
    }

    /// `sleep: {seconds: S, since: state}` (what a replay writes for a recorded pause after a state) sleeps to S seconds
    /// after the trace time of the state the last wait matched, whenever the runner saw it: 0.2 s left when the state
    /// came 0.3 s before the step, nothing when it came 0.9 s before, S from now when the wait matched none.
    @Test("sleep since the state: counted from the matched state's trace time, not from when the wait returned", arguments: [
        (0.3, "pause 0.2"), (0.9, nil), (nil, "pause 0.5"),
    ] as [(Double?, String?)])
    func sleepSinceState(_ stateAgo: Double?, _ pause: String?) throws {
        let context = try Self.captiveContext()
        if let stateAgo {
            context.onJoin = Self.captiveRecords.map { r in
                guard r["to"]?.stringValue == "Authenticated", case .object(var o) = r else { return r }
                o["t_ns"] = .number((100 - stateAgo) * 1e9)
                return .object(o)
            }
        } else {
            context.onJoin = []
            context.statusValue = ["state": "Authenticated"]  // already there: the wait matches no transition
        }
        let results = try Self.run("  - join: Cafe Lumiere\n  - wait-state: Authenticated\n  - sleep: {seconds: 0.5, since: state}\n", context)
        #expect(results.allSatisfy { $0.passed }, "\(results.map(\.message))")
        let pauses = context.calls.filter { $0.hasPrefix("pause") }.map { String($0.prefix(9)) }
        #expect(pauses == (pause.map { [$0] } ?? []), "\(context.calls) \(results.map(\.message))")
        if stateAgo == 0.9 { #expect(results.last?.message.contains("no sleep") == true, "\(results.map(\.message))") }
    }

    @Test("the captive sequence: each step's calls, messages and the state after it; every step recorded in the trace")
    func captivePasses() throws {
        let context = try Self.captiveContext()
        context.gate = ["02:00:00:00:0a:00 . 198.51.100.14"]
        let results = try Self.run("""
              - show-scan-list: {expect: {Cafe Lumiere: Portal Login}}
              - join: Cafe Lumiere
              - wait-state: Authenticated
              - expect-states: [Evaluating, Authenticating, Authenticated]
              - expect-command: {command: authenticate, result: success, helper: hotspot-helper-portal}
              - expect-notification: hotspot-helper-portal
              - application: allowed
              - gate: authenticated
              - foreground: hotspot-helper-portal
              - logoff: hotspot-helper-portal
              - sleep: 2
            """, context)
        #expect(results.allSatisfy { $0.passed }, "\(results.filter { !$0.passed }.map(\.message))")
        #expect(results.map(\.message) == [
            "scan list:\n         Cafe Lumiere  — Portal Login",
            "join Cafe Lumiere",
            "state Authenticated",
            "Evaluating -> Authenticating -> Authenticated",
            "authenticate -> success",
            "notification \"Cafe\": Signed in",
            "application allowed: HTTP 200",
            "gate of cafe: authenticated (02:00:00:00:0a:00 . 198.51.100.14)",
            "foreground com.hotspotlab.portal",
            "logoff accepted",
            "slept 2.0 s",
        ])
        #expect(results.map(\.state) == ["Inactive"] + Array(repeating: "Authenticated", count: 10))
        #expect(context.calls == [
            "showScanList", "join Cafe Lumiere -", "waitForState Authenticated after 0", "application http://198.18.0.1/", "gate cafe",
            "foreground com.hotspotlab.portal", "logoff com.hotspotlab.portal", "pause 2.0",
        ])
        // expect-states read up to the transition the wait matched (line 7), not to the trace's end (8: the notification
        // after it): only checks ran between them.
        #expect(context.waitCursor == 7 && context.stateCheckpoint == 7)
        #expect(context.recorded.first == "0 3 show-scan-list: {expect: {Cafe Lumiere: Portal Login}}")
        #expect(context.recorded.count == 11)
    }

    static let maintainRound: [JSON] = [
        FakeStepContext.transition("Authenticated", "Maintaining"),
        ["kind": "command", "id": 3, "commandType": "maintain", "helper": "com.hotspotlab.portal"],
        ["kind": "response", "command": 3, "result": "success"],
        FakeStepContext.transition("Maintaining", "Authenticated"),
    ]

    @Test("expect-states reads up to the last wait-state's transition while only checks ran since: a maintain round the timer ran meanwhile counts toward the next expect-states")
    func expectStatesStopsAtTheWait() throws {
        let context = try Self.captiveContext()
        // The maintain timer fires while the application request is under way (a loaded machine): it is after the
        // transition the wait matched, in trace order.
        context.onApplication = Self.maintainRound
        let results = try Self.run("""
              - join: Cafe Lumiere
              - wait-state: Authenticated
              - application: allowed
              - expect-states: [Evaluating, Authenticating, Authenticated]
              - expect-states: []
              - wait-state: Maintaining
              - wait-state: Authenticated
              - expect-states: [Maintaining, Authenticated]
            """, context)
        #expect(results.allSatisfy { $0.passed }, "\(results.filter { !$0.passed }.map(\.message))")
        #expect(results.count == 8)
    }

    @Test("a wait-state answered from the status (already there, its transition not read yet) sets no bound: expect-states reads to now (CI run 27's dual-cached)")
    func alreadyThereSetsNoBound() throws {
        let context = try Self.captiveContext()
        context.statusAfterLeave = "Inactive"
        context.lateRecords = [FakeStepContext.transition("Authenticated", "Inactive")]
        let results = try Self.run("""
              - join: Cafe Lumiere
              - wait-state: Authenticated
              - expect-states: [Evaluating, Authenticating, Authenticated]
              - leave
              - wait-state: Inactive
              - expect-states: [Inactive]
            """, context)
        #expect(results.allSatisfy { $0.passed }, "\(results.filter { !$0.passed }.map(\.message))")
        #expect(context.calls.contains("waitForState Inactive after 7"))
    }

    @Test("after a step that acts or waits on purpose (sleep), expect-states reads up to now: a round during a sleep is counted (the control)")
    func expectStatesAfterASleepReadsToNow() throws {
        let context = try Self.captiveContext()
        context.onPause = Self.maintainRound
        let results = try Self.run("""
              - join: Cafe Lumiere
              - wait-state: Authenticated
              - sleep: 1
              - expect-states: [Evaluating, Authenticating, Authenticated]
            """, context)
        #expect(results.map(\.passed) == [true, true, true, false])
        #expect(results.last?.message.hasSuffix("expected the states Evaluating -> Authenticating -> Authenticated, actual "
                                                + "Evaluating -> Authenticating -> Authenticated -> Maintaining -> Authenticated") == true,
                "\(results.last?.message ?? "")")
        // The same round during a check that follows an acting step (leave) is counted too.
        let acted = try Self.captiveContext()
        acted.onApplication = Self.maintainRound
        let second = try Self.run("""
              - join: Cafe Lumiere
              - wait-state: Authenticated
              - auto-join
              - application: allowed
              - expect-states: [Evaluating, Authenticating, Authenticated, Maintaining, Authenticated]
            """, acted)
        #expect(second.allSatisfy { $0.passed }, "\(second.filter { !$0.passed }.map(\.message))")
    }

    @Test("every step kind either only looks (keeps expect-states' bound) or acts and waits (clears it); the lookers are expectations")
    func stepKindClasses() {
        let waits: Set<String> = ["wait-state", "wait-ipv6", "sleep"]
        for kind in StepRegistry.kinds {
            let replayed = kind.replay.replayed("x") != nil
            if ExpectStatesStep.checksOnly.contains(kind.name) {
                #expect(!replayed, "\(kind.name) keeps expect-states' bound but is replayed as an action")
            } else if !replayed {
                #expect(waits.contains(kind.name), "\(kind.name) is an expectation (not replayed): say whether it only looks (ExpectStatesStep.checksOnly)")
            }
        }
        #expect(ExpectStatesStep.checksOnly.isSubset(of: Set(StepRegistry.names)))
    }

    @Test("a failing expectation: the message names the step, file:line:column, expected and actual; the run stops there")
    func failureStops() throws {
        let context = try Self.captiveContext()
        let results = try Self.run("""
              - join: Cafe Lumiere
              - wait-state: Authenticated
              - expect-states: [Evaluating, Authenticated]
              - leave
            """, context)
        #expect(results.map(\.passed) == [true, true, false])
        #expect(results[2].message == "step 3 (topologies/scenarios/s.yaml:5:5) `expect-states: [Evaluating, Authenticated]`: "
                + "expected the states Evaluating -> Authenticated, actual Evaluating -> Authenticating -> Authenticated")
        #expect(!context.calls.contains("leave"), "no step runs after a failure")
    }

    /// A maintain round the timer ran before the DNS hijack step began, and the round the hijack caused.
    static let roundBefore: [JSON] = [
        FakeStepContext.transition("Authenticated", "Maintaining"),
        ["kind": "command", "id": 3, "commandType": "maintain", "helper": "com.hotspotlab.portal"],
        ["kind": "response", "command": 3, "result": "success"],
        FakeStepContext.transition("Maintaining", "Authenticated"),
    ]
    static let roundAfter: [JSON] = [
        FakeStepContext.transition("Authenticated", "Maintaining"),
        ["kind": "command", "id": 4, "commandType": "maintain", "helper": "com.hotspotlab.portal"],
        ["kind": "response", "command": 4, "result": "failure"],
        FakeStepContext.transition("Maintaining", "Evaluating"),
        FakeStepContext.transition("Evaluating", "Authenticated"),
    ]

    /// A lab whose trace holds each step's record, a maintain round before the `dns` step and the round it causes.
    static func roundsAroundTheHijack() throws -> FakeStepContext {
        let context = FakeStepContext(topology: try topology())
        context.traceSteps = true
        context.onJoin = captiveRecords + roundBefore
        context.onDNS = roundAfter
        return context
    }

    @Test("after: K: wait-state and expect-command look only past the record of the last K step (trace order)")
    func afterAnchors() throws {
        let context = try Self.roundsAroundTheHijack()
        let results = try Self.run("""
              - join: Cafe Lumiere
              - wait-state: Authenticated
              - dns: hijack
              - wait-state: {state: Maintaining, after: dns}
              - wait-state: Evaluating
              - expect-command: {command: maintain, result: failure, after: dns}
              - expect-command: {command: maintain, count: 1, after: dns}
            """, context)
        #expect(results.allSatisfy { $0.passed }, "\(results.filter { !$0.passed }.map(\.message))")
        // The join's record (line 0), its 8 records and the earlier round's 4, the wait's record (13), the dns step's
        // record (14): the wait starts after it, not at the earlier round's Maintaining (line 9).
        #expect(context.calls.contains("waitForTransition Maintaining after 15"), "\(context.calls)")
    }

    @Test("control for after: the same trace without after: sees the round before the action")
    func withoutAfterSeesTheRace() throws {
        let context = try Self.roundsAroundTheHijack()
        let results = try Self.run("""
              - join: Cafe Lumiere
              - wait-state: Authenticated
              - dns: hijack
              - expect-command: {command: maintain, result: failure, after: dns}
              - expect-command: {command: maintain, count: 2}
              - expect-command: {command: maintain, result: success, after: dns}
            """, context)
        #expect(results.map(\.passed) == [true, true, true, true, true, false], "\(results.map(\.message))")
        #expect(results.last?.message.hasSuffix("expected maintain answered success, actual failure") == true, "\(results.last?.message ?? "")")
    }

    @Test("after: a command in flight when the action began counts by its answer; a state entered before it does not")
    func afterCountsAnswersInFlight() throws {
        let context = FakeStepContext(topology: try Self.topology())
        context.traceSteps = true
        context.onJoin = Self.captiveRecords + [FakeStepContext.transition("Authenticated", "Maintaining"),
                                                ["kind": "command", "id": 3, "commandType": "maintain", "helper": "com.hotspotlab.portal"]]
        context.onDNS = [["kind": "response", "command": 3, "result": "failure"], FakeStepContext.transition("Maintaining", "Evaluating")]
        let results = try Self.run("""
              - join: Cafe Lumiere
              - wait-state: Maintaining
              - dns: hijack
              - wait-state: {state: Evaluating, after: dns}
              - expect-command: {command: maintain, result: failure, after: dns}
              - wait-state: {state: Maintaining, after: dns, timeout: 1}
            """, context)
        #expect(results.map(\.passed) == [true, true, true, true, true, false], "\(results.map(\.message))")
        #expect(results.last?.message.contains("timed out waiting for a transition to Maintaining") == true, "\(results.last?.message ?? "")")
    }

    @Test("after: names a step kind that came before: otherwise refused as file:line:column with the field")
    func afterNeedsAnEarlierStep() throws {
        #expect(throws: (any Error).self) { try ScenarioParser.parse("topology: ../captive.yaml\nsteps:\n  - join: Cafe Lumiere\n  - wait-state: {state: Maintaining, after: link}\n  - link: {latency-ms: 5}\n", file: "s.yaml") }
        do {
            _ = try ScenarioParser.parse("topology: ../captive.yaml\nsteps:\n  - join: Cafe Lumiere\n  - wait-state: {state: Maintaining, after: link}\n", file: "s.yaml")
        } catch {
            #expect("\(error)".contains("s.yaml:4:5") && "\(error)".contains("steps[1].wait-state.after") && "\(error)".contains("`after: link` names no earlier step"), "\(error)")
        }
        do {
            _ = try ScenarioParser.parse("topology: ../captive.yaml\nsteps:\n  - join: Cafe Lumiere\n  - expect-command: {command: maintain, after: lnk}\n", file: "s.yaml")
            Issue.record("an unknown step kind in after: was accepted")
        } catch {
            #expect("\(error)".contains("unknown step kind `lnk`"), "\(error)")
        }
    }

    @Test("expectations that do not hold: application, logoff, expect-command (absent, count, result), cache, auto-join, gate, scan list")
    func expectationsFail() throws {
        func failure(_ step: String, _ setup: (FakeStepContext) -> Void = { _ in }) throws -> String {
            let context = FakeStepContext(topology: try Self.topology())
            context.append(Self.captiveRecords)
            setup(context)
            let results = try Self.run("  - " + step + "\n", context)
            #expect(results.count == 1 && !results[0].passed, "\(step) passed")
            return results.first.map(\.message) ?? ""
        }
        let prefix = "step 1 (topologies/scenarios/s.yaml:3:5) "
        #expect(try failure("application: allowed") { $0.applicationAnswer = (nil, "curl: (28) timed out") }
                == prefix + "`application: allowed`: expected the application's GET http://198.18.0.1/ to be allowed, it was blocked (curl: (28) timed out) in state Authenticated")
        #expect(try failure("logoff: hotspot-helper-portal") { $0.logoffAnswer = false }
                == prefix + "`logoff: hotspot-helper-portal`: expected logoff to be accepted, it was refused (state Authenticated)")
        #expect(try failure("expect-command: {command: evaluate, absent: true}")
                == prefix + "`expect-command: {command: evaluate, absent: true}`: expected no evaluate command, 1 were sent")
        #expect(try failure("expect-command: {command: evaluate, count: 2}")
                == prefix + "`expect-command: {command: evaluate, count: 2}`: expected 2 evaluate commands since the start, 1 were sent")
        #expect(try failure("expect-command: {command: maintain}")
                == prefix + "`expect-command: {command: maintain}`: expected a maintain command, sent: evaluate, authenticate")
        #expect(try failure("expect-command: {command: evaluate, result: failure}")
                == prefix + "`expect-command: {command: evaluate, result: failure}`: expected evaluate answered failure, actual success")
        #expect(try failure("expect-cache: {ssid: Cafe Lumiere, helper: hotspot-helper-portal}")
                == prefix + "`expect-cache: {ssid: Cafe Lumiere, helper: hotspot-helper-portal}`: expected the cache entry for Cafe Lumiere to be com.hotspotlab.portal, actual none")
        #expect(try failure("expect-auto-join-disabled: Cafe Lumiere")
                == prefix + "`expect-auto-join-disabled: Cafe Lumiere`: expected auto-join disabled for Cafe Lumiere, it is enabled")
        #expect(try failure("gate: authenticated")
                == prefix + "`gate: authenticated`: expected the gate of cafe to hold the station 02:00:00:00:0a:00; its authenticated set: empty")
        #expect(try failure("show-scan-list: {expect: {Cafe Lumiere: null}}")
                == prefix + "`show-scan-list: {expect: {Cafe Lumiere: null}}`: expected Cafe Lumiere annotated with nothing, actual \"Portal Login\"")
        #expect(try failure("kill-helper: hotspot-helper-voucher")
                == prefix + "`kill-helper: hotspot-helper-voucher`: no helper hotspot-helper-voucher on station phone")
        #expect(try failure("ap: down") { $0.hostapdReplies = ["FAIL", "OK"] }
                == prefix + "`ap: down`: hostapd DISABLE answered FAIL")
        #expect(try failure("ap: down") { $0.hostapdReplies = [] }
                == prefix + "`ap: down`: hotspot cafe has no hostapd (veth mode)")
    }

    @Test("ap: every access point in turn; the first refusal stops it (the others are not asked)")
    func accessPoints() throws {
        let context = FakeStepContext(topology: try Self.topology())
        context.hostapdReplies = ["OK", "OK"]
        let both = try Self.run("  - ap: {state: down, hotspot: cafe}\n", context)
        #expect(both.map(\.message) == ["access points of cafe gone"])
        #expect(context.calls == ["hostapd cafe #0 DISABLE", "hostapd cafe #1 DISABLE"])
        let refusing = FakeStepContext(topology: try Self.topology())
        refusing.hostapdReplies = ["FAIL", "OK"]
        let refused = try Self.run("  - ap: {state: up, hotspot: cafe}\n", refusing)
        #expect(refused.map(\.passed) == [false])
        #expect(refusing.calls == ["hostapd cafe #0 ENABLE"])
    }

    @Test("the world's steps reach the lab with the hotspot resolved (named, else the associated one); helpers and flap")
    func worldSteps() throws {
        let context = FakeStepContext(topology: try Self.topology())
        context.statusValue = ["state": "Authenticated", "association": ["ssid": "Cafe Lumiere", "bssid": "02:00:00:00:01:00"]]
        context.onLeave = [FakeStepContext.transition("Authenticated", "Inactive")]
        context.onAutoJoin = [FakeStepContext.transition("Inactive", "Authenticated")]
        let results = try Self.run("""
              - expire-session
              - portal: {kind: click-through, hotspot: cafe, settings: {https-only: "true"}}
              - ap: {state: up, hotspot: cafe}
              - uplink: down
              - link: {side: radio, loss-percent: 10}
              - dns: {mode: hijack, hotspot: cafe}
              - kill-helper: hotspot-helper-portal
              - stop-helper: hotspot-helper-portal
              - continue-helper: com.hotspotlab.portal
              - type: {helper: hotspot-helper-portal, text: 1234}
              - restart-hotspotd: {helper-delay: 0.5}
              - flap: {count: 1, min-seconds: 0, max-seconds: 0}
            """, context)
        #expect(results.allSatisfy { $0.passed }, "\(results.filter { !$0.passed }.map(\.message))")
        #expect(results.map(\.message) == [
            "portal session of cafe expired (gate set flushed)", "portal of cafe is now click-through", "access point of cafe back",
            "uplink of cafe down", "netem on cafe", "DNS of cafe: hijack", "killed hotspot-helper-portal (pid 4242)",
            "hotspot-helper-portal stopped (hung)", "com.hotspotlab.portal continued", "typed into hotspot-helper-portal", "hotspotd restarted",
            "flapped 1 times (seed 1): away 0.0 s, back 0.0 s",
        ])
        #expect(context.calls == [
            "expire cafe", "portal cafe click-through [\"https-only\": \"true\"]", "hostapd cafe #0 ENABLE", "uplink cafe down",
            "link cafe radio 0 0 10.0 0", "dns cafe hijack", "kill hotspot-helper-portal", "signal \(SIGSTOP) to hotspot-helper-portal",
            "signal \(SIGCONT) to com.hotspotlab.portal", "type 1234 into hotspot-helper-portal", "restartHotspotd 0.5 seconds",
            "leave", "waitForState Inactive after 0", "pause 0.0", "autoJoin", "waitForState Authenticated after 1", "pause 0.0",
        ])
    }
}
