// The transition table of the authentication state machine, as data.
//
// This file is the one place the rules live: `HotspotMachine` looks every transition up here,
// `hotspot-lab spec` prints it, and docs/state-machine.md is generated from it.

/// How a command ended, as far as the state machine is concerned.
public enum Outcome: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case success
    case uiRequired
    case unsupportedNetwork
    case temporaryFailure
    case authenticationRequired
    /// failure, a result not valid for the command, or no answer by the deadline.
    case failure

    public var description: String { rawValue }

    @inline(__always)
    var ordinal: Int {
        switch self {
        case .success: 0
        case .uiRequired: 1
        case .unsupportedNetwork: 2
        case .temporaryFailure: 3
        case .authenticationRequired: 4
        case .failure: 5
        }
    }

    /// Maps a result already known to be valid for its command.
    public init(_ result: HelperResult) {
        switch result {
        case .success: self = .success
        case .uiRequired: self = .uiRequired
        case .unsupportedNetwork: self = .unsupportedNetwork
        case .temporaryFailure: self = .temporaryFailure
        case .authenticationRequired: self = .authenticationRequired
        case .failure, .commandNotRecognized: self = .failure
        }
    }
}

/// What moves the machine from one state to another.
public enum Trigger: Sendable, Hashable, CustomStringConvertible {
    /// IP came up and no cache entry names a helper for the network.
    case ipUpNotCached
    /// IP came up and a cache entry names a helper for the network.
    case ipUpCached
    /// IP connectivity or the association was lost.
    case connectivityLost
    /// Evaluation chose a helper.
    case helperClaimed
    /// Evaluation ended with no helper answering low or high.
    case noHelperClaimed
    /// The best helper answered (or failed to answer) a command.
    case result(CommandType, Outcome)
    case maintainTimerFired
    /// `logoff(network)` was accepted.
    case logoffAccepted
    /// Failure has disassociated.
    case failureHandled

    public var description: String {
        switch self {
        case .ipUpNotCached: "IP up, not cached"
        case .ipUpCached: "IP up, cached helper"
        case .connectivityLost: "IP or association lost"
        case .helperClaimed: "a helper claimed the network"
        case .noHelperClaimed: "no helper claimed the network"
        case .result(let c, let o):
            o == .failure ? "\(c): failure, anything else, no answer" : "\(c): \(o)"
        case .maintainTimerFired: "maintain timer fired"
        case .logoffAccepted: "logoff(network) accepted"
        case .failureHandled: "disassociated"
        }
    }

    /// A dense index, for the table's lookup array.
    var index: Int {
        switch self {
        case .ipUpNotCached: 0
        case .ipUpCached: 1
        case .connectivityLost: 2
        case .helperClaimed: 3
        case .noHelperClaimed: 4
        case .maintainTimerFired: 5
        case .logoffAccepted: 6
        case .failureHandled: 7
        case .result(let c, let o):
            8 + c.rawValue * Outcome.allCases.count + o.ordinal
        }
    }

    static let indexCount = 8 + CommandType.allCases.count * Outcome.allCases.count
}

/// What a transition does besides changing state (docs/SPEC.md's "also" column).
public enum TransitionAction: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case cacheBestHelper = "cache best_helper"
    case cacheNotCaptive = "cache \"not captive\""
    case excludeBestHelper = "add best_helper to exclude_list"
    case uncacheBestHelper = "drop its cache entry"
    case disableAutoJoin = "disable auto-join for the network"
    case disassociate = "disassociate"

    public var description: String { rawValue }
}

/// What a state does on entry (docs/SPEC.md's "action on entry" column).
public enum EntryAction: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case clearBestHelper = "clear best_helper"
    case clearExcludeList = "clear exclude_list"
    case suppressIP = "IP suppressed"
    case releaseIP = "IP no longer suppressed"
    case sendEvaluate = "send evaluate to each helper not excluded"
    case sendAuthenticate = "send authenticate to best_helper"
    case awaitForeground = "send presentUI once best_helper is in the foreground"
    case armMaintainTimer = "arm the maintain timer"
    case sendMaintain = "send maintain to best_helper"
    case sendLogoff = "send logoff to best_helper"
    case disassociate = "disassociate, then Inactive"

    public var description: String { rawValue }
}

/// One row of the transition table.
public struct TransitionRow: Sendable, Hashable {
    /// nil: from any state.
    public var from: HotspotState?
    public var trigger: Trigger
    public var to: HotspotState
    public var actions: [TransitionAction]
    /// The row of docs/SPEC.md this encodes, as "Table: row"; tests are named after it.
    public var specRow: String

    public init(_ from: HotspotState?, _ trigger: Trigger, _ to: HotspotState, _ actions: [TransitionAction] = [], spec: String) {
        self.from = from
        self.trigger = trigger
        self.to = to
        self.actions = actions
        self.specRow = spec
    }
}

public enum TransitionTable {
    /// Every transition of docs/SPEC.md. Order matters only for printing.
    public static let rows: [TransitionRow] = [
        .init(.inactive, .ipUpNotCached, .evaluating, spec: "States: Evaluating entered when IP up and no cache entry names a helper"),
        .init(.inactive, .ipUpCached, .maintaining, spec: "Cached sequence: Inactive to Maintaining with didJustJoin"),

        .init(.evaluating, .helperClaimed, .authenticating, [.cacheBestHelper], spec: "Evaluating: a helper is chosen"),
        .init(.evaluating, .noHelperClaimed, .authenticated, [.cacheNotCaptive], spec: "Evaluating: no helper with low or high"),

        .init(.authenticating, .result(.authenticate, .success), .authenticated, [.cacheBestHelper], spec: "Authenticating: success"),
        .init(.authenticating, .result(.authenticate, .uiRequired), .presentingUI, spec: "Authenticating: uiRequired"),
        .init(.authenticating, .result(.authenticate, .unsupportedNetwork), .evaluating, [.excludeBestHelper, .uncacheBestHelper], spec: "Authenticating: unsupportedNetwork"),
        .init(.authenticating, .result(.authenticate, .temporaryFailure), .failure, spec: "Authenticating: temporaryFailure"),
        .init(.authenticating, .result(.authenticate, .failure), .failure, [.disableAutoJoin], spec: "Authenticating: failure, anything else, no answer"),

        .init(.presentingUI, .result(.presentUI, .success), .authenticated, [.cacheBestHelper], spec: "PresentingUI: success"),
        .init(.presentingUI, .result(.presentUI, .unsupportedNetwork), .evaluating, [.excludeBestHelper, .uncacheBestHelper], spec: "PresentingUI: unsupportedNetwork"),
        .init(.presentingUI, .result(.presentUI, .temporaryFailure), .failure, spec: "PresentingUI: temporaryFailure"),
        .init(.presentingUI, .result(.presentUI, .failure), .failure, [.disableAutoJoin], spec: "PresentingUI: failure, anything else, no answer"),

        .init(.authenticated, .maintainTimerFired, .maintaining, spec: "Maintaining entered when the maintain timer fired"),
        .init(.authenticated, .logoffAccepted, .loggingOff, spec: "LoggingOff entered when best_helper called logoff(network) successfully"),

        .init(.maintaining, .result(.maintain, .success), .authenticated, spec: "Maintaining: success"),
        .init(.maintaining, .result(.maintain, .authenticationRequired), .authenticating, spec: "Maintaining: authenticationRequired"),
        .init(.maintaining, .result(.maintain, .temporaryFailure), .evaluating, spec: "Maintaining: anything else, no answer (temporaryFailure)"),
        .init(.maintaining, .result(.maintain, .failure), .evaluating, spec: "Maintaining: anything else, no answer"),

        .init(.loggingOff, .result(.logoff, .success), .inactive, [.disassociate], spec: "LoggingOff: on the helper's answer (success)"),
        .init(.loggingOff, .result(.logoff, .failure), .inactive, [.disassociate], spec: "LoggingOff: on the helper's answer (failure), or 45 s without one"),

        .init(.failure, .failureHandled, .inactive, spec: "Failure: disassociate; go to Inactive"),

        .init(nil, .connectivityLost, .inactive, spec: "Any state: losing IP connectivity or association goes to Inactive"),
    ]

    /// What each state does on entry.
    public static let entryActions: [HotspotState: [EntryAction]] = [
        .inactive: [.clearBestHelper, .clearExcludeList, .suppressIP],
        .evaluating: [.clearBestHelper, .suppressIP, .sendEvaluate],
        .authenticating: [.suppressIP, .sendAuthenticate],
        .presentingUI: [.awaitForeground],
        .authenticated: [.releaseIP, .armMaintainTimer],
        .maintaining: [.sendMaintain],
        .loggingOff: [.suppressIP, .sendLogoff],
        .failure: [.disassociate],
    ]

    /// Decisions this implementation takes where docs/SPEC.md is silent (also in docs/DECISIONS.md).
    public static let decisions: [String] = [
        "A result not valid for the command counts as failure and is reported.",
        "A second response, or a response to a command never sent to that helper or past its deadline, is rejected and reported; it changes nothing.",
        "Evaluation ties go to the first helper to answer.",
        "A command addressed to a helper that is not registered counts as no answer at once.",
        "LoggingOff suppresses IP: the session is ending.",
        "IP stays released while Maintaining is entered from Authenticated (the maintain timer); it is suppressed in a Maintaining entered on join.",
        "The maintain timer is armed only when a helper was chosen (a network cached as not captive has no one to maintain it).",
        "Every transition withdraws the commands the state left was still waiting for; a later answer to one is rejected as withdrawn.",
        "A helper that registers during Evaluating is not sent evaluate; it takes part from the next evaluation on.",
        "presentUI is sent at once on entering PresentingUI when best_helper is already in the foreground.",
        "A join the user chose by hand (didAutoJoin false) enables auto-join again for that network.",
        "filterScanList: networks not in the presented list are ignored and reported; where two helpers claim a network, the first answer annotates it.",
        "A helper that goes away with a command outstanding gave no answer: it counts at once, without waiting for the deadline.",
        "A response from a helper that is not registered is rejected; a deadline for a command no longer outstanding is a stale timer and is ignored.",
        "logoff(network) is accepted only in the Authenticated state, not while Maintaining.",
        "In PresentingUI, presentUI waits with no time limit until best_helper is registered and in the foreground; it is sent once.",
        "IP up on a network cached as \"not captive\" evaluates again: only a cache entry naming a helper skips Evaluating.",
        "A failed maintain goes to Evaluating without dropping the cache entry; the new evaluation overwrites it.",
        "A change of signal strength updates the associated network without a transition; commands sent after it carry the new strength, commands already sent keep theirs.",
        "A move to another BSSID of the same network (a roam) is a new association: the old one is lost, so Inactive, and IP up on the new one follows the cached sequence.",
    ]

    /// `entryActions` as bit sets indexed by `HotspotState.index`: no hashing and no array to retain on
    /// the hot path. Bits are carried out in declaration order, which is each list's order (checked).
    static let entryActionMasks: [UInt16] = HotspotState.allCases.map { state in
        mask(entryActions[state] ?? [], all: EntryAction.allCases, what: "entry actions of \(state)")
    }

    /// The rows' targets and actions (as bit sets, see `entryActionMasks`), so a transition copies no row.
    static let rowTargets: [HotspotState] = rows.map(\.to)
    static let rowActionMasks: [UInt16] = rows.map { mask($0.actions, all: TransitionAction.allCases, what: $0.specRow) }

    static func mask<A: Equatable>(_ actions: [A], all: [A], what: String) -> UInt16 {
        precondition(all.count <= 16)
        let bits = actions.map { all.firstIndex(of: $0)! }
        precondition(bits == bits.sorted() && Set(bits).count == bits.count, "\(what): list actions in declaration order, once each")
        return bits.reduce(0) { $0 | (1 << $1) }
    }

    /// Lookup: state index * trigger count + trigger index -> row index, -1 for none.
    static let lookup: [Int] = {
        let states = HotspotState.allCases
        var table = [Int](repeating: -1, count: states.count * Trigger.indexCount)
        for (rowIndex, row) in rows.enumerated() {
            let froms = row.from.map { [$0] } ?? states
            for from in froms {
                let slot = states.firstIndex(of: from)! * Trigger.indexCount + row.trigger.index
                precondition(table[slot] == -1, "two rows for \(from) on \(row.trigger)")
                table[slot] = rowIndex
            }
        }
        return table
    }()

    /// The row for `trigger` in `state`, nil if the trigger does nothing there.
    public static func row(from state: HotspotState, on trigger: Trigger) -> TransitionRow? {
        let i = lookupIndex(from: state, on: trigger)
        return i < 0 ? nil : rows[i]
    }

    @inline(__always)
    static func lookupIndex(from state: HotspotState, on trigger: Trigger) -> Int {
        lookup[state.index * Trigger.indexCount + trigger.index]
    }
}

extension HotspotState {
    /// Hashes the case, not the raw value string: the machine keys tables by state on its hot path.
    public func hash(into hasher: inout Hasher) { hasher.combine(index) }

    @inline(__always)
    var index: Int {
        switch self {
        case .inactive: 0
        case .evaluating: 1
        case .authenticating: 2
        case .presentingUI: 3
        case .authenticated: 4
        case .maintaining: 5
        case .loggingOff: 6
        case .failure: 7
        }
    }
}
