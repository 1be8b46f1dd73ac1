// Apple's NetworkExtension spellings on top of HotspotHelper: a handler written for NEHotspotHelper compiles
// with `import NetworkExtension` replaced by `import NEHotspotHelperCompat`.
@_exported import Dispatch
@_exported import Foundation
@_exported import HotspotHelper

public typealias NEHotspotHelperCommandType = HotspotHelperCommandType
public typealias NEHotspotHelperResult = HotspotHelperResult
public typealias NEHotspotHelperConfidence = HotspotHelperConfidence
public typealias NEHotspotNetwork = HotspotNetwork
public typealias NEHotspotHelperCommand = HotspotHelperCommand
public typealias NEHotspotHelperResponse = HotspotHelperResponse
public typealias NEHotspotHelperHandler = (NEHotspotHelperCommand) -> Void

/// The display name option (a String, 1 to 15 characters).
public let kNEHotspotHelperOptionDisplayName = "kNEHotspotHelperOptionDisplayName"
/// Not Apple's: the helper's identifier (default: $HOTSPOT_HELPER_IDENTIFIER, else the program name).
public let kHotspotHelperOptionIdentifier = "kHotspotHelperOptionIdentifier"
/// Not Apple's: hotspotd's helper socket (default: $HOTSPOT_HELPER_SOCKET, else /run/hotspotd/helper.sock).
public let kHotspotHelperOptionSocketPath = "kHotspotHelperOptionSocketPath"

/// `NEHotspotHelper`: register, logoff, supportedNetworkInterfaces.
open class NEHotspotHelper {
    /// Registers the process as a helper; false on a second call, a bad display name or no daemon.
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
        let name = string(kNEHotspotHelperOptionDisplayName) ?? ""
        return HotspotHelper.register(
            options: HotspotHelperOptions(displayName: name, identifier: string(kHotspotHelperOptionIdentifier),
                                          socketPath: string(kHotspotHelperOptionSocketPath)),
            queue: queue, handler: handler)
    }

    open class func logoff(_ network: NEHotspotNetwork) -> Bool {
        HotspotHelper.logoff(network)
    }

    open class func supportedNetworkInterfaces() -> [NEHotspotNetwork] {
        HotspotHelper.supportedNetworkInterfaces()
    }
}
