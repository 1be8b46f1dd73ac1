import Testing
@testable import LabCertify

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
        #expect(script.notes == ["logoff(network) refused in state Maintaining (ask 1 of 3)"])
    }

    @Test("refused during the re-login a maintain started (Authenticating) or a re-evaluation: asked again once Authenticated",
          arguments: ["Authenticating", "Evaluating"])
    func refusedWhileSettling(_ state: String) throws {
        let script = Script(answers: [false, true], states: [state], settled: ["Authenticated"])
        #expect(try script.run())
        #expect(script.asks == 2 && script.settles == 1)
        #expect(script.notes == ["logoff(network) refused in state \(state) (ask 1 of 3)"])
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
        #expect(script.notes == ["logoff(network) refused in state Authenticated (ask 1 of 3)"])
    }

    @Test("the maintain ends in Inactive: no second ask")
    func maintainEndsInactive() throws {
        let script = Script(answers: [false], states: ["Maintaining"], settled: ["Inactive"])
        #expect(try !script.run())
        #expect(script.asks == 1 && script.settles == 1)
    }

    @Test("refused during three maintains in a row: three asks, then given up with each refusal explained")
    func atMostThreeAsks() throws {
        let script = Script(answers: [false, false, false, true], states: ["Maintaining", "Maintaining", "Maintaining"],
                            settled: ["Authenticated", "Authenticated"])
        #expect(try !script.run())
        #expect(script.asks == 3 && script.settles == 2)
        #expect(script.notes.last == "logoff(network) refused in state Maintaining (ask 3 of 3)")
    }
}
