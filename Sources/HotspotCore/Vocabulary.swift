// The vocabulary of docs/SPEC.md, with the raw values Apple's platform uses.

/// The commands the subsystem sends to helpers (`NEHotspotHelperCommandType`).
public enum CommandType: Int, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case none = 0
    case filterScanList = 1
    case evaluate = 2
    case authenticate = 3
    case presentUI = 4
    case maintain = 5
    case logoff = 6

    public var description: String {
        switch self {
        case .none: "none"
        case .filterScanList: "filterScanList"
        case .evaluate: "evaluate"
        case .authenticate: "authenticate"
        case .presentUI: "presentUI"
        case .maintain: "maintain"
        case .logoff: "logoff"
        }
    }

    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = match
    }

    /// The results docs/SPEC.md accepts for this command; any other result counts as failure and is reported.
    public var validResults: [HelperResult] {
        switch self {
        case .none: []
        case .filterScanList, .evaluate: [.success]
        case .authenticate: [.success, .uiRequired, .unsupportedNetwork, .temporaryFailure, .failure]
        case .presentUI: [.success, .unsupportedNetwork, .temporaryFailure, .failure]
        case .maintain: [.success, .authenticationRequired, .failure, .temporaryFailure]
        case .logoff: [.success, .failure]
        }
    }

    public func accepts(_ result: HelperResult) -> Bool {
        // A switch rather than `validResults.contains`: this runs on every response and must not allocate.
        switch (self, result) {
        case (.filterScanList, .success), (.evaluate, .success): true
        case (.authenticate, .success), (.authenticate, .uiRequired), (.authenticate, .unsupportedNetwork),
             (.authenticate, .temporaryFailure), (.authenticate, .failure): true
        case (.presentUI, .success), (.presentUI, .unsupportedNetwork), (.presentUI, .temporaryFailure),
             (.presentUI, .failure): true
        case (.maintain, .success), (.maintain, .authenticationRequired), (.maintain, .failure),
             (.maintain, .temporaryFailure): true
        case (.logoff, .success), (.logoff, .failure): true
        default: false
        }
    }
}

/// A helper's answer to a command (`NEHotspotHelperResult`).
public enum HelperResult: Int, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case success = 0
    case failure = 1
    case uiRequired = 2
    case commandNotRecognized = 3
    case authenticationRequired = 4
    case unsupportedNetwork = 5
    case temporaryFailure = 6

    public var description: String {
        switch self {
        case .success: "success"
        case .failure: "failure"
        case .uiRequired: "uiRequired"
        case .commandNotRecognized: "commandNotRecognized"
        case .authenticationRequired: "authenticationRequired"
        case .unsupportedNetwork: "unsupportedNetwork"
        case .temporaryFailure: "temporaryFailure"
        }
    }

    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = match
    }
}

/// How sure a helper is that it handles a network (`NEHotspotHelperConfidence`).
public enum Confidence: Int, Sendable, Hashable, Codable, CaseIterable, Comparable, CustomStringConvertible {
    case none = 0
    case low = 1
    case high = 2

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .none: "none"
        case .low: "low"
        case .high: "high"
        }
    }
}

/// The security of a Wi-Fi network. Part of a network's identity (SSID + security type).
public enum SecurityType: String, Sendable, Hashable, Codable, CaseIterable {
    case open
    case wpa2Personal = "wpa2-psk"
    case wpa2Enterprise = "wpa2-enterprise"

    public var isSecure: Bool { self != .open }

    /// Hashes the case, not the raw value string: part of every cache key.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .open: hasher.combine(0 as UInt8)
        case .wpa2Personal: hasher.combine(1 as UInt8)
        case .wpa2Enterprise: hasher.combine(2 as UInt8)
        }
    }
}

/// The states of the authentication state machine.
public enum HotspotState: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case inactive = "Inactive"
    case evaluating = "Evaluating"
    case authenticating = "Authenticating"
    case presentingUI = "PresentingUI"
    case authenticated = "Authenticated"
    case maintaining = "Maintaining"
    case loggingOff = "LoggingOff"
    case failure = "Failure"

    public var description: String { rawValue }
}

/// A helper's stable identity (its identifier, like a bundle identifier). The cache names helpers by it,
/// so it must survive restarts of the helper and of the daemon.
public typealias HelperID = String

/// A command's identity, unique within one daemon run. Assigned by the machine in increasing order.
public typealias CommandID = UInt64

/// A network's identity for the cache and the auto-join list: SSID (its bytes) plus security type.
public struct NetworkIdentity: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The SSID's bytes: what the identity compares.
    public var rawSSID: SSID
    public var security: SecurityType

    /// The SSID as text (lossy for bytes that are not UTF-8: display only); setting it sets its UTF-8 bytes.
    public var ssid: String {
        get { rawSSID.text }
        set { rawSSID = SSID(newValue) }
    }

    public init(ssid: String, security: SecurityType) {
        self.rawSSID = SSID(ssid)
        self.security = security
    }

    public init(rawSSID: SSID, security: SecurityType) {
        self.rawSSID = rawSSID
        self.security = security
    }

    public var description: String { "\(rawSSID.isUTF8 ? rawSSID.text : rawSSID.printable) (\(security.rawValue))" }
}

/// A network as a helper sees it (`NEHotspotNetwork`).
public struct HotspotNetwork: Sendable, Hashable, Codable {
    /// The SSID's bytes (IEEE 802.11: 0-32 arbitrary octets): the network's identity.
    public var rawSSID: SSID
    /// The SSID as text, as Apple's `NEHotspotNetwork.ssid`: lossy (U+FFFD) for bytes that are not UTF-8, so
    /// display only; setting it sets its UTF-8 bytes.
    public var ssid: String {
        get { rawSSID.text }
        set { rawSSID = SSID(newValue) }
    }
    public var bssid: String
    /// 0.0 ... 1.0
    public var signalStrength: Double
    public var security: SecurityType
    public var didAutoJoin: Bool
    public var didJustJoin: Bool
    public var isChosenHelper: Bool
    /// Set by a helper answering evaluate.
    public var confidence: Confidence
    /// Set by a helper answering filterScanList for a secure network.
    public var password: String?

    public var isSecure: Bool { security.isSecure }
    public var identity: NetworkIdentity { NetworkIdentity(rawSSID: rawSSID, security: security) }

    public init(
        ssid: String, bssid: String, signalStrength: Double = 1.0, security: SecurityType = .open,
        didAutoJoin: Bool = false, didJustJoin: Bool = false, isChosenHelper: Bool = false,
        confidence: Confidence = .none, password: String? = nil
    ) {
        self.init(rawSSID: SSID(ssid), bssid: bssid, signalStrength: signalStrength, security: security,
                  didAutoJoin: didAutoJoin, didJustJoin: didJustJoin, isChosenHelper: isChosenHelper,
                  confidence: confidence, password: password)
    }

    public init(
        rawSSID: SSID, bssid: String, signalStrength: Double = 1.0, security: SecurityType = .open,
        didAutoJoin: Bool = false, didJustJoin: Bool = false, isChosenHelper: Bool = false,
        confidence: Confidence = .none, password: String? = nil
    ) {
        self.rawSSID = rawSSID
        self.bssid = bssid
        self.signalStrength = signalStrength
        self.security = security
        self.didAutoJoin = didAutoJoin
        self.didJustJoin = didJustJoin
        self.isChosenHelper = isChosenHelper
        self.confidence = confidence
        self.password = password
    }

    /// Two networks are "the same entry of a scan list" when SSID (bytes) and BSSID match.
    public func sameEntry(as other: HotspotNetwork) -> Bool {
        rawSSID == other.rawSSID && Self.sameBSSID(bssid, other.bssid)
    }

    /// BSSIDs compare without regard to ASCII case ("02:AB:..." is "02:ab:..."), without allocating
    /// (`lowercased()` would make two new strings on every comparison).
    static func sameBSSID(_ a: String, _ b: String) -> Bool {
        if a == b { return true }
        var i = a.utf8.makeIterator(), j = b.utf8.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil): return true
            case (let x?, let y?):
                let lx = (x >= 0x41 && x <= 0x5A) ? x | 0x20 : x
                let ly = (y >= 0x41 && y <= 0x5A) ? y | 0x20 : y
                if lx != ly { return false }
            default: return false
            }
        }
    }
}

/// What the per-network cache remembers.
public enum CacheEntry: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The helper last chosen for the network.
    case helper(HelperID)
    /// Evaluated and no helper claimed it.
    case notCaptive

    public var helper: HelperID? {
        if case .helper(let id) = self { return id }
        return nil
    }

    public var description: String {
        switch self {
        case .helper(let id): "helper \(id)"
        case .notCaptive: "not captive"
        }
    }
}

/// The longest display name a helper may register with.
public let maximumDisplayNameLength = 15
