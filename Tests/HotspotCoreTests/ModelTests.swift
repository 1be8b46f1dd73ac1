import Foundation
import HotspotCore
import Testing

/// A seeded randomized model test: thousands of random event sequences (helpers answering anything,
/// late, twice or never; IP flapping; roaming; logoff from the wrong helper; foreground changes;
/// scan lists) with docs/SPEC.md's invariants checked after every step.
///
/// Replay one sequence: `HOTSPOT_SEED=0x... swift test --filter ModelTests` (the failing seed is
/// printed), which also prints every step. `HOTSPOT_MODEL_RUNS=n` changes the number of sequences.
///
/// The invariant "IP connectivity is released only in Authenticated" is checked in its decided reading
/// (TransitionTable.decisions, docs/DECISIONS.md): IP stays released while Maintaining is entered from
/// Authenticated by the maintain timer (the network was authenticated and still is until maintain says
/// otherwise), and is suppressed in every other state, including a Maintaining entered on join.
@Suite("Randomized model")
struct ModelTests {
    static let baseSeed: UInt64 = 0x5EED_2026_0001
    static let defaultRuns = 10_000

    @Test("randomized model: 10,000 seeded event sequences keep every invariant")
    func randomized() {
        let env = ProcessInfo.processInfo.environment
        if let text = env["HOTSPOT_SEED"] {
            let seed = UInt64(text.hasPrefix("0x") ? String(text.dropFirst(2)) : text, radix: text.hasPrefix("0x") ? 16 : 10)
            #expect(seed != nil, "HOTSPOT_SEED=\(text) is not a number (decimal or 0x hex)")
            if let seed {
                var run = ModelRun(seed: seed, verbose: true)
                if let failure = run.run() { Issue.record("seed 0x\(String(seed, radix: 16)): \(failure)") }
            }
            return
        }
        let runs = env["HOTSPOT_MODEL_RUNS"].flatMap(Int.init) ?? Self.defaultRuns
        var seeds = SplitMix64(seed: Self.baseSeed)
        var steps = 0
        var coverage = Set<String>()
        for _ in 0..<runs {
            let seed = seeds.next()
            var run = ModelRun(seed: seed, verbose: false)
            if let failure = run.run() {
                Issue.record("seed 0x\(String(seed, radix: 16)): \(failure)\nreplay: HOTSPOT_SEED=0x\(String(seed, radix: 16)) swift test --filter ModelTests")
                return
            }
            steps += run.steps
            coverage.formUnion(run.coverage)
        }
        // The generator must actually reach every transition of the table (else the invariants prove little).
        if runs >= Self.defaultRuns {
            for row in TransitionTable.rows {
                let froms = row.from.map { [$0] } ?? [.evaluating, .authenticating, .presentingUI, .authenticated, .maintaining, .loggingOff]
                for from in froms {
                    #expect(coverage.contains("\(from)->\(row.to)"), "no random sequence took \(from) -> \(row.to) (\(row.specRow))")
                }
            }
            for kind in ["rejected duplicate", "rejected late", "rejected unknown", "rejected notYours", "rejected withdrawn",
                         "logoff accepted", "logoff refused", "invalid result", "scan annotated", "auto-join disabled"] {
                #expect(coverage.contains(kind), "no random sequence produced \(kind)")
            }
        }
        #expect(steps > runs * 10)
    }
}

/// One random sequence and its invariant checks.
struct ModelRun {
    var rng: SplitMix64
    let seed: UInt64
    let verbose: Bool
    var machine = HotspotMachine()
    var steps = 0
    var coverage = Set<String>()

    // What a driver would know from the effects alone.
    var modelPending = Set<CommandID>()
    var modelIPReleased = false
    var modelTimerArmed = false
    var modelAutoJoinDisabled = Set<NetworkIdentity>()
    var maintainingFromAuthenticated = false
    var everSent: [Command] = []
    var sentByID: [CommandID: Command] = [:]
    var presented: [HotspotNetwork] = []
    /// "helper=display name" of every registration accepted so far.
    var registeredNames = Set<String>()

    static let helpers: [HelperID] = [Fixture.a, Fixture.b, Fixture.c, "com.example.delta"]
    static let networks = [Fixture.coffee, Fixture.airport, Fixture.hotel]

    init(seed: UInt64, verbose: Bool) {
        self.seed = seed
        self.verbose = verbose
        rng = SplitMix64(seed: seed)
        // Sometimes start with a cache, as a daemon restart would.
        if rng.next() % 3 == 0 {
            let cache: [NetworkIdentity: CacheEntry] = [
                Fixture.coffee.identity: .helper(Self.helpers[Int(rng.next() % 4)]),
                Fixture.airport.identity: .notCaptive,
            ]
            machine = HotspotMachine(cache: cache)
        }
    }

    mutating func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
    mutating func chance(_ percent: UInt64) -> Bool { rng.next() % 100 < percent }

    mutating func run() -> String? {
        let count = 10 + Int(rng.next() % 50)
        for n in 0..<count {
            let event = nextEvent()
            let before = machine
            let effects = machine.handle(event)
            steps += 1
            if verbose { print("step \(n + 1): \(event)\n    -> \(machine.state) \(effects)") }
            if let violation = check(before: before, event: event, effects: effects) {
                return "step \(n + 1) of \(count): \(event)\n  state \(before.state) -> \(machine.state)\n  effects \(effects)\n  violated: \(violation)"
            }
        }
        return nil
    }

    // MARK: events

    mutating func result() -> HelperResult {
        chance(40) ? .success : pick(HelperResult.allCases)
    }

    mutating func nextEvent() -> Event {
        let helper = pick(Self.helpers)
        switch rng.next() % 100 {
        case 0..<6:
            var network = pick(Self.networks)
            network.didAutoJoin = chance(70)
            return .associated(network)
        case 6..<9: return .disassociated
        case 9..<20: return .ipUp
        case 20..<24: return .ipDown
        case 24..<31:
            let names = ["Alpha", "Beta", "Fifteen chars!!", "Sixteen chars!!!", ""]
            return .helperRegistered(helper, displayName: chance(85) ? Fixture.names[helper] ?? "Delta" : pick(names))
        case 31..<34: return .helperGone(helper)
        case 34..<60:
            // Answer an outstanding command (the common case), with any result.
            guard !machine.pending.isEmpty else { return .ipUp }
            return answer(pick(machine.pending))
        case 60..<66:
            // Answer a command again, or too late, or after it was withdrawn.
            guard !everSent.isEmpty else { return .ipDown }
            return answer(pick(everSent))
        case 66..<69:
            // A command never sent, or someone else's.
            if chance(50) || everSent.isEmpty {
                return .response(Response(helper: helper, command: 10_000 + rng.next() % 100, result: result()))
            }
            let command = pick(everSent)
            return .response(Response(helper: helper, command: command.id, result: result()))
        case 69..<78:
            guard !machine.pending.isEmpty else { return .maintainTimerFired }
            return .deadlinePassed(pick(machine.pending).id)
        case 78..<80:
            return .deadlinePassed(everSent.isEmpty ? 1 : pick(everSent).id)
        case 80..<86: return .maintainTimerFired
        case 86..<91:
            let caller = chance(60) ? machine.bestHelper ?? helper : helper
            let network = chance(70) ? machine.association?.identity ?? pick(Self.networks).identity : pick(Self.networks).identity
            return .logoffRequested(caller, network: network)
        case 91..<96:
            if chance(15) { return .foreground(nil) }
            return .foreground(chance(60) ? machine.bestHelper ?? helper : helper)
        default:
            presented = Self.networks.filter { _ in chance(70) }
            return .scanListShown(presented)
        }
    }

    mutating func answer(_ command: Command) -> Event {
        var network = command.network
        if chance(10) { network = pick(Self.networks) }  // about another network
        network?.confidence = pick(Confidence.allCases)
        var list: [HotspotNetwork]?
        if command.type == .filterScanList, chance(70) {
            list = (command.networkList ?? []).filter { _ in chance(50) }.map { n in
                var n = n
                if chance(60) { n.password = "pw" }
                return n
            }
            if chance(15) { list?.append(HotspotNetwork(ssid: "Unlisted", bssid: "02:00:00:00:00:99")) }
        }
        if chance(5) { network = nil }
        return .response(Response(helper: command.helper, command: command.id, result: result(), network: network, networkList: list))
    }

    // MARK: invariants

    mutating func check(before: HotspotMachine, event: Event, effects: [Effect]) -> String? {
        let m = machine

        // A rejected message changes nothing, and is the step's only effect.
        if effects.contains(where: { if case .rejected = $0 { true } else { false } }) {
            guard effects.count == 1 else { return "a rejection came with other effects" }
            guard m == before else { return "a rejected message changed the machine" }
            if case .rejected(let r) = effects[0] {
                switch r {
                case .duplicateResponse: coverage.insert("rejected duplicate")
                case .lateResponse: coverage.insert("rejected late")
                case .unknownCommand: coverage.insert("rejected unknown")
                case .notYourCommand: coverage.insert("rejected notYours")
                case .withdrawnCommand: coverage.insert("rejected withdrawn")
                default: break
                }
            }
        }
        // A refused logoff(network) changes nothing.
        if effects.contains(where: { if case .logoffAnswer(_, false) = $0 { true } else { false } }) {
            guard effects.count == 1, m == before else { return "a refused logoff changed something" }
            coverage.insert("logoff refused")
        }
        if effects.contains(where: { if case .logoffAnswer(_, true) = $0 { true } else { false } }) {
            coverage.insert("logoff accepted")
        }

        if case .helperRegistered(let helper, let name) = event, effects.isEmpty {
            guard m.displayName(of: helper) == name else { return "registration of \(helper) not recorded" }
            registeredNames.insert("\(helper)=\(name)")
        }

        // Transitions chain from the old state to the new one, each a row of the table.
        var current = before.state
        var sawFailureAt: Int?
        for (i, effect) in effects.enumerated() {
            switch effect {
            case .transition(let from, let to):
                guard from == current else { return "transition from \(from) while in \(current)" }
                guard TransitionTable.rows.contains(where: { ($0.from == nil || $0.from == from) && $0.to == to }) else {
                    return "transition \(from) -> \(to) is no row of the table"
                }
                coverage.insert("\(from)->\(to)")
                if to == .failure { sawFailureAt = i }
                if to == .maintaining { maintainingFromAuthenticated = from == .authenticated }
                if from == .failure {
                    // Failure always disassociates and reaches Inactive in the same step.
                    guard to == .inactive, let start = sawFailureAt,
                          effects[start..<i].contains(.disassociate) else { return "Failure left without disassociating" }
                    sawFailureAt = nil
                }
                current = to
            case .send(let command):
                guard command.deadline == m.timing.deadline(for: command.type) else { return "\(command.type) with deadline \(String(describing: command.deadline))" }
                guard m.isRegistered(command.helper) else { return "command sent to \(command.helper), not registered" }
                guard modelPending.insert(command.id).inserted else { return "command id \(command.id) sent twice" }
                everSent.append(command)
                sentByID[command.id] = command
                if command.type == .evaluate, m.state == .evaluating, m.excludeList.contains(command.helper) {
                    return "evaluate sent to excluded \(command.helper)"
                }
                if ![.evaluate, .filterScanList].contains(command.type), command.network?.isChosenHelper != true {
                    return "\(command.type) sent with isChosenHelper false"
                }
            case .cancel(let id, _):
                guard modelPending.remove(id) != nil else { return "cancel of \(id), not outstanding" }
            case .irregular(let irregularity):
                if case .noAnswer(let id, _, _) = irregularity { modelPending.remove(id) }
                if case .invalidResult = irregularity { coverage.insert("invalid result") }
            case .releaseIP:
                guard !modelIPReleased else { return "releaseIP twice" }
                modelIPReleased = true
            case .suppressIP:
                guard modelIPReleased else { return "suppressIP twice" }
                modelIPReleased = false
            case .armMaintainTimer:
                modelTimerArmed = true
            case .cancelMaintainTimer:
                guard modelTimerArmed else { return "cancelMaintainTimer with no timer armed" }
                modelTimerArmed = false
            case .disableAutoJoin(let network):
                modelAutoJoinDisabled.insert(network)
                coverage.insert("auto-join disabled")
            case .enableAutoJoin(let network):
                modelAutoJoinDisabled.remove(network)
            case .scanListAnnotated(let list):
                coverage.insert("scan annotated")
                for entry in list where entry.annotation != nil {
                    if entry.network.isSecure, (entry.password ?? "").isEmpty { return "secure network annotated without a password" }
                    if !registeredNames.contains("\(entry.claimedBy ?? "?")=\(entry.annotation ?? "")") {
                        return "annotation is not the claiming helper's display name"
                    }
                }
            default: break
            }
        }
        guard current == m.state else { return "effects end in \(current), machine is in \(m.state)" }
        guard sawFailureAt == nil, m.state != .failure else { return "Failure did not reach Inactive" }
        if case .response(let r) = event, effects.rejections.isEmpty, r.helper != "" {
            modelPending.remove(r.command)
        }
        if case .deadlinePassed = event, before.state == m.state, effects.isEmpty {
            // A stale deadline: nothing happened.
            guard m == before else { return "a stale deadline changed the machine" }
        }
        if case .maintainTimerFired = event, before.maintainTimerArmed, before.state == .authenticated {
            modelTimerArmed = false
        }

        // IP released only in Authenticated, or in a Maintaining entered from Authenticated (decided).
        if m.ipReleased {
            let allowed = m.state == .authenticated || (m.state == .maintaining && maintainingFromAuthenticated)
            guard allowed else { return "IP released in \(m.state)" }
        }
        guard modelIPReleased == m.ipReleased else { return "releaseIP/suppressIP effects disagree with the machine" }
        // best_helper is never in the exclude list.
        if let best = m.bestHelper, m.excludeList.contains(best) { return "best_helper \(best) is in the exclude list" }
        // The exclude list is empty (and best_helper cleared) in Inactive.
        if m.state == .inactive, !m.excludeList.isEmpty || m.bestHelper != nil { return "Inactive with exclude list or best_helper" }
        // At most one outstanding state-machine command per helper, and only the current state's command.
        var seen = Set<HelperID>()
        for command in m.pending where command.type != .filterScanList {
            guard seen.insert(command.helper).inserted else { return "two outstanding commands for \(command.helper)" }
            let expected: CommandType? = switch m.state {
            case .evaluating: .evaluate
            case .authenticating: .authenticate
            case .presentingUI: .presentUI
            case .maintaining: .maintain
            case .loggingOff: .logoff
            default: nil
            }
            guard command.type == expected else { return "\(command.type) outstanding in \(m.state)" }
            if command.type != .evaluate, command.helper != m.bestHelper { return "\(command.type) outstanding for \(command.helper), not best_helper" }
        }
        // The driver's view (from effects alone) matches the machine.
        guard Set(m.pending.map(\.id)) == modelPending else {
            return "outstanding commands \(m.pending.map(\.id)) but the effects say \(modelPending.sorted())"
        }
        // The machine's view of each outstanding command is the command exactly as it was sent.
        for command in m.pending where sentByID[command.id] != command {
            return "outstanding \(command) differs from what was sent: \(String(describing: sentByID[command.id]))"
        }
        for helper in Self.helpers {
            if let command = m.outstandingCommand(of: helper), sentByID[command.id] != command {
                return "outstandingCommand(of: \(helper)) differs from what was sent"
            }
        }
        guard modelTimerArmed == m.maintainTimerArmed else { return "maintain timer effects disagree with the machine" }
        if m.maintainTimerArmed, m.state != .authenticated { return "maintain timer armed in \(m.state)" }
        guard m.autoJoinDisabled == modelAutoJoinDisabled else { return "auto-join effects disagree with the machine" }
        // Not associated: Inactive.
        if m.association == nil, m.state != .inactive { return "\(m.state) with no association" }
        // Authenticated through a helper: that helper is cached for the network.
        if m.state == .authenticated, let best = m.bestHelper, let network = m.association?.identity,
           m.cache[network] != .helper(best) {
            return "Authenticated through \(best) but the cache says \(String(describing: m.cache[network]))"
        }
        return nil
    }
}
