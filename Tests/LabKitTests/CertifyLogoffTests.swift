import Testing
@testable import LabCertify
@testable import LabScenarioModel
@testable import LabScenarios

/// certify's logoff(network) on the captive run (issue 25, "a refused logoff is explained, or the run waits for the
/// state that allows it"), driven by a scripted station: iOS allows the logoff only in Authenticated, so a refusal met
/// while hotspotd had the network in a state it leaves on its own (a maintain, the re-login it started, a
/// re-evaluation) is asked again once it settles; any other refusal is the helper's and is only explained.
@Suite("certify: logoff(network) asked when iOS allows it")
struct CertifyLogoffTests {
    /// A station whose answers to logoff, status and the wait for the maintain to settle are scripted, in order.
    final class Script {
        var answers: [Bool]
        var states: [String]
        var settled: [String?]
        var asks = 0, settles = 0
        var notes: [String] = []

        init(answers: [Bool], states: [String] = [], settled: [String?] = []) {
            self.answers = answers
            self.states = states
            self.settled = settled
        }

        func run() throws -> Bool {
            try RunDriver.logoffWhenAllowed(
                ask: { asks += 1; return answers.removeFirst() },
                state: { states.removeFirst() },
                settle: { settles += 1; return settled.removeFirst() },
                note: { notes.append($0) })
        }
    }

    @Test("accepted at once: one ask, no note, no wait")
    func acceptedAtOnce() throws {
        let script = Script(answers: [true])
        #expect(try script.run())
        #expect(script.asks == 1 && script.settles == 0 && script.notes.isEmpty)
    }

    @Test("refused during a maintain: explained, asked again once Authenticated, accepted")
    func refusedWhileMaintaining() throws {
        let script = Script(answers: [false, true], states: ["Maintaining"], settled: ["Authenticated"])
        #expect(try script.run())
        #expect(script.asks == 2 && script.settles == 1)
        #expect(script.notes == ["logoff(network) refused in state Maintaining (ask 1 of 5)"])
    }

    @Test("refused during the re-login a maintain started (Authenticating) or a re-evaluation: asked again once Authenticated",
          arguments: ["Authenticating", "Evaluating"])
    func refusedWhileSettling(_ state: String) throws {
        let script = Script(answers: [false, true], states: [state], settled: ["Authenticated"])
        #expect(try script.run())
        #expect(script.asks == 2 && script.settles == 1)
        #expect(script.notes == ["logoff(network) refused in state \(state) (ask 1 of 5)"])
    }

    @Test("refused in PresentingUI (waiting for the user, not for hotspotd): explained, not asked again")
    func refusedWhilePresentingUI() throws {
        let script = Script(answers: [false], states: ["PresentingUI"])
        #expect(try !script.run())
        #expect(script.asks == 1 && script.settles == 0)
    }

    @Test("refused in Authenticated (the helper's doing, not the timing's): explained, not asked again")
    func refusedInAuthenticated() throws {
        let script = Script(answers: [false], states: ["Authenticated"])
        #expect(try !script.run())
        #expect(script.asks == 1 && script.settles == 0)
        #expect(script.notes == ["logoff(network) refused in state Authenticated (ask 1 of 5)"])
    }

    @Test("the maintain ends in Inactive: no second ask")
    func maintainEndsInactive() throws {
        let script = Script(answers: [false], states: ["Maintaining"], settled: ["Inactive"])
        #expect(try !script.run())
        #expect(script.asks == 1 && script.settles == 1)
    }

    @Test("refused during five maintains in a row: five asks, then given up with each refusal explained")
    func atMostFiveAsks() throws {
        let script = Script(answers: [false, false, false, false, false, true],
                            states: ["Maintaining", "Authenticating", "Maintaining", "Maintaining", "Maintaining"],
                            settled: ["Authenticated", "Authenticated", "Authenticated", "Authenticated"])
        #expect(try !script.run())
        #expect(script.asks == 5 && script.settles == 4)
        #expect(script.notes.last == "logoff(network) refused in state Maintaining (ask 5 of 5)")
    }

    @Test("refused during four maintains, accepted at the fifth ask (CI run 23 gave up after three)")
    func acceptedAtTheFifthAsk() throws {
        let script = Script(answers: [false, false, false, false, true], states: ["Maintaining", "Maintaining", "Maintaining", "Maintaining"],
                            settled: ["Authenticated", "Authenticated", "Authenticated", "Authenticated"])
        #expect(try script.run())
        #expect(script.asks == 5 && script.settles == 4)
    }
}

/// The gate's members as `GateInspector` spells them from the keys of a GETSETELEM dump (the dump itself:
/// NFTablesMessageTests and NFTablesRootTests).
@Suite struct GateMemberTests {
    @Test func macIPv4KeyAsNftPrintsIt() {
        // 02:00:00:00:0a:00, 2 bytes of padding, 198.51.100.14
        let key: [UInt8] = [0x02, 0, 0, 0, 0x0a, 0, 0, 0, 198, 51, 100, 14]
        #expect(GateInspector.member(macIPv4: key) == "02:00:00:00:0a:00 . 198.51.100.14")
        // Another shape (a MAC alone, an IPv6 concatenation) is not read as a MAC . IPv4 member.
        #expect(GateInspector.member(macIPv4: Array(key[0..<6])) == nil)
        #expect(GateInspector.member(macIPv4: key + [0, 0, 0, 0]) == nil)
    }
}
