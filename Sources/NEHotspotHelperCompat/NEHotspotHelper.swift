// Apple's NetworkExtension spellings on top of HotspotHelper: a handler written for NEHotspotHelper compiles
// with `import NetworkExtension` replaced by `import NEHotspotHelperCompat`.
@_exported import Dispatch
@_exported import Foundation
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif
@_exported import HotspotHelper
@_spi(Compat) import HotspotHelper

/// The kind of a command (filterScanList, evaluate, authenticate, presentUI, maintain, logoff); the SDK's
/// `HotspotHelperCommandType`, with Apple's raw values.
public typealias NEHotspotHelperCommandType = HotspotHelperCommandType
/// A command's result (success, failure, uiRequired, ...); the SDK's `HotspotHelperResult`, with Apple's raw values.
public typealias NEHotspotHelperResult = HotspotHelperResult
/// How sure the helper is that it can sign in to a network (none, low, high); the SDK's `HotspotHelperConfidence`.
public typealias NEHotspotHelperConfidence = HotspotHelperConfidence
/// A Wi-Fi network as a command carries it (SSID, BSSID, security, signal); the SDK's `HotspotNetwork`.
public typealias NEHotspotNetwork = HotspotNetwork
/// A network's security (open, WEP, personal, enterprise, unknown); the SDK's `HotspotNetworkSecurityType`, with
/// Apple's raw values.
public typealias NEHotspotNetworkSecurityType = HotspotNetworkSecurityType
/// One command from hotspotd, to be answered once with a response made by `createResponse(_:)`; the SDK's
/// `HotspotHelperCommand`.
public typealias NEHotspotHelperCommand = HotspotHelperCommand
/// The answer to one command; the SDK's `HotspotHelperResponse`. A provider returns it from `handleCommand(_:)`.
public typealias NEHotspotHelperResponse = HotspotHelperResponse
/// The closure a legacy helper registers: called on the registration's queue for every command.
public typealias NEHotspotHelperHandler = (NEHotspotHelperCommand) -> Void

/// The display name option (a String, 1 to 15 characters).
public let kNEHotspotHelperOptionDisplayName = "kNEHotspotHelperOptionDisplayName"
/// Not Apple's: the helper's identifier (default: $HOTSPOT_HELPER_IDENTIFIER, else the program name).
public let kHotspotHelperOptionIdentifier = "kHotspotHelperOptionIdentifier"
/// Not Apple's: hotspotd's helper socket (default: $HOTSPOT_HELPER_SOCKET, else /run/hotspotd/helper.sock).
public let kHotspotHelperOptionSocketPath = "kHotspotHelperOptionSocketPath"

/// Apple's deprecation text for the legacy API (NEHotspotHelper is available iOS 9.0–26.0).
let legacyDeprecation = "NEHotspotHelper is deprecated (iOS 9.0–26.0): adopt NEHotspotManager with an NEHotspotEvaluationProvider and an NEHotspotAuthenticationProvider (docs/PROVIDERS.md)"

/// `NEHotspotHelper`: register, logoff, supportedNetworkInterfaces. Deprecated as Apple deprecates it (available
/// iOS 9.0–26.0); on Linux there is no iOS version to name, so it is deprecated outright. It keeps working.
@available(*, deprecated, message: "NEHotspotHelper is deprecated (iOS 9.0–26.0): adopt NEHotspotManager with an NEHotspotEvaluationProvider and an NEHotspotAuthenticationProvider (docs/PROVIDERS.md)")
open class NEHotspotHelper {
    /// Registers the process as a helper; false on a second call, a bad display name (empty or longer than 15
    /// characters) or no daemon. Without a display name option, the program's name is the display name.
    @discardableResult
    open class func register(options: [String: NSObject]? = nil, queue: DispatchQueue,
                             handler: @escaping NEHotspotHelperHandler) -> Bool
    {
        func string(_ key: String) -> String? {
            guard let value = options?[key] else { return nil }
            if let s = value as? String { return s }
            if let s = value as? NSString { return String(describing: s) }
            return nil
        }
        // As Apple: without kNEHotspotHelperOptionDisplayName the application's name is shown (here the
        // program's name, cut to the 15 characters a display name may have).
        let name = string(kNEHotspotHelperOptionDisplayName) ?? String(ProcessInfo.processInfo.processName.prefix(15))
        return HotspotHelper.register(
            options: HotspotHelperOptions(displayName: name, identifier: string(kHotspotHelperOptionIdentifier),
                                          socketPath: string(kHotspotHelperOptionSocketPath)),
            queue: queue, handler: handler)
    }

    open class func logoff(_ network: NEHotspotNetwork) -> Bool {
        HotspotHelper.logoff(network)
    }

    /// Apple's signature: `[Any]?` holding `NEHotspotNetwork`s (`supportedNetworkInterfaces()?.first as?
    /// NEHotspotNetwork`). The current network, with `isChosenHelper` true only for the chosen helper; an empty
    /// array when not associated; nil when this process is not registered (or lost hotspotd).
    open class func supportedNetworkInterfaces() -> [Any]? {
        guard HotspotHelper.isConnected else { return nil }
        return HotspotHelper.supportedNetworkInterfaces()
    }
}

extension HotspotNetwork {
    /// `NEHotspotNetwork.fetchCurrent(completionHandler:)`: the network the device is associated with, or nil
    /// (not associated, or this process is not registered with hotspotd). The handler runs on a global queue.
    public static func fetchCurrent(completionHandler: @escaping @Sendable (NEHotspotNetwork?) -> Void) {
        DispatchQueue.global().async {
            completionHandler(HotspotHelper.isConnected ? HotspotHelper.supportedNetworkInterfaces().first : nil)
        }
    }

    /// `fetchCurrent()` in Swift concurrency.
    public static func fetchCurrent() async -> NEHotspotNetwork? {
        await withCheckedContinuation { continuation in
            fetchCurrent { continuation.resume(returning: $0) }
        }
    }
}

extension HotspotHelperResponse {
    /// `deliver()`, deprecated as Apple deprecates it in iOS 26 (a provider returns its response from
    /// `handleCommand` instead). It still sends the response, once.
    @available(*, deprecated, message: "NEHotspotHelperResponse.deliver() is deprecated (iOS 26): return the response from an NEHotspotAuthenticationProvider's or NEHotspotEvaluationProvider's handleCommand(_:) instead")
    @discardableResult
    public func deliver() -> Bool { deliverOnce() }
}
