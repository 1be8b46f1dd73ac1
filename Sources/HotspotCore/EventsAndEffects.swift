/// What happened: everything the machine reacts to. The driver (hotspotd, or a test) produces these.
public enum Event: Sendable, Hashable {
    /// The interface associated with a network (not yet IP connectivity).
    case associated(HotspotNetwork)
    /// The interface lost its association.
    case disassociated
    /// The associated network's signal strength changed (0.0-1.0, clamped). No transition: the association
    /// keeps it, so commands sent from now on (and supportedNetworkInterfaces) carry it.
    case signalChanged(Double)
    /// The interface has IP connectivity (a lease) on the associated network.
    case ipUp
    /// The interface lost IP connectivity.
    case ipDown
    /// A helper process registered (identifier, display name).
    case helperRegistered(HelperID, displayName: String)
    /// A helper's process or session ended.
    case helperGone(HelperID)
    /// A helper answered a command.
    case response(Response)
    /// A command's deadline passed without an answer.
    case deadlinePassed(CommandID)
    /// The maintain timer armed on entering Authenticated fired.
    case maintainTimerFired
    /// A helper called `logoff(network)`.
    case logoffRequested(HelperID, network: NetworkIdentity)
    /// The user brought a helper to the foreground (nil: no helper is in the foreground).
    case foreground(HelperID?)
    /// The scan list is shown to the user (once per refresh while it is shown).
    case scanListShown([HotspotNetwork])
}

/// A helper's answer to one command.
public struct Response: Sendable, Hashable {
    public var helper: HelperID
    public var command: CommandID
    public var result: HelperResult
    /// The network the helper set (evaluate: with its confidence).
    public var network: HotspotNetwork?
    /// The networks the helper handles (filterScanList), with passwords for secure ones.
    public var networkList: [HotspotNetwork]?

    public init(
        helper: HelperID, command: CommandID, result: HelperResult,
        network: HotspotNetwork? = nil, networkList: [HotspotNetwork]? = nil
    ) {
        self.helper = helper
        self.command = command
        self.result = result
        self.network = network
        self.networkList = networkList
    }
}

/// A command the machine asks the driver to send.
public struct Command: Sendable, Hashable {
    public var id: CommandID
    public var type: CommandType
    public var helper: HelperID
    /// The network the command is about (all but filterScanList).
    public var network: HotspotNetwork?
    /// The presented scan list (filterScanList).
    public var networkList: [HotspotNetwork]?
    /// Scaled; nil means no deadline (presentUI).
    public var deadline: Duration?

    public init(
        id: CommandID, type: CommandType, helper: HelperID, network: HotspotNetwork? = nil,
        networkList: [HotspotNetwork]? = nil, deadline: Duration?
    ) {
        self.id = id
        self.type = type
        self.helper = helper
        self.network = network
        self.networkList = networkList
        self.deadline = deadline
    }
}

/// Why a message was rejected. A rejected message changes nothing.
public enum Rejection: Sendable, Hashable, CustomStringConvertible {
    /// The command was never sent (unknown id).
    case unknownCommand(CommandID, from: HelperID)
    /// The command was sent to another helper.
    case notYourCommand(CommandID, from: HelperID, sentTo: HelperID)
    /// The command was already answered.
    case duplicateResponse(CommandID, from: HelperID)
    /// The command's deadline had passed.
    case lateResponse(CommandID, from: HelperID)
    /// The command was withdrawn (state left, or another helper won the evaluation).
    case withdrawnCommand(CommandID, from: HelperID)
    /// A helper registered twice.
    case duplicateRegistration(HelperID)
    /// A display name longer than 15 characters, or empty.
    case invalidDisplayName(HelperID, String)
    /// A message from a helper that is not registered.
    case notRegistered(HelperID)

    public var description: String {
        switch self {
        case .unknownCommand(let id, let h): "response from \(h) to command \(id), which was never sent"
        case .notYourCommand(let id, let h, let to): "response from \(h) to command \(id), which was sent to \(to)"
        case .duplicateResponse(let id, let h): "second response from \(h) to command \(id)"
        case .lateResponse(let id, let h): "response from \(h) to command \(id) after its deadline"
        case .withdrawnCommand(let id, let h): "response from \(h) to command \(id), which was withdrawn"
        case .duplicateRegistration(let h): "helper \(h) registered a second time"
        case .invalidDisplayName(let h, let n): "helper \(h) display name \"\(n)\" is not 1 to \(maximumDisplayNameLength) characters"
        case .notRegistered(let h): "message from \(h), which is not registered"
        }
    }
}

/// A response that was accepted but not as the helper meant it.
public enum Irregularity: Sendable, Hashable, CustomStringConvertible {
    /// A result not valid for the command: counted as failure.
    case invalidResult(CommandID, CommandType, HelperResult, from: HelperID)
    /// No answer by the deadline (or the helper went away): counted as failure.
    case noAnswer(CommandID, CommandType, from: HelperID)
    /// filterScanList named a network that was not in the presented list: ignored.
    case unlistedNetwork(CommandID, ssid: SSID, bssid: String, from: HelperID)
    /// evaluate answered about a network other than the one evaluated: confidence none.
    case wrongNetwork(CommandID, ssid: SSID, from: HelperID)
    /// filterScanList claimed a secure network without setting its password: the claim is ignored.
    case securedWithoutPassword(CommandID, ssid: SSID, bssid: String, from: HelperID)

    public var description: String {
        switch self {
        case .invalidResult(let id, let t, let r, let h):
            "\(h) answered \(t) command \(id) with \(r), which is not valid for \(t): counted as failure"
        case .noAnswer(let id, let t, let h): "\(h) gave no answer to \(t) command \(id): counted as failure"
        case .unlistedNetwork(let id, let s, let b, let h):
            "\(h) claimed \(s) (\(b)) in filterScanList command \(id), which was not in the presented list: ignored"
        case .wrongNetwork(let id, let s, let h):
            "\(h) answered evaluate command \(id) about \(s), not the evaluated network: confidence none"
        case .securedWithoutPassword(let id, let s, let b, let h):
            "\(h) claimed the secure network \(s) (\(b)) in filterScanList command \(id) without a password: ignored"
        }
    }
}

/// A network of the scan list as the user sees it.
public struct AnnotatedNetwork: Sendable, Hashable {
    public var network: HotspotNetwork
    /// The display name of the helper that claimed it, if any.
    public var annotation: String?
    /// The helper whose claim annotates it.
    public var claimedBy: HelperID?
    /// The password that helper set (used to join).
    public var password: String?

    public init(network: HotspotNetwork, annotation: String? = nil, claimedBy: HelperID? = nil, password: String? = nil) {
        self.network = network
        self.annotation = annotation
        self.claimedBy = claimedBy
        self.password = password
    }
}

/// What the driver must do. Effects come out in the order they must be carried out.
public enum Effect: Sendable, Hashable {
    case transition(from: HotspotState, to: HotspotState)
    case send(Command)
    /// Stop waiting for a command (disarm its deadline); a later answer is rejected as withdrawn.
    case cancel(CommandID, helper: HelperID)
    case armMaintainTimer(Duration)
    case cancelMaintainTimer
    /// General traffic must not use the interface (a helper's traffic for its command still may).
    case suppressIP
    /// General traffic may use the interface.
    case releaseIP
    case disassociate
    case disableAutoJoin(NetworkIdentity)
    case enableAutoJoin(NetworkIdentity)
    case cache(NetworkIdentity, CacheEntry)
    case uncache(NetworkIdentity)
    /// The cache held `limit` entries: the least recently used one was dropped (persist it like `uncache`).
    case cacheEvicted(NetworkIdentity, limit: Int)
    case rejected(Rejection)
    case irregular(Irregularity)
    /// The answer to `logoffRequested`.
    case logoffAnswer(HelperID, accepted: Bool)
    /// A scan-list round finished: the list as shown to the user.
    case scanListAnnotated([AnnotatedNetwork])
}
