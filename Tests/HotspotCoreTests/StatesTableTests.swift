import HotspotCore
import Testing

/// docs/SPEC.md "States and transitions": one test per row of the states table.
@Suite("States and transitions")
struct StatesTableTests {
    @Test("Inactive: entered at start; clear best_helper and exclude_list; IP suppressed")
    func inactiveAtStart() {
        let machine = HotspotMachine()
        #expect(machine.state == .inactive)
        #expect(machine.bestHelper == nil && machine.excludeList.isEmpty)
        #expect(!machine.ipReleased && !machine.maintainTimerArmed && machine.pending.isEmpty)
    }

    @Test("Inactive: entered on no IP connectivity; clear best_helper and exclude_list; IP suppressed")
    func inactiveOnNoIP() {
        var d = Driver(helpers: [Fixture.a, Fixture.b, Fixture.c])
        d.toAuthenticating()
        d.answer(Fixture.a, .unsupportedNetwork)  // a excluded
        d.answer(Fixture.b, .success, confidence: .high)
        d.answer(Fixture.b, .success)
        #expect(d.state == .authenticated && d.machine.excludeList == [Fixture.a] && d.machine.ipReleased)
        d.step(.ipDown)
        #expect(d.last == [.cancelMaintainTimer, .transition(from: .authenticated, to: .inactive), .suppressIP])
        #expect(d.machine.bestHelper == nil && d.machine.excludeList.isEmpty && !d.machine.ipReleased)
    }

    @Test("Inactive: entered after Failure")
    func inactiveAfterFailure() {
        var d = Driver()
        d.toAuthenticating()
        d.answer(Fixture.a, .failure)
        #expect(d.last.transitions == [.failure, .inactive])
        #expect(d.state == .inactive && d.machine.bestHelper == nil && d.machine.excludeList.isEmpty)
    }

    @Test("Inactive: entered after LoggingOff")
    func inactiveAfterLoggingOff() {
        var d = Driver()
        d.toLoggingOff()
        d.answer(Fixture.a, .success)
        #expect(d.last.transitions == [.inactive])
        #expect(d.state == .inactive && d.machine.bestHelper == nil && !d.machine.ipReleased)
    }

    @Test("Evaluating: entered when IP up and no cache entry names a helper; send evaluate to each helper not excluded; IP suppressed")
    func evaluatingOnIPUp() {
        var d = Driver(helpers: [Fixture.a, Fixture.b, Fixture.c])
        d.step(.associated(Fixture.coffee))
        #expect(d.last.isEmpty && d.state == .inactive)
        d.step(.ipUp)
        #expect(d.last.first == .transition(from: .inactive, to: .evaluating))
        #expect(d.sent(.evaluate).map(\.helper) == [Fixture.a, Fixture.b, Fixture.c])
        #expect(!d.machine.ipReleased)
        #expect(d.sent(.evaluate).allSatisfy { $0.network?.ssid == "CoffeeShop" && $0.network?.bssid == Fixture.coffee.bssid })
    }

    @Test("Evaluating: entered when IP up on a network cached as not captive")
    func evaluatingWhenCachedNotCaptive() {
        var d = Driver(cache: [Fixture.coffee.identity: .notCaptive])
        d.join()
        #expect(d.state == .evaluating && d.sent(.evaluate).count == 2)
    }

    @Test("Authenticating: entered when a helper claimed the network; send authenticate to best_helper; IP suppressed")
    func authenticatingOnClaim() {
        var d = Driver()
        d.toEvaluating()
        d.answer(Fixture.b, .success, confidence: .high)
        #expect(d.last.transitions == [.authenticating])
        #expect(d.the(.authenticate).helper == Fixture.b)
        #expect(!d.machine.ipReleased)
    }

    @Test("PresentingUI: entered when authenticate returned uiRequired; presentUI sent when the user brings best_helper to the foreground")
    func presentingUI() {
        var d = Driver()
        d.toPresentingUI()
        #expect(d.last.transitions == [.presentingUI])
        #expect(d.sent.isEmpty && !d.machine.ipReleased)
        d.step(.foreground(Fixture.a))
        #expect(d.the(.presentUI).helper == Fixture.a)
    }

    @Test("PresentingUI: presentUI sent at once when best_helper is already in the foreground")
    func presentingUIAlreadyForeground() {
        var d = Driver()
        d.toAuthenticating()
        d.step(.foreground(Fixture.a))
        d.answer(Fixture.a, .uiRequired)
        #expect(d.state == .presentingUI)
        #expect(d.the(.presentUI).helper == Fixture.a)
    }

    @Test("Authenticated: entered when authenticated; IP no longer suppressed; maintain timer 300 s")
    func authenticatedWhenAuthenticated() {
        var d = Driver()
        d.toAuthenticating()
        d.answer(Fixture.a, .success)
        #expect(d.last == [
            .transition(from: .authenticating, to: .authenticated), .releaseIP, .armMaintainTimer(.seconds(300)),
        ])
        #expect(d.machine.ipReleased && d.machine.maintainTimerArmed)
    }

    @Test("Authenticated: entered when no helper claimed the network; IP no longer suppressed")
    func authenticatedWhenNotCaptive() {
        var d = Driver()
        d.toEvaluating()
        d.answer(Fixture.a, .success, confidence: .none)
        d.answer(Fixture.b, .success, confidence: .none)
        #expect(d.state == .authenticated && d.machine.ipReleased)
        #expect(d.last.contains(.releaseIP))
    }

    @Test("Maintaining: entered when the maintain timer fired; send maintain to best_helper, didJustJoin false")
    func maintainingOnTimer() {
        var d = Driver()
        d.toAuthenticated()
        d.step(.maintainTimerFired)
        #expect(d.last.transitions == [.maintaining])
        let command = d.the(.maintain)
        #expect(command.helper == Fixture.a && command.network?.didJustJoin == false)
        // A second firing with the timer no longer armed does nothing.
        let before = d.machine
        d.step(.maintainTimerFired)
        #expect(d.last.isEmpty && d.machine == before)
    }

    @Test("Maintaining: entered when IP up and a cache entry names a helper; send maintain with didJustJoin true")
    func maintainingOnCachedJoin() {
        var d = Driver(cache: [Fixture.coffee.identity: .helper(Fixture.b)])
        d.join()
        #expect(d.last.transitions == [.maintaining])
        let command = d.the(.maintain)
        #expect(command.helper == Fixture.b && command.network?.didJustJoin == true && command.network?.isChosenHelper == true)
        #expect(d.sent(.evaluate).isEmpty && !d.machine.ipReleased)
    }

    @Test("LoggingOff: entered when best_helper called logoff(network) successfully; send logoff")
    func loggingOff() {
        var d = Driver()
        d.toAuthenticated()
        d.step(.foreground(Fixture.a))
        d.step(.logoffRequested(Fixture.a, network: Fixture.coffee.identity))
        #expect(d.last.first == .logoffAnswer(Fixture.a, accepted: true))
        #expect(d.last.transitions == [.loggingOff])
        #expect(d.the(.logoff).helper == Fixture.a)
    }

    @Test("Failure: entered on an unrecoverable result; disassociate; go to Inactive")
    func failure() {
        var d = Driver()
        d.toAuthenticating()
        d.answer(Fixture.a, .temporaryFailure)
        let failureAt = d.last.firstIndex(of: .transition(from: .authenticating, to: .failure))
        let disassociateAt = d.last.firstIndex(of: .disassociate)
        let inactiveAt = d.last.firstIndex(of: .transition(from: .failure, to: .inactive))
        #expect(failureAt != nil && disassociateAt != nil && inactiveAt != nil)
        if let failureAt, let disassociateAt, let inactiveAt {
            #expect(failureAt < disassociateAt && disassociateAt < inactiveAt)
        }
        #expect(d.state == .inactive && d.machine.association == nil)
        // Associated no more: IP up does nothing until the driver associates again.
        d.step(.ipUp)
        #expect(d.last.isEmpty && d.state == .inactive)
    }
}

/// docs/SPEC.md "Evaluating".
@Suite("Evaluating")
struct EvaluatingTests {
    @Test("Evaluating: the first helper to answer with high confidence becomes best_helper at once; other answers are ignored")
    func firstHighWinsAtOnce() {
        var d = Driver(helpers: [Fixture.a, Fixture.b, Fixture.c])
        d.toEvaluating()
        let c = d.outstanding(Fixture.c)
        d.answer(Fixture.a, .success, confidence: .low)  // earlier answer: ignored
        #expect(d.state == .evaluating)
        d.answer(Fixture.b, .success, confidence: .high)
        #expect(d.state == .authenticating && d.machine.bestHelper == Fixture.b)
        #expect(d.last.cancelled == [c.id])  // the helper that had not answered is let go
        d.answer(c, .success, confidence: .high)  // later answer: ignored (rejected as withdrawn)
        #expect(d.state == .authenticating && d.machine.bestHelper == Fixture.b)
        #expect(d.last.rejections == [.withdrawnCommand(c.id, from: Fixture.c)])
    }

    @Test("Evaluating: otherwise, when every helper answered, the highest confidence wins")
    func highestWhenAllAnswered() {
        var d = Driver(helpers: [Fixture.a, Fixture.b, Fixture.c])
        d.toEvaluating()
        d.answer(Fixture.a, .success, confidence: .none)
        d.answer(Fixture.b, .success, confidence: .low)
        #expect(d.state == .evaluating)
        d.answer(Fixture.c, .success, confidence: .none)
        #expect(d.state == .authenticating && d.machine.bestHelper == Fixture.b)
    }

    @Test("Evaluating: otherwise, when the deadline passed, the highest confidence wins")
    func highestAtDeadline() {
        var d = Driver(helpers: [Fixture.a, Fixture.b, Fixture.c])
        d.toEvaluating()
        let commands = d.sent(.evaluate)
        d.answer(Fixture.b, .success, confidence: .low)
        d.step(.deadlinePassed(commands[0].id))
        #expect(d.state == .evaluating)
        d.step(.deadlinePassed(commands[2].id))
        #expect(d.state == .authenticating && d.machine.bestHelper == Fixture.b)
    }

    @Test("Evaluating: among equals, the first to answer wins")
    func tiesToFirstAnswer() {
        var d = Driver(helpers: [Fixture.a, Fixture.b, Fixture.c])
        d.toEvaluating()
        d.answer(Fixture.c, .success, confidence: .low)
        d.answer(Fixture.a, .success, confidence: .low)
        d.answer(Fixture.b, .success, confidence: .none)
        #expect(d.state == .authenticating && d.machine.bestHelper == Fixture.c)
    }

    @Test("Evaluating: no helper with low or high: go to Authenticated, cache \"not captive\"")
    func noHelperClaims() {
        var d = Driver()
        d.toEvaluating()
        d.answer(Fixture.a, .success, confidence: .none)
        d.answer(Fixture.b, .success)  // no network in the answer: confidence none
        #expect(d.last.contains(.cache(Fixture.coffee.identity, .notCaptive)))
        #expect(d.state == .authenticated && d.machine.cache[Fixture.coffee.identity] == .notCaptive)
        #expect(d.machine.bestHelper == nil && !d.machine.maintainTimerArmed)
        #expect(d.machine.supportedNetworkInterfaces(for: Fixture.a).first?.isChosenHelper == false)
    }

    @Test("Evaluating: no helper registered: go to Authenticated, cache \"not captive\"")
    func noHelperRegistered() {
        var d = Driver(helpers: [])
        d.join()
        #expect(d.last.transitions == [.evaluating, .authenticated])
        #expect(d.last.contains(.cache(Fixture.coffee.identity, .notCaptive)) && d.machine.ipReleased)
    }

    @Test("Evaluating: a helper is chosen: cache it for this network, go to Authenticating")
    func helperChosen() {
        var d = Driver()
        d.toEvaluating()
        d.answer(Fixture.a, .success, confidence: .low)
        d.answer(Fixture.b, .success, confidence: .none)
        let cacheAt = d.last.firstIndex(of: .cache(Fixture.coffee.identity, .helper(Fixture.a)))
        let transitionAt = d.last.firstIndex(of: .transition(from: .evaluating, to: .authenticating))
        #expect(cacheAt != nil && transitionAt != nil)
        #expect(d.machine.cache[Fixture.coffee.identity] == .helper(Fixture.a))
    }

    @Test("Evaluating: an answer about another network counts as confidence none and is reported")
    func wrongNetwork() {
        var d = Driver()
        d.toEvaluating()
        let command = d.outstanding(Fixture.a)
        var other = Fixture.airport
        other.confidence = .high
        d.step(.response(Response(helper: Fixture.a, command: command.id, result: .success, network: other)))
        #expect(d.last.irregularities == [.wrongNetwork(command.id, ssid: "Airport", from: Fixture.a)])
        #expect(d.state == .evaluating)
    }

    @Test("Evaluating: a helper that goes away counts as no answer at once")
    func helperGone() {
        var d = Driver()
        d.toEvaluating()
        let b = d.outstanding(Fixture.b)
        d.answer(Fixture.a, .success, confidence: .low)
        d.step(.helperGone(Fixture.b))
        #expect(d.last.irregularities == [.noAnswer(b.id, .evaluate, from: Fixture.b)])
        #expect(d.state == .authenticating && d.machine.bestHelper == Fixture.a)
    }
}
