import HotspotCore
import Testing

/// How a test delivers a command's outcome.
enum Delivery: Sendable, CustomTestStringConvertible {
    case result(HelperResult)
    /// The deadline passed without an answer.
    case noAnswer
    /// The helper process went away.
    case helperGone

    var testDescription: String {
        switch self {
        case .result(let r): "\(r)"
        case .noAnswer: "no answer"
        case .helperGone: "helper gone"
        }
    }
}

extension Driver {
    mutating func deliver(_ delivery: Delivery, to helper: HelperID) {
        let command = outstanding(helper)
        switch delivery {
        case .result(let r): answer(command, r)
        case .noAnswer: step(.deadlinePassed(command.id))
        case .helperGone: step(.helperGone(helper))
        }
    }
}

/// docs/SPEC.md "Authenticating (authenticate) and PresentingUI (presentUI)": each row, for both commands.
@Suite("Authenticating and PresentingUI")
struct AuthenticatingTests {
    enum Phase: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case authenticating = "Authenticating"
        case presentingUI = "PresentingUI"
        var testDescription: String { rawValue }
    }

    static func driver(_ phase: Phase) -> Driver {
        var d = Driver()
        if phase == .authenticating { d.toAuthenticating() } else { d.toPresentingUISent() }
        return d
    }

    @Test("success -> Authenticated, cache best_helper", arguments: Phase.allCases)
    func success(_ phase: Phase) {
        var d = Self.driver(phase)
        d.answer(Fixture.a, .success)
        #expect(d.last.transitions == [.authenticated])
        #expect(d.state == .authenticated && d.machine.ipReleased)
        #expect(d.machine.cache[Fixture.coffee.identity] == .helper(Fixture.a))
        #expect(d.last.contains(.releaseIP))
    }

    @Test("success after a cached join that needed authenticating again keeps best_helper cached", arguments: Phase.allCases)
    func successRecaches(_ phase: Phase) {
        var d = Driver(cache: [Fixture.coffee.identity: .helper(Fixture.a)])
        d.join()
        d.answer(Fixture.a, .authenticationRequired)
        #expect(d.state == .authenticating)
        if phase == .presentingUI {
            d.step(.foreground(Fixture.a))
            d.answer(Fixture.a, .uiRequired)
            #expect(d.the(.presentUI).helper == Fixture.a)
        }
        d.answer(Fixture.a, .success)
        #expect(d.state == .authenticated && d.machine.cache[Fixture.coffee.identity] == .helper(Fixture.a))
    }

    @Test("Authenticating: uiRequired -> PresentingUI")
    func uiRequired() {
        var d = Self.driver(.authenticating)
        d.answer(Fixture.a, .uiRequired)
        #expect(d.last.transitions == [.presentingUI])
        #expect(d.state == .presentingUI && !d.machine.ipReleased)
    }

    @Test("PresentingUI: uiRequired is not valid for presentUI -> Failure, auto-join disabled")
    func uiRequiredFromPresentUI() {
        var d = Self.driver(.presentingUI)
        d.answer(Fixture.a, .uiRequired)
        #expect(d.last.transitions == [.failure, .inactive])
        #expect(d.last.contains(.disableAutoJoin(Fixture.coffee.identity)))
    }

    @Test("unsupportedNetwork -> Evaluating, add best_helper to exclude_list, drop its cache entry", arguments: Phase.allCases)
    func unsupportedNetwork(_ phase: Phase) {
        var d = Self.driver(phase)
        #expect(d.machine.cache[Fixture.coffee.identity] == .helper(Fixture.a))
        d.answer(Fixture.a, .unsupportedNetwork)
        #expect(d.state == .evaluating)
        #expect(d.machine.excludeList == [Fixture.a] && d.machine.bestHelper == nil)
        #expect(d.machine.cache[Fixture.coffee.identity] == nil && d.last.contains(.uncache(Fixture.coffee.identity)))
        #expect(d.sent(.evaluate).map(\.helper) == [Fixture.b])
        #expect(!d.machine.ipReleased)
        // Excluded for the whole association: b declines too, and nobody is left.
        d.answer(Fixture.b, .success, confidence: .none)
        #expect(d.state == .authenticated && d.machine.excludeList == [Fixture.a])
    }

    @Test("temporaryFailure -> Failure, auto-join unchanged", arguments: Phase.allCases)
    func temporaryFailure(_ phase: Phase) {
        var d = Self.driver(phase)
        d.answer(Fixture.a, .temporaryFailure)
        #expect(d.last.transitions == [.failure, .inactive])
        #expect(d.last.contains(.disassociate))
        #expect(!d.last.contains(.disableAutoJoin(Fixture.coffee.identity)))
        #expect(d.machine.autoJoinDisabled.isEmpty)
    }

    @Test("failure, anything else, no answer -> Failure, auto-join disabled for this network",
          arguments: Phase.allCases,
          [Delivery.result(.failure), .result(.commandNotRecognized), .result(.authenticationRequired), .noAnswer, .helperGone])
    func failure(_ phase: Phase, _ delivery: Delivery) {
        var d = Self.driver(phase)
        d.deliver(delivery, to: Fixture.a)
        #expect(d.last.transitions == [.failure, .inactive])
        #expect(d.last.contains(.disassociate))
        #expect(d.last.contains(.disableAutoJoin(Fixture.coffee.identity)))
        #expect(d.machine.autoJoinDisabled == [Fixture.coffee.identity])
        #expect(d.state == .inactive && d.machine.association == nil)
    }

    @Test("auto-join disabled by a failure is enabled again when the user joins by hand")
    func autoJoinEnabledByHand() {
        var d = Driver(autoJoinDisabled: [Fixture.coffee.identity])
        d.step(.associated(Fixture.coffee))  // didAutoJoin true: stays disabled
        #expect(d.last.isEmpty && d.machine.autoJoinDisabled == [Fixture.coffee.identity])
        var byHand = Fixture.coffee
        byHand.didAutoJoin = false
        d.step(.associated(byHand))
        #expect(d.last == [.enableAutoJoin(Fixture.coffee.identity)] && d.machine.autoJoinDisabled.isEmpty)
    }
}

/// docs/SPEC.md "Maintaining (maintain)".
@Suite("Maintaining")
struct MaintainingTests {
    @Test("Maintaining: success -> Authenticated, re-arm the 300 s timer")
    func success() {
        var d = Driver()
        d.toMaintaining()
        #expect(d.machine.ipReleased)  // entered from Authenticated: IP stays released (decided)
        d.answer(Fixture.a, .success)
        #expect(d.last == [.transition(from: .maintaining, to: .authenticated), .armMaintainTimer(.seconds(300))])
        #expect(d.machine.maintainTimerArmed && d.machine.ipReleased)
    }

    @Test("Maintaining: authenticationRequired -> Authenticating, IP suppressed until Authenticated again")
    func authenticationRequired() {
        var d = Driver()
        d.toMaintaining()
        d.answer(Fixture.a, .authenticationRequired)
        #expect(d.last.transitions == [.authenticating])
        #expect(d.last.contains(.suppressIP) && !d.machine.ipReleased)
        #expect(d.the(.authenticate).helper == Fixture.a)
        d.answer(Fixture.a, .success)
        #expect(d.last.contains(.releaseIP) && d.machine.ipReleased)
    }

    @Test("Maintaining: anything else, no answer -> Evaluating, IP suppressed again",
          arguments: [Delivery.result(.failure), .result(.temporaryFailure), .result(.unsupportedNetwork), .result(.uiRequired),
                      .result(.commandNotRecognized), .noAnswer, .helperGone])
    func anythingElse(_ delivery: Delivery) {
        var d = Driver()
        d.toMaintaining()
        d.deliver(delivery, to: Fixture.a)
        #expect(d.last.transitions == [.evaluating])
        #expect(d.last.contains(.suppressIP) && !d.machine.ipReleased)
        #expect(!d.last.contains(.disassociate) && d.machine.association != nil)
        #expect(d.machine.bestHelper == nil)
        #expect(!d.sent(.evaluate).isEmpty)
    }
}

/// docs/SPEC.md "LoggingOff" and "Any state".
@Suite("LoggingOff and any state")
struct LoggingOffTests {
    @Test("LoggingOff: on the helper's answer, or 45 s without one, disassociate and go to Inactive",
          arguments: [Delivery.result(.success), .result(.failure), .result(.uiRequired), .noAnswer, .helperGone])
    func loggingOffEnds(_ delivery: Delivery) {
        var d = Driver()
        d.toLoggingOff()
        #expect(!d.machine.ipReleased)
        d.deliver(delivery, to: Fixture.a)
        #expect(d.last.transitions == [.inactive])
        #expect(d.last.contains(.disassociate))
        #expect(d.state == .inactive && d.machine.association == nil && d.machine.bestHelper == nil)
        #expect(!d.last.contains(.disableAutoJoin(Fixture.coffee.identity)))
    }

    enum Loss: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case ipDown = "IP connectivity"
        case disassociated = "association"
        case roamed = "association (joined another network)"
        var testDescription: String { rawValue }
    }

    @Test("Any state: losing IP connectivity or association goes to Inactive",
          arguments: restingStates.filter { $0 != .inactive }, Loss.allCases)
    func anyStateLoss(_ state: HotspotState, _ loss: Loss) {
        var d = Driver()
        d.to(state)
        #expect(d.state == state)
        let outstanding = d.machine.pending.map(\.id)
        switch loss {
        case .ipDown: d.step(.ipDown)
        case .disassociated: d.step(.disassociated)
        case .roamed: d.step(.associated(Fixture.airport))
        }
        #expect(d.last.transitions == [.inactive])
        #expect(d.state == .inactive && d.machine.bestHelper == nil && d.machine.excludeList.isEmpty)
        #expect(!d.machine.ipReleased && !d.machine.maintainTimerArmed && d.machine.pending.isEmpty)
        #expect(d.last.cancelled == outstanding)  // every outstanding command withdrawn
        if state == .authenticated { #expect(d.last.contains(.cancelMaintainTimer)) }
        #expect(!d.last.contains(.disassociate))
    }

    @Test("Any state: IP up again after the loss starts over")
    func ipBack() {
        var d = Driver()
        d.toAuthenticated()
        d.step(.ipDown)
        d.step(.ipUp)
        // a is cached for the network by now: the cached sequence.
        #expect(d.state == .maintaining && d.the(.maintain).network?.didJustJoin == true)
    }
}
