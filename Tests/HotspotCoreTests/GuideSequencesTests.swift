import HotspotCore
import Testing

/// The four typical sequences of Apple's guide ("Authentication State Machine"), as event scripts.
/// Every step asserts the state after it and every effect it produced, in order.
@Suite("The guide's sequences")
struct GuideSequencesTests {
    let net = Fixture.coffee
    var id: NetworkIdentity { net.identity }

    /// The command the machine is expected to send: ids count up from 1 in the order commands are made.
    func command(_ id: CommandID, _ type: CommandType, _ helper: HelperID, justJoined: Bool = false) -> Command {
        var network = net
        network.isChosenHelper = type != .evaluate
        network.didJustJoin = justJoined
        return Command(id: id, type: type, helper: helper, network: network, deadline: Timing.standard.deadline(for: type))
    }

    func respond(_ command: Command, _ result: HelperResult, _ confidence: Confidence = .none) -> Event {
        var network = command.network
        network?.confidence = confidence
        return .response(Response(helper: command.helper, command: command.id, result: result, network: network))
    }

    /// Runs the script, checking each step's state and effects.
    func run(_ machine: inout HotspotMachine, _ script: [(event: Event, state: HotspotState, effects: [Effect])],
             sourceLocation: SourceLocation = #_sourceLocation) {
        for (n, step) in script.enumerated() {
            let effects = machine.handle(step.event)
            #expect(machine.state == step.state, "step \(n + 1): \(step.event)", sourceLocation: sourceLocation)
            #expect(effects == step.effects, "step \(n + 1): \(step.event)", sourceLocation: sourceLocation)
        }
    }

    func registered(_ cache: [NetworkIdentity: CacheEntry] = [:]) -> HotspotMachine {
        var machine = HotspotMachine(cache: cache)
        _ = machine.handle(.helperRegistered(Fixture.a, displayName: "Alpha"))
        _ = machine.handle(.helperRegistered(Fixture.b, displayName: "Beta"))
        return machine
    }

    @Test("Sequence when network is captive")
    func captive() {
        var machine = registered()
        let evalA = command(1, .evaluate, Fixture.a), evalB = command(2, .evaluate, Fixture.b)
        let auth = command(3, .authenticate, Fixture.a)
        let maintain1 = command(4, .maintain, Fixture.a), maintain2 = command(5, .maintain, Fixture.a)
        run(&machine, [
            // 1-2. Inactive; associate.
            (.associated(net), .inactive, []),
            // 3-5. IP up: Evaluating, evaluate to each helper.
            (.ipUp, .evaluating, [.transition(from: .inactive, to: .evaluating), .send(evalA), .send(evalB)]),
            // 6. b: not mine.
            (respond(evalB, .success, .none), .evaluating, []),
            // 7-9. a: captive, low; everyone answered: a is best_helper; cache it; Authenticating; authenticate.
            (respond(evalA, .success, .low), .authenticating, [
                .cache(id, .helper(Fixture.a)), .transition(from: .evaluating, to: .authenticating), .send(auth),
            ]),
            // 10-11. success: Authenticated, IP released, maintain timer.
            (respond(auth, .success), .authenticated, [
                .transition(from: .authenticating, to: .authenticated), .releaseIP, .armMaintainTimer(.seconds(300)),
            ]),
            // 12-13. timer: Maintaining, maintain.
            (.maintainTimerFired, .maintaining, [.transition(from: .authenticated, to: .maintaining), .send(maintain1)]),
            // 14. success: back to Authenticated, timer re-armed.
            (respond(maintain1, .success), .authenticated, [
                .transition(from: .maintaining, to: .authenticated), .armMaintainTimer(.seconds(300)),
            ]),
            // 15. repeat 11-14.
            (.maintainTimerFired, .maintaining, [.transition(from: .authenticated, to: .maintaining), .send(maintain2)]),
            (respond(maintain2, .success), .authenticated, [
                .transition(from: .maintaining, to: .authenticated), .armMaintainTimer(.seconds(300)),
            ]),
        ])
        #expect(machine.cache == [id: .helper(Fixture.a)])
    }

    @Test("Sequence when network is not captive")
    func notCaptive() {
        var machine = registered()
        let evalA = command(1, .evaluate, Fixture.a), evalB = command(2, .evaluate, Fixture.b)
        run(&machine, [
            (.associated(net), .inactive, []),
            (.ipUp, .evaluating, [.transition(from: .inactive, to: .evaluating), .send(evalA), .send(evalB)]),
            (respond(evalA, .success, .none), .evaluating, []),
            // 7-8. not captive: Authenticated, cache "not captive"; no maintain timer (nobody to maintain it).
            (respond(evalB, .success, .none), .authenticated, [
                .cache(id, .notCaptive), .transition(from: .evaluating, to: .authenticated), .releaseIP,
            ]),
            // No timer was armed: a stray firing does nothing.
            (.maintainTimerFired, .authenticated, []),
        ])
        #expect(machine.cache == [id: .notCaptive])
    }

    @Test("Sequence when network is captive and UI is required")
    func captiveWithUI() {
        var machine = registered()
        let evalA = command(1, .evaluate, Fixture.a), evalB = command(2, .evaluate, Fixture.b)
        let auth = command(3, .authenticate, Fixture.b)
        let present = command(4, .presentUI, Fixture.b)
        run(&machine, [
            (.associated(net), .inactive, []),
            (.ipUp, .evaluating, [.transition(from: .inactive, to: .evaluating), .send(evalA), .send(evalB)]),
            // 7-9. b claims with high: best_helper at once; a's evaluate is withdrawn.
            (respond(evalB, .success, .high), .authenticating, [
                .cache(id, .helper(Fixture.b)), .cancel(1, helper: Fixture.a),
                .transition(from: .evaluating, to: .authenticating), .send(auth),
            ]),
            // a's later answer is ignored.
            (respond(evalA, .success, .high), .authenticating, [.rejected(.withdrawnCommand(1, from: Fixture.a))]),
            // 10-11. uiRequired: PresentingUI; b posts its notification.
            (respond(auth, .uiRequired), .presentingUI, [.transition(from: .authenticating, to: .presentingUI)]),
            // 12-13. the user brings b to the foreground: presentUI (no deadline).
            (.foreground(Fixture.b), .presentingUI, [.send(present)]),
            // 14. success: Authenticated; best_helper cached.
            (respond(present, .success), .authenticated, [
                .transition(from: .presentingUI, to: .authenticated), .releaseIP, .armMaintainTimer(.seconds(300)),
            ]),
        ])
        #expect(machine.cache == [id: .helper(Fixture.b)])
        #expect(present.deadline == nil)
    }

    @Test("Sequence when network is captive (cached)")
    func captiveCached() {
        var machine = registered([net.identity: .helper(Fixture.a)])
        let maintain1 = command(1, .maintain, Fixture.a, justJoined: true)
        let maintain2 = command(2, .maintain, Fixture.a), maintain3 = command(3, .maintain, Fixture.a)
        run(&machine, [
            (.associated(net), .inactive, []),
            // 3-6. IP up; cache entry names a: Maintaining, maintain with didJustJoin.
            (.ipUp, .maintaining, [.transition(from: .inactive, to: .maintaining), .send(maintain1)]),
            // 7-8. success: Authenticated, timer.
            (respond(maintain1, .success), .authenticated, [
                .transition(from: .maintaining, to: .authenticated), .releaseIP, .armMaintainTimer(.seconds(300)),
            ]),
            // 9-11. timer, maintain, success.
            (.maintainTimerFired, .maintaining, [.transition(from: .authenticated, to: .maintaining), .send(maintain2)]),
            (respond(maintain2, .success), .authenticated, [
                .transition(from: .maintaining, to: .authenticated), .armMaintainTimer(.seconds(300)),
            ]),
            // 12. repeat 8-11.
            (.maintainTimerFired, .maintaining, [.transition(from: .authenticated, to: .maintaining), .send(maintain3)]),
            (respond(maintain3, .success), .authenticated, [
                .transition(from: .maintaining, to: .authenticated), .armMaintainTimer(.seconds(300)),
            ]),
        ])
    }
}
