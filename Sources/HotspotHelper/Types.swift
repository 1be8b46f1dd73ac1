#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import HotspotCore
import HotspotProtocol
import HotspotSystem

/// The commands hotspotd sends (`NEHotspotHelperCommandType`), with Apple's raw values.
public enum HotspotHelperCommandType: Int, Sendable, CustomStringConvertible {
    case none = 0
    case filterScanList = 1
    case evaluate = 2
    case authenticate = 3
    case presentUI = 4
    case maintain = 5
    case logoff = 6

    public var description: String { CommandType(rawValue: rawValue)?.description ?? "none" }
}

/// A helper's answer (`NEHotspotHelperResult`).
public enum HotspotHelperResult: Int, Sendable, CustomStringConvertible {
    case success = 0
    case failure = 1
    case uiRequired = 2
    case commandNotRecognized = 3
    case authenticationRequired = 4
    case unsupportedNetwork = 5
    case temporaryFailure = 6

    public var description: String { HelperResult(rawValue: rawValue)?.description ?? "failure" }
}

/// How sure a helper is that it handles a network (`NEHotspotHelperConfidence`).
public enum HotspotHelperConfidence: Int, Sendable, CustomStringConvertible {
    case none = 0
    case low = 1
    case high = 2

    public var description: String { Confidence(rawValue: rawValue)?.description ?? "none" }
}

/// The security of a Wi-Fi network (`NEHotspotNetworkSecurityType`), with Apple's raw values. The lab's
/// networks are open, WPA2-PSK (personal) or WPA2-Enterprise; WEP and unknown exist for Apple's spelling.
public enum HotspotNetworkSecurityType: Int, Sendable, CustomStringConvertible {
    case open = 0
    case WEP = 1
    case personal = 2
    case enterprise = 3
    case unknown = 4

    init(_ security: SecurityType) {
        switch security {
        case .open: self = .open
        case .wpa2Personal: self = .personal
        case .wpa2Enterprise: self = .enterprise
        }
    }

    public var description: String {
        switch self {
        case .open: "open"
        case .WEP: "WEP"
        case .personal: "personal"
        case .enterprise: "enterprise"
        case .unknown: "unknown"
        }
    }
}

/// A Wi-Fi network as a helper sees it (`NEHotspotNetwork`). Read-only properties, plus the two setters
/// a helper may use: `setConfidence` (answering evaluate) and `setPassword` (answering filterScanList).
public final class HotspotNetwork: @unchecked Sendable, CustomStringConvertible {  // @unchecked: `wire` is touched only with `lock` held
    private let lock = Mutex()
    var wire: HotspotCore.HotspotNetwork

    init(_ network: HotspotCore.HotspotNetwork) { wire = network }

    /// The SSID as text, as Apple's: bytes that are not UTF-8 read as U+FFFD (display only; two networks may
    /// share it). The network's identity is `ssidData`, and answers carry the bytes back whatever this reads.
    public var ssid: String { wire.ssid }
    /// The SSID's bytes (IEEE 802.11: any 0-32 octets), as CoreWLAN's `ssidData`.
    public var ssidData: [UInt8] { wire.rawSSID.bytes }
    public var bssid: String { wire.bssid }
    /// 0.0 ... 1.0
    public var signalStrength: Double { wire.signalStrength }
    public var isSecure: Bool { wire.isSecure }
    public var didAutoJoin: Bool { wire.didAutoJoin }
    public var didJustJoin: Bool { wire.didJustJoin }
    public var isChosenHelper: Bool { wire.isChosenHelper }
    /// The security type (`NEHotspotNetworkSecurityType`): open, personal (WPA2-PSK) or enterprise.
    public var securityType: HotspotNetworkSecurityType { HotspotNetworkSecurityType(wire.security) }
    /// The security type as the wire and the trace spell it: "open", "wpa2-psk" or "wpa2-enterprise".
    public var securityTypeName: String { wire.security.rawValue }
    public var confidence: HotspotHelperConfidence { HotspotHelperConfidence(rawValue: lock.withLock { wire.confidence.rawValue }) ?? .none }
    public var password: String? { lock.withLock { wire.password } }

    public func setConfidence(_ confidence: HotspotHelperConfidence) {
        lock.withLock { wire.confidence = Confidence(rawValue: confidence.rawValue) ?? .none }
    }

    public func setPassword(_ password: String) {
        lock.withLock { wire.password = password }
    }

    var snapshot: HotspotCore.HotspotNetwork { lock.withLock { wire } }

    public var description: String { "\(SSIDText.inline(wire.rawSSID)) (\(bssid))" }
}

/// A command from hotspotd (`NEHotspotHelperCommand`).
public final class HotspotHelperCommand: Sendable {
    public let commandType: HotspotHelperCommandType
    /// The network the command is about (all but filterScanList).
    public let network: HotspotNetwork?
    /// The presented scan list (filterScanList).
    public let networkList: [HotspotNetwork]?
    /// The daemon's id for this command.
    public let identifier: UInt64
    /// When the daemon stops waiting (nil: no deadline, presentUI).
    public let deadlineMilliseconds: Double?
    /// When the command arrived (CLOCK_MONOTONIC): the deadline counts from here.
    let receivedAt = SystemMonotonicClock.read()
    let client: HelperClient

    init(_ command: Command, client: HelperClient) {
        commandType = HotspotHelperCommandType(rawValue: command.type.rawValue) ?? .none
        network = command.network.map(HotspotNetwork.init)
        networkList = command.networkList?.map(HotspotNetwork.init)
        identifier = command.id
        deadlineMilliseconds = command.deadline.map { Double($0.components.seconds) * 1000 + Double($0.components.attoseconds) / 1e15 }
        self.client = client
    }

    /// Whether the daemon withdrew the command (another helper won the evaluation, or the state was left).
    public var isCancelled: Bool { client.isCancelled(identifier) }

    public func createResponse(_ result: HotspotHelperResult) -> HotspotHelperResponse {
        HotspotHelperResponse(command: self, result: result)
    }
}

/// Why a call into the SDK failed.
public struct HotspotHelperError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The answer to one command (`NEHotspotHelperResponse`). Deliver it exactly once.
public final class HotspotHelperResponse: @unchecked Sendable {  // @unchecked: the network, list and `delivered` are touched only with `lock` held
    public let command: HotspotHelperCommand
    public let result: HotspotHelperResult
    private let lock = Mutex()
    private var network: HotspotNetwork?
    private var networkList: [HotspotNetwork]?
    private var delivered = false

    init(command: HotspotHelperCommand, result: HotspotHelperResult) {
        self.command = command
        self.result = result
    }

    /// The network with its confidence (evaluate).
    public func setNetwork(_ network: HotspotNetwork) { lock.withLock { self.network = network } }

    /// The networks this helper handles, with passwords for secure ones (filterScanList).
    public func setNetworkList(_ networkList: [HotspotNetwork]) { lock.withLock { self.networkList = networkList } }

    /// Sends the response. A second call, or a call after hotspotd withdrew the command (`isCancelled`), is an
    /// error: it sends no response, returns false and is reported (a `report` message to hotspotd, which traces
    /// it as `helperReport`; stderr; `HotspotHelper.lastError`). Also false when the daemon connection is gone.
    @discardableResult
    public func deliver() -> Bool { deliverOnce() }

    /// `deliver()` under another name, for the compat module (whose `deliver()` is deprecated as Apple's is).
    @_spi(Compat) @discardableResult
    public func deliverOnce() -> Bool {
        // A provider's response is delivered by the SDK's runtime; the provider's own call is refused and reported.
        if let gate = command.client.deliveryGate, !gate.admits(self) { return false }
        let (first, net, list) = lock.withLock { () -> (Bool, HotspotNetwork?, [HotspotNetwork]?) in
            let first = !delivered
            delivered = true
            return (first, network, networkList)
        }
        guard first else {
            command.client.sendReport(kind: .secondDelivery, command: command.identifier,
                                      message: "deliver() called a second time for \(command.commandType) command \(command.identifier): ignored")
            return false
        }
        guard !command.isCancelled else {
            command.client.sendReport(kind: .withdrawnCommand, command: command.identifier,
                                      message: "deliver() for \(command.commandType) command \(command.identifier), which hotspotd withdrew: not sent")
            return false
        }
        return command.client.respond(command.identifier, result: result, network: net?.snapshot, networkList: list?.map(\.snapshot))
    }
}
