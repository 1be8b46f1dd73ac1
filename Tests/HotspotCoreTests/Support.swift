import HotspotCore
import Testing

// Fixtures and a small driver around HotspotMachine. Tests feed events, then assert on the state and
// on the effects of that one step.

enum Fixture {
    static let coffee = HotspotNetwork(ssid: "CoffeeShop", bssid: "02:00:00:00:00:01", signalStrength: 0.8, didAutoJoin: true)
    static let airport = HotspotNetwork(ssid: "Airport", bssid: "02:00:00:00:00:02", signalStrength: 0.5, didAutoJoin: true)
    static let hotel = HotspotNetwork(
        ssid: "Hotel", bssid: "02:00:00:00:00:03", signalStrength: 0.6, security: .wpa2Personal, didAutoJoin: true)
    static let a: HelperID = "com.example.alpha"
    static let b: HelperID = "com.example.beta"
    static let c: HelperID = "com.example.gamma"
    static let names: [HelperID: String] = [a: "Alpha", b: "Beta", c: "Gamma"]
}

/// One machine, and the effects of the last step.
struct Driver {
    var machine: HotspotMachine
    var last: [Effect] = []

    init(
        helpers: [HelperID] = [Fixture.a, Fixture.b], timing: Timing = .standard,
        cache: [NetworkIdentity: CacheEntry] = [:], autoJoinDisabled: Set<NetworkIdentity> = []
    ) {
        machine = HotspotMachine(timing: timing, cache: cache, autoJoinDisabled: autoJoinDisabled)
        for helper in helpers {
            step(.helperRegistered(helper, displayName: Fixture.names[helper] ?? "Helper"))
            #expect(last.isEmpty, "registering \(helper): \(last)")
        }
    }

    var state: HotspotState { machine.state }

    @discardableResult
    mutating func step(_ event: Event) -> [Effect] {
        last = machine.handle(event)
        return last
    }

    /// Associates with `network` and brings IP up.
    mutating func join(_ network: HotspotNetwork = Fixture.coffee) {
        step(.associated(network))
        step(.ipUp)
    }

    /// Commands sent by the last step.
    var sent: [Command] {
        last.compactMap { if case .send(let c) = $0 { c } else { nil } }
    }

    func sent(_ type: CommandType) -> [Command] { sent.filter { $0.type == type } }

    /// The one command of `type` the last step sent, failing the test when there is not exactly one.
    func the(_ type: CommandType, sourceLocation: SourceLocation = #_sourceLocation) -> Command {
        let commands = sent(type)
        #expect(commands.count == 1, "expected one \(type) command, got \(commands) in \(last)", sourceLocation: sourceLocation)
        return commands.first ?? Command(id: 0, type: type, helper: "", deadline: nil)
    }

    /// The outstanding state-machine command of `helper`.
    func outstanding(_ helper: HelperID, sourceLocation: SourceLocation = #_sourceLocation) -> Command {
        let command = machine.outstandingCommand(of: helper)
        #expect(command != nil, "\(helper) has no outstanding command in \(state)", sourceLocation: sourceLocation)
        return command ?? Command(id: 0, type: .none, helper: helper, deadline: nil)
    }

    /// Answers `command` with `result` (evaluate: about the evaluated network, with `confidence`).
    @discardableResult
    mutating func answer(_ command: Command, _ result: HelperResult, confidence: Confidence = .none) -> [Effect] {
        var network = command.network
        network?.confidence = confidence
        return step(.response(Response(helper: command.helper, command: command.id, result: result, network: network)))
    }

    /// Answers the outstanding command of `helper`.
    @discardableResult
    mutating func answer(_ helper: HelperID, _ result: HelperResult, confidence: Confidence = .none) -> [Effect] {
        answer(outstanding(helper), result, confidence: confidence)
    }

    // MARK: getting to a state

    /// Evaluating with evaluate sent to a and b.
    mutating func toEvaluating() {
        join()
        #expect(state == .evaluating)
    }

    /// Authenticating with a as best_helper.
    mutating func toAuthenticating() {
        toEvaluating()
        answer(Fixture.a, .success, confidence: .high)
        #expect(state == .authenticating)
    }

    /// PresentingUI with a as best_helper, a not yet in the foreground.
    mutating func toPresentingUI() {
        toAuthenticating()
        answer(Fixture.a, .uiRequired)
        #expect(state == .presentingUI)
    }

    /// PresentingUI with presentUI sent to a (in the foreground).
    mutating func toPresentingUISent() {
        toPresentingUI()
        step(.foreground(Fixture.a))
        #expect(sent(.presentUI).count == 1)
    }

    /// Authenticated through a, a's authenticate answered success.
    mutating func toAuthenticated() {
        toAuthenticating()
        answer(Fixture.a, .success)
        #expect(state == .authenticated)
    }

    /// Maintaining entered from Authenticated (the timer).
    mutating func toMaintaining() {
        toAuthenticated()
        step(.maintainTimerFired)
        #expect(state == .maintaining)
    }

    /// LoggingOff, a in the foreground having called logoff(network).
    mutating func toLoggingOff() {
        toAuthenticated()
        step(.foreground(Fixture.a))
        step(.logoffRequested(Fixture.a, network: Fixture.coffee.identity))
        #expect(state == .loggingOff)
    }

    mutating func to(_ state: HotspotState) {
        switch state {
        case .inactive: step(.associated(Fixture.coffee))
        case .evaluating: toEvaluating()
        case .authenticating: toAuthenticating()
        case .presentingUI: toPresentingUISent()
        case .authenticated: toAuthenticated()
        case .maintaining: toMaintaining()
        case .loggingOff: toLoggingOff()
        case .failure: Issue.record("Failure is never a resting state")
        }
    }
}

extension Array where Element == Effect {
    var transitions: [HotspotState] {
        compactMap { if case .transition(_, let to) = $0 { to } else { nil } }
    }

    var rejections: [Rejection] {
        compactMap { if case .rejected(let r) = $0 { r } else { nil } }
    }

    var irregularities: [Irregularity] {
        compactMap { if case .irregular(let i) = $0 { i } else { nil } }
    }

    var cancelled: [CommandID] {
        compactMap { if case .cancel(let id, _) = $0 { id } else { nil } }
    }

    func index(of effect: Effect) -> Int? { firstIndex(of: effect) }
}

/// The states a machine rests in between events (Failure passes straight through).
let restingStates: [HotspotState] = HotspotState.allCases.filter { $0 != .failure }
