/// The authentication state machine: a pure transition `(state, event) -> (new state, effects)`.
///
/// No I/O, no clocks. The driver feeds `Event`s and carries out the `Effect`s in order. Every state
/// change is looked up in `TransitionTable`; this type only does the bookkeeping around it
/// (commands outstanding, the evaluation, the cache, the exclude list, scan-list rounds).
public struct HotspotMachine: Sendable {
    // MARK: observable state

    public private(set) var state: HotspotState = .inactive
    public var timing: Timing
    /// The network the interface is associated with.
    public private(set) var association: HotspotNetwork?
    public private(set) var hasIP = false
    public private(set) var bestHelper: HelperID?
    public private(set) var excludeList: [HelperID] = []
    /// Per network: the helper last chosen, or "not captive". Persisted by the driver.
    public private(set) var cache: [NetworkIdentity: CacheEntry]
    /// At most this many cache entries: storing one more drops the least recently used (stored or looked up
    /// on ipUp) with a `cacheEvicted` effect (docs/RELIABILITY.md).
    public var cacheLimit = HotspotMachine.defaultCacheLimit
    public static let defaultCacheLimit = 1024
    /// When each cache entry was last stored or used (a counter, not a clock: the core has none).
    private var cacheUse: [NetworkIdentity: UInt64] = [:]
    private var cacheUseCounter: UInt64 = 0
    /// Networks a failure disabled auto-join for. Persisted by the driver.
    public private(set) var autoJoinDisabled: Set<NetworkIdentity>
    /// Registered helpers in registration order, with their display names.
    public var helpers: [(id: HelperID, displayName: String)] { registered.map { ($0.id, $0.displayName) } }
    /// The same, as structs: tuple arrays copy through the runtime's generic witnesses, slowly.
    var registered: [RegisteredHelper] = []

    struct RegisteredHelper: Sendable, Equatable {
        var id: HelperID
        var displayName: String
    }

    private struct EvaluationAnswer: Sendable, Equatable {
        var helper: HelperID
        var confidence: Confidence
    }
    public private(set) var foregroundHelper: HelperID?
    /// Whether general traffic may use the interface.
    public private(set) var ipReleased = false
    public private(set) var maintainTimerArmed = false

    /// Outstanding commands, oldest first, as slim records (OutstandingCommands.swift).
    var outstanding: [Outstanding] = []

    // MARK: private bookkeeping

    var nextCommandID: CommandID = 1
    /// Evaluation answers in arrival order.
    private var answers: [EvaluationAnswer] = []
    private var resolved = ResolvedRing()
    var scanRounds: [ScanRound] = []
    var nextRoundID = 1
    /// Maintaining entered on join (didJustJoin) rather than from Authenticated.
    private var maintainingOnJoin = false

    public init(
        timing: Timing = .standard,
        cache: [NetworkIdentity: CacheEntry] = [:],
        autoJoinDisabled: Set<NetworkIdentity> = []
    ) {
        self.timing = timing
        self.cache = cache
        self.autoJoinDisabled = autoJoinDisabled
        outstanding.reserveCapacity(16)
        answers.reserveCapacity(16)
    }

    // MARK: queries

    public func isRegistered(_ helper: HelperID) -> Bool {
        registered.contains { $0.id == helper }
    }

    public func displayName(of helper: HelperID) -> String? {
        registered.first { $0.id == helper }?.displayName
    }

    /// `supportedNetworkInterfaces()` as `helper` sees it: the current network, with isChosenHelper
    /// true only for best_helper.
    public func supportedNetworkInterfaces(for helper: HelperID) -> [HotspotNetwork] {
        guard var network = association else { return [] }
        network.isChosenHelper = (bestHelper == helper)
        return [network]
    }

    // MARK: forgetting a network

    /// The user removed `network` from the known networks: drop its cache entry and re-enable auto-join.
    /// The state machine is untouched (an association in progress goes on). Appends `.uncache` and
    /// `.enableAutoJoin` effects for what it changed, so the driver persists it like any other change.
    public mutating func forget(_ network: NetworkIdentity, into effects: inout [Effect]) {
        if cache.removeValue(forKey: network) != nil { effects.append(.uncache(network)) }
        cacheUse[network] = nil
        if autoJoinDisabled.remove(network) != nil { effects.append(.enableAutoJoin(network)) }
    }

    // MARK: the transition

    /// Handles one event, returning its effects.
    public mutating func handle(_ event: Event) -> [Effect] {
        var effects: [Effect] = []
        handle(event, into: &effects)
        return effects
    }

    /// Handles one event, appending its effects to `effects` (reuse the array: no allocation then).
    public mutating func handle(_ event: Event, into effects: inout [Effect]) {
        switch event {
        case .associated(let network):
            if association != nil, state != .inactive {
                fire(.connectivityLost, &effects)
            }
            if !network.didAutoJoin, autoJoinDisabled.remove(network.identity) != nil {
                effects.append(.enableAutoJoin(network.identity))
            }
            association = network
            hasIP = false

        case .disassociated:
            association = nil
            hasIP = false
            if state != .inactive { fire(.connectivityLost, &effects) }

        case .signalChanged(let strength):
            // No transition and no command: the association keeps the strength for what is sent next.
            guard association != nil, strength.isFinite else { return }
            association!.signalStrength = min(1, max(0, strength))

        case .ipUp:
            guard let network = association, !hasIP else { return }
            hasIP = true
            guard state == .inactive else { return }
            if let helper = cache[network.identity]?.helper {
                touchCache(network.identity)
                bestHelper = helper
                fire(.ipUpCached, &effects)
            } else {
                fire(.ipUpNotCached, &effects)
            }

        case .ipDown:
            hasIP = false
            if state != .inactive { fire(.connectivityLost, &effects) }

        case .helperRegistered(let id, let name):
            if isRegistered(id) {
                effects.append(.rejected(.duplicateRegistration(id)))
            } else if name.isEmpty || name.count > maximumDisplayNameLength {
                effects.append(.rejected(.invalidDisplayName(id, name)))
            } else {
                registered.append(RegisteredHelper(id: id, displayName: name))
            }

        case .helperGone(let id):
            guard let index = registered.firstIndex(where: { $0.id == id }) else { return }
            registered.remove(at: index)
            if foregroundHelper == id { foregroundHelper = nil }
            // A helper that went away mid-command gave no answer.
            while let record = outstanding.first(where: { $0.helper == id }) {
                expire(record.id, &effects)
            }

        case .response(let response):
            accept(response, &effects)

        case .deadlinePassed(let id):
            // A deadline for a command no longer outstanding is a stale timer: nothing to do.
            if outstanding.contains(where: { $0.id == id }) { expire(id, &effects) }

        case .maintainTimerFired:
            guard state == .authenticated, maintainTimerArmed else { return }
            maintainTimerArmed = false
            fire(.maintainTimerFired, &effects)

        case .logoffRequested(let helper, let network):
            let accepted = state == .authenticated
                && association?.identity == network
                && bestHelper == helper
                && foregroundHelper == helper
            effects.append(.logoffAnswer(helper, accepted: accepted))
            if accepted { fire(.logoffAccepted, &effects) }

        case .foreground(let helper):
            foregroundHelper = helper
            if state == .presentingUI, let helper, helper == bestHelper, isRegistered(helper),
               !outstanding.contains(where: { $0.helper == helper && $0.type != .filterScanList }) {
                send(.presentUI, to: helper, &effects)
            }

        case .scanListShown(let list):
            startScanRound(list, &effects)
        }
    }

    // MARK: responses and deadlines

    private mutating func accept(_ response: Response, _ effects: inout [Effect]) {
        let helper = response.helper
        // An outstanding command's helper is registered (commands go only to registered helpers, and a
        // helper that goes away has its commands expired), so the registration check is needed only
        // when the response does not match an outstanding command of its sender.
        guard let index = outstanding.firstIndex(where: { $0.id == response.command }), outstanding[index].helper == helper else {
            guard isRegistered(helper) else {
                effects.append(.rejected(.notRegistered(helper)))
                return
            }
            if let index = outstanding.firstIndex(where: { $0.id == response.command }) {
                effects.append(.rejected(.notYourCommand(response.command, from: helper, sentTo: outstanding[index].helper)))
            } else {
                effects.append(.rejected(resolved.rejection(for: response.command, from: helper, nextID: nextCommandID)))
            }
            return
        }
        let command = outstanding.remove(at: index)
        resolved.record(command.id, helper: helper, .answered)

        switch command.type {
        case .filterScanList:
            scanAnswer(command, response, &effects)
        case .evaluate:
            var confidence = Confidence.none
            if !command.type.accepts(response.result) {
                effects.append(.irregular(.invalidResult(command.id, command.type, response.result, from: helper)))
            } else if let network = response.network {
                // The evaluated network is the association: a transition withdraws evaluate before it changes.
                if let evaluated = association, network.sameEntry(as: evaluated) {
                    confidence = network.confidence
                } else {
                    effects.append(.irregular(.wrongNetwork(command.id, ssid: network.rawSSID, from: helper)))
                }
            }
            evaluationAnswer(helper, confidence, &effects)
        case .none:
            break
        default:
            var outcome = Outcome.failure
            if command.type.accepts(response.result) {
                outcome = Outcome(response.result)
            } else {
                effects.append(.irregular(.invalidResult(command.id, command.type, response.result, from: helper)))
            }
            fire(.result(command.type, outcome), &effects)
        }
    }

    /// A command got no answer: its deadline passed, or its helper went away.
    private mutating func expire(_ id: CommandID, _ effects: inout [Effect]) {
        guard let index = outstanding.firstIndex(where: { $0.id == id }) else { return }
        let command = outstanding.remove(at: index)
        resolved.record(id, helper: command.helper, .expired)
        effects.append(.irregular(.noAnswer(id, command.type, from: command.helper)))
        switch command.type {
        case .filterScanList:
            scanAnswer(command, nil, &effects)
        case .evaluate:
            evaluationAnswer(command.helper, .none, &effects)
        case .none:
            break
        default:
            fire(.result(command.type, .failure), &effects)
        }
    }

    // MARK: evaluation

    private mutating func evaluationAnswer(_ helper: HelperID, _ confidence: Confidence, _ effects: inout [Effect]) {
        guard state == .evaluating else { return }
        if confidence == .high {
            // The first high answer wins at once; every other answer, earlier or later, is ignored.
            bestHelper = helper
            fire(.helperClaimed, &effects)
            return
        }
        answers.append(EvaluationAnswer(helper: helper, confidence: confidence))
        if outstanding.contains(where: { $0.type == .evaluate }) { return }
        // Everyone answered (or ran out of time): highest confidence, ties to the first answer.
        var winner: EvaluationAnswer?
        for answer in answers where answer.confidence > (winner?.confidence ?? .none) {
            winner = answer
        }
        if let winner {
            bestHelper = winner.helper
            fire(.helperClaimed, &effects)
        } else {
            fire(.noHelperClaimed, &effects)
        }
    }

    // MARK: transitions

    /// Looks the trigger up in the table and carries the row out: its actions, the state change, the
    /// new state's entry actions.
    private mutating func fire(_ trigger: Trigger, _ effects: inout [Effect]) {
        let rowIndex = TransitionTable.lookupIndex(from: state, on: trigger)
        guard rowIndex >= 0 else { return }
        let to = TransitionTable.rowTargets[rowIndex]
        var actions = TransitionTable.rowActionMasks[rowIndex]
        while actions != 0 {
            perform(TransitionAction.allCases[actions.trailingZeroBitCount], &effects)
            actions &= actions - 1
        }
        let from = state
        // Leaving a state withdraws what it was still waiting for (the other evaluations, say).
        withdrawStateCommands(&effects)
        if from == .authenticated, maintainTimerArmed {
            maintainTimerArmed = false
            effects.append(.cancelMaintainTimer)
        }
        maintainingOnJoin = (from == .inactive && to == .maintaining)
        state = to
        effects.append(.transition(from: from, to: to))
        var entry = TransitionTable.entryActionMasks[to.index]
        while entry != 0 {
            perform(EntryAction.allCases[entry.trailingZeroBitCount], &effects)
            entry &= entry - 1
        }
    }

    private mutating func touchCache(_ network: NetworkIdentity) {
        cacheUseCounter += 1
        cacheUse[network] = cacheUseCounter
    }

    /// Drops least recently used entries (never `kept`) while the cache holds more than `cacheLimit`.
    /// Entries loaded from the state file and not used since count as the oldest.
    private mutating func evictBeyondLimit(keeping kept: NetworkIdentity, _ effects: inout [Effect]) {
        while cache.count > max(cacheLimit, 1) {
            var victim: NetworkIdentity?
            var oldest = UInt64.max
            for network in cache.keys where network != kept {
                let used = cacheUse[network] ?? 0
                if used < oldest {
                    oldest = used
                    victim = network
                }
            }
            guard let victim else { return }
            cache[victim] = nil
            cacheUse[victim] = nil
            effects.append(.cacheEvicted(victim, limit: cacheLimit))
        }
    }

    private mutating func perform(_ action: TransitionAction, _ effects: inout [Effect]) {
        guard let network = association?.identity else {
            if action == .disassociate { disassociate(&effects) }
            return
        }
        switch action {
        case .cacheBestHelper:
            // One hash: updateValue tells whether the entry changed.
            if let best = bestHelper, cache.updateValue(.helper(best), forKey: network) != .helper(best) {
                effects.append(.cache(network, .helper(best)))
                touchCache(network)
                evictBeyondLimit(keeping: network, &effects)
            }
        case .cacheNotCaptive:
            cache[network] = .notCaptive
            effects.append(.cache(network, .notCaptive))
            touchCache(network)
            evictBeyondLimit(keeping: network, &effects)
        case .excludeBestHelper:
            if let best = bestHelper, !excludeList.contains(best) { excludeList.append(best) }
        case .uncacheBestHelper:
            if let best = bestHelper, let i = cache.index(forKey: network), cache.values[i] == .helper(best) {
                cache.remove(at: i)
                cacheUse[network] = nil
                effects.append(.uncache(network))
            }
        case .disableAutoJoin:
            autoJoinDisabled.insert(network)
            effects.append(.disableAutoJoin(network))
        case .disassociate:
            disassociate(&effects)
        }
    }

    private mutating func perform(_ action: EntryAction, _ effects: inout [Effect]) {
        switch action {
        case .clearBestHelper:
            bestHelper = nil
        case .clearExcludeList:
            excludeList.removeAll(keepingCapacity: true)
        case .suppressIP:
            if ipReleased {
                ipReleased = false
                effects.append(.suppressIP)
            }
        case .releaseIP:
            if !ipReleased {
                ipReleased = true
                effects.append(.releaseIP)
            }
        case .sendEvaluate:
            answers.removeAll(keepingCapacity: true)
            var sent = false
            for helper in registered where !excludeList.contains(helper.id) {
                send(.evaluate, to: helper.id, registered: true, &effects)
                sent = true
            }
            if !sent { fire(.noHelperClaimed, &effects) }
        case .sendAuthenticate:
            if let best = bestHelper { send(.authenticate, to: best, &effects) }
        case .awaitForeground:
            if let best = bestHelper, foregroundHelper == best { send(.presentUI, to: best, &effects) }
        case .armMaintainTimer:
            if bestHelper != nil {
                maintainTimerArmed = true
                effects.append(.armMaintainTimer(timing.scaledMaintainInterval))
            }
        case .sendMaintain:
            if let best = bestHelper { send(.maintain, to: best, &effects) }
        case .sendLogoff:
            if let best = bestHelper { send(.logoff, to: best, &effects) }
        case .disassociate:
            disassociate(&effects)
            fire(.failureHandled, &effects)
        }
    }

    private mutating func disassociate(_ effects: inout [Effect]) {
        association = nil
        hasIP = false
        effects.append(.disassociate)
    }

    /// Withdraws every outstanding state-machine command (filterScanList rounds are independent).
    private mutating func withdrawStateCommands(_ effects: inout [Effect]) {
        var i = 0
        while i < outstanding.count {
            if outstanding[i].type == .filterScanList {
                i += 1
                continue
            }
            let command = outstanding.remove(at: i)
            resolved.record(command.id, helper: command.helper, .withdrawn)
            effects.append(.cancel(command.id, helper: command.helper))
        }
    }

    /// Sends a state-machine command about the associated network to `helper`.
    /// `registered`: the caller knows `helper` is registered (it is iterating the registered helpers).
    private mutating func send(_ type: CommandType, to helper: HelperID, registered: Bool = false, _ effects: inout [Effect]) {
        let isChosenHelper = type != .evaluate && helper == bestHelper
        let didJustJoin = type == .maintain && maintainingOnJoin
        guard let network = commandNetwork(isChosenHelper: isChosenHelper, didJustJoin: didJustJoin) else { return }
        let id = nextCommandID
        let deadline = timing.deadline(for: type)
        nextCommandID += 1
        guard registered || isRegistered(helper) else {
            // A helper that is not registered receives no command: no answer, at once.
            resolved.record(id, helper: helper, .expired)
            effects.append(.irregular(.noAnswer(id, type, from: helper)))
            if type == .evaluate {
                evaluationAnswer(helper, .none, &effects)
            } else {
                fire(.result(type, .failure), &effects)
            }
            return
        }
        outstanding.append(Outstanding(
            id: id, type: type, helper: helper, deadline: deadline, isChosenHelper: isChosenHelper, didJustJoin: didJustJoin,
            signalStrength: network.signalStrength))
        effects.append(.send(Command(id: id, type: type, helper: helper, network: network, deadline: deadline)))
    }
}

extension HotspotMachine: Equatable {
    /// Two machines are equal when every piece of their state is, the private bookkeeping included
    /// (outstanding commands, evaluation answers, resolved commands, scan rounds, the next ids).
    /// Tests use it to prove that a rejected message changes nothing.
    public static func == (lhs: HotspotMachine, rhs: HotspotMachine) -> Bool {
        lhs.state == rhs.state && lhs.timing == rhs.timing && lhs.association == rhs.association
            && lhs.hasIP == rhs.hasIP && lhs.bestHelper == rhs.bestHelper && lhs.excludeList == rhs.excludeList
            && lhs.cache == rhs.cache && lhs.autoJoinDisabled == rhs.autoJoinDisabled
            && lhs.registered == rhs.registered
            && lhs.foregroundHelper == rhs.foregroundHelper && lhs.ipReleased == rhs.ipReleased
            && lhs.maintainTimerArmed == rhs.maintainTimerArmed && lhs.outstanding == rhs.outstanding
            && lhs.nextCommandID == rhs.nextCommandID
            && lhs.answers == rhs.answers
            && lhs.resolved == rhs.resolved && lhs.scanRounds == rhs.scanRounds && lhs.nextRoundID == rhs.nextRoundID
            && lhs.maintainingOnJoin == rhs.maintainingOnJoin
    }
}
