import Foundation
import HotspotProtocol
import Testing
@testable import LabKit
@testable import LabScenarioModel
@testable import LabScenarios

/// `expect-provider` against a fake lab: each event read from hotspotd's provider records, the filters (role,
/// reason, exit status), `count`, `absent`, and the wait for an event not traced yet (polled with the context's pause).
@Suite struct ExpectProviderStepTests {
    static let records: [JSON] = [
        ["kind": "providerLaunched", "app": "com.x", "role": "evaluationProvider", "pid": 10, "identifier": "com.x.evaluation"],
        ["kind": "providerStarted", "app": "com.x", "role": "evaluationProvider", "ok": true, "latencyMs": 42],
        ["kind": "helperReport", "helper": "com.x", "app": "com.x", "report": "networkFromEvaluationProvider", "message": "tried GET"],
        ["kind": "providerLaunched", "app": "com.x", "role": "authenticationProvider", "pid": 11, "identifier": "com.x.authentication"],
        ["kind": "providerStarted", "app": "com.x", "role": "authenticationProvider", "ok": false, "latencyMs": 5],
        ["kind": "providerStopped", "app": "com.x", "role": "evaluationProvider", "reason": "noNetworkAvailable"],
        ["kind": "providerExited", "app": "com.x", "role": "evaluationProvider", "pid": 10, "status": 0, "signal": .null],
        ["kind": "providerExited", "app": "com.x", "role": "authenticationProvider", "pid": 11, "status": 9, "signal": .null],
        ["kind": "providerNoAnswer", "app": "com.x", "role": "authenticationProvider", "commands": [2], "cause": "exited"],
    ]

    func run(_ step: String, records: [JSON] = Self.records) throws -> (StepResult, FakeStepContext) {
        let context = FakeStepContext(topology: try ScenarioRunnerTests.topology())
        context.append(records)
        let results = try ScenarioRunnerTests.run("  - " + step + "\n", context)
        return (try #require(results.first), context)
    }

    @Test func eventsThatHold() throws {
        for step in [
            "expect-provider: {app: com.x, event: launched, count: 2}",
            "expect-provider: {app: com.x, role: evaluation, event: started}",
            "expect-provider: {app: com.x, role: evaluation, event: network-attempt}",
            "expect-provider: {app: com.x, event: stopped, reason: noNetworkAvailable}",
            "expect-provider: {app: com.x, role: evaluation, event: exited, exit-status: 0}",
            "expect-provider: {app: com.x, role: authentication, event: crashed}",
            "expect-provider: {app: com.x, role: authentication, event: no-answer}",
            "expect-provider: {app: com.y, event: launched, absent: true}",
        ] {
            let (result, _) = try run(step)
            #expect(result.passed, "\(step): \(result.message)")
        }
        #expect(try run("expect-provider: {app: com.x, role: evaluation, event: started}").0.message
                == "started of the evaluation provider of com.x (42 ms from launch)")
    }

    @Test func eventsThatDoNotHold() throws {
        let prefix = "step 1 (topologies/scenarios/s.yaml:3:5) "
        func failure(_ step: String) throws -> String {
            let (result, _) = try run(step)
            #expect(!result.passed, "\(step) passed")
            return result.message.hasPrefix(prefix + "`\(step)`: ") ? String(result.message.dropFirst(prefix.count + step.count + 4)) : result.message
        }
        // started false is not started; the evaluation provider did not crash; a stop with another reason.
        #expect(try failure("expect-provider: {app: com.x, role: authentication, event: started, timeout: 0}").hasPrefix(
            "expected started of the authentication provider of com.x, traced for com.x: providerLaunched evaluationProvider, providerStarted evaluationProvider"))
        #expect(try failure("expect-provider: {app: com.x, role: evaluation, event: crashed, timeout: 0}").hasPrefix("expected crashed of the evaluation provider of com.x"))
        #expect(try failure("expect-provider: {app: com.x, event: stopped, reason: idleTimeout, timeout: 0}").hasPrefix("expected stopped (idleTimeout) of com.x"))
        #expect(try failure("expect-provider: {app: com.x, event: launched, absent: true}") == "expected no launched of com.x, 2 traced")
        #expect(try failure("expect-provider: {app: com.x, event: launched, count: 3, timeout: 0}") == "expected 3 launched of com.x, 2 traced")
        #expect(try failure("expect-provider: {app: com.y, event: launched, timeout: 0}") == "expected launched of com.y, traced for com.y: nothing")
    }

    /// A positive expectation waits for its event (the context's pause between reads), then gives up at the timeout.
    @Test func waitsForTheEvent() throws {
        let (result, context) = try run("expect-provider: {app: com.x, event: launched, timeout: 0.05}", records: [])
        #expect(!result.passed)
        #expect(context.calls.filter { $0.hasPrefix("pause") }.count >= 1)
    }

    @Test func parseErrors() throws {
        for (step, message) in [
            ("expect-provider: {app: com.x, event: paused}", "unknown event `paused`; expected one of: launched, started, stopped, exited, crashed, no-answer, network-attempt"),
            ("expect-provider: {app: com.x, event: started, reason: idleTimeout}", "`reason` applies to the stopped event, not started"),
            ("expect-provider: {app: com.x, event: stopped, reason: bored}", "unknown stop reason `bored`"),
            ("expect-provider: {app: com.x, event: launched, role: helper}", "unknown role `helper`; expected one of: evaluation, authentication"),
        ] {
            #expect {
                _ = try ScenarioParser.parse("topology: ../captive.yaml\nsteps:\n  - \(step)\n", file: "s.yaml")
            } throws: { error in
                "\(error)".contains(message)
            }
        }
    }
}
