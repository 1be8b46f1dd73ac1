import HotspotProtocol
import HotspotCore
import Netlink
import PortalKinds

/// A lab topology: hotspots (radio + gateway + portal), the shared "internet" and the stations.
/// Parsed and validated by `TopologyParser`; nothing is created from a topology that failed validation.
/// The schema is documented in docs/TOPOLOGY.md.
public struct Topology: Sendable, Equatable {
    /// Short name (from the file's `name:`); used in namespace and log names.
    public var name: String
    /// The file it came from (for messages).
    public var file: String
    public var internet: Internet
    public var hotspots: [Hotspot]
    public var stations: [Station]

    public init(name: String, file: String, internet: Internet, hotspots: [Hotspot], stations: [Station]) {
        self.name = name
        self.file = file
        self.internet = internet
        self.hotspots = hotspots
        self.stations = stations
    }
}

/// A DNS name and the address the lab's DNS gives it (`internet: hosts:`).
public struct HostAddress: Sendable, Equatable {
    public var name: String
    public var address: IPv4Address
    public init(name: String, address: IPv4Address) {
        self.name = name
        self.address = address
    }
}

/// The shared upstream namespace: probe endpoints and a plain web server.
public struct Internet: Sendable, Equatable {
    /// Where the probe and web servers listen (inside 198.18.0.0/15).
    public var address: IPv4Address
    /// Carved into one /30 per hotspot for the hotspot <-> internet links.
    public var uplinks: IPv4Subnet
    /// Host names that resolve to `address` inside the lab (probe hosts and general sites).
    public var names: [String]
    public var port: Int
    /// A vendor's backend: responses by host and path (`internet: services:`), checked before the probe endpoints.
    public var services: [InternetRoute]
    /// Names the topology maps elsewhere than the internet (`internet: hosts:`), in file order: every hotspot's
    /// DNS answers them with their address (every other name resolves to `address`).
    public var hosts: [HostAddress]

    /// 198.18.0.1, the internet's address unless the topology says otherwise.
    public static let defaultAddress = IPv4Address(value: 0xC612_0001)
    /// 203.0.113.0/24, the uplinks' range unless the topology says otherwise.
    public static let defaultUplinks = IPv4Subnet(network: IPv4Address(value: 0xCB00_7100), length: 24)

    public static let defaultNames = [
        "captive.apple.com", "www.apple.com", "connectivitycheck.gstatic.com",
        "clients3.google.com", "connectivitycheck.android.com", "detectportal.firefox.com",
        "www.msftconnecttest.com", "example.com", "www.example.com",
    ]

    public init(address: IPv4Address, uplinks: IPv4Subnet, names: [String], port: Int = 80, services: [InternetRoute] = [],
                hosts: [HostAddress] = []) {
        self.hosts = hosts
        self.address = address
        self.uplinks = uplinks
        self.names = names
        self.port = port
        self.services = services
    }

    /// The /30 for hotspot number `index`: (internet side, hotspot side).
    public func uplink(_ index: Int) -> (internet: IPv4Address, hotspot: IPv4Address) {
        let base = uplinks.network.value &+ UInt32(index * 4)
        return (IPv4Address(value: base + 1), IPv4Address(value: base + 2))
    }
}

public enum EAPMethod: String, Sendable, Equatable, CaseIterable {
    /// EAP-pwd: password-only, no certificates.
    case pwd
    /// PEAP/MSCHAPv2: the lab generates a throwaway CA and server certificate.
    case peap
}

public struct EAPUser: Sendable, Equatable {
    public var identity: String
    public var password: String
    public init(identity: String, password: String) {
        self.identity = identity
        self.password = password
    }
}

public enum Security: Sendable, Equatable {
    case open
    case wpa2PSK(passphrase: String)
    /// WPA2-Enterprise served by hostapd's internal EAP server.
    case wpa2Enterprise(method: EAPMethod, users: [EAPUser])

    public var kindName: String {
        switch self {
        case .open: return "open"
        case .wpa2PSK: return "wpa2-psk"
        case .wpa2Enterprise: return "wpa2-enterprise"
        }
    }

    public var isSecure: Bool { self != .open }
}

/// The captive portal a gateway runs. `kind` is one of `PortalCatalog.kinds`.
public struct PortalSettings: Sendable, Equatable {
    public var kind: String
    /// TCP port of the portal server on the gateway address.
    public var port: Int
    /// Kind-specific settings (username, password, voucher, delay-seconds, ...), as strings.
    public var settings: [String: String]

    public init(kind: String, port: Int = 8080, settings: [String: String] = [:]) {
        self.kind = kind
        self.port = port
        self.settings = settings
    }
}

public enum CaptiveAPI: Sendable, Equatable {
    /// No DHCP option 114.
    case none
    /// Option 114 carries this URI (RFC 8910).
    case uri(String)
}

public struct Gateway: Sendable, Equatable {
    public var subnet: IPv4Subnet
    public var address: IPv4Address
    public var dhcpStart: IPv4Address
    public var dhcpEnd: IPv4Address
    /// DNS servers handed out by DHCP (the gateway's dnsmasq by default).
    public var dns: [IPv4Address]
    public var captiveAPI: CaptiveAPI
    /// nil: not captive (clients are let through at once).
    public var portal: PortalSettings?
    /// How long a login lasts (the gate's set timeout).
    public var sessionSeconds: Int
    public var leaseSeconds: Int
    /// The IP families the LAN offers (`ip:`); `.v4` unless the topology says otherwise.
    public var ip: IPFamilies = .v4
    /// The LAN's IPv6 prefix and gateway address (`ipv6-prefix:`); nil on an IPv4-only LAN.
    public var ipv6: GatewayIPv6?

    public init(
        subnet: IPv4Subnet, address: IPv4Address, dhcpStart: IPv4Address, dhcpEnd: IPv4Address,
        dns: [IPv4Address], captiveAPI: CaptiveAPI, portal: PortalSettings?, sessionSeconds: Int,
        leaseSeconds: Int = 3600
    ) {
        self.subnet = subnet
        self.address = address
        self.dhcpStart = dhcpStart
        self.dhcpEnd = dhcpEnd
        self.dns = dns
        self.captiveAPI = captiveAPI
        self.portal = portal
        self.sessionSeconds = sessionSeconds
        self.leaseSeconds = leaseSeconds
    }

    public var portalURL: String? {
        portal.map { "http://\(portalHost):\($0.port)/" }
    }
}

/// Per-hotspot faults from the start (the same faults are scenario steps during a run, docs/REPLAY.md).
public struct Faults: Sendable, Equatable {
    /// The uplink to the internet is down (the gateway has no route out).
    public var uplinkDown: Bool = false
    /// How the hotspot's DNS answers from the start (`DNSAnswerMode.names`; nil: normal). `dns-down: true`
    /// is `refused`.
    public var dns: String?
    public var dnsDown: Bool { dns == "refused" }
    /// Extra latency on the uplink, milliseconds.
    public var latencyMS: Int = 0
    /// Packet loss on the uplink, percent.
    public var lossPercent: Int = 0
    /// Jitter on the uplink's latency, milliseconds.
    public var jitterMS: Int = 0
    /// A rate limit on the uplink, kbit/s (0: none).
    public var rateKbit: Int = 0
    public init() {}
}

/// One access point (radio + hostapd) of a hotspot: its BSSID and channel. Every access point of a
/// hotspot serves the hotspot's SSID and security on the same LAN (one gateway, dnsmasq, gate and portal).
public struct AccessPoint: Sendable, Equatable {
    public var bssid: MACAddressText
    public var channel: Int
    public init(bssid: MACAddressText, channel: Int) {
        self.bssid = bssid
        self.channel = channel
    }

    /// Frequency in MHz of the 2.4 GHz (1-14) or 5 GHz channel.
    public var frequency: Int { Hotspot.frequency(channel: channel) }
}

public struct Hotspot: Sendable, Equatable {
    /// Short identifier (letters, digits, '-'), unique in the topology.
    public var name: String
    /// The SSID's bytes (topology `ssid:` as UTF-8, or `ssid_hex:`): what hostapd serves.
    public var rawSSID: SSID
    /// The SSID as text (lossy for bytes that are not UTF-8; display only). Setting it sets its UTF-8 bytes.
    public var ssid: String {
        get { rawSSID.text }
        set { rawSSID = SSID(newValue) }
    }
    /// The first access point's BSSID and channel.
    public var bssid: MACAddressText
    public var channel: Int
    public var hidden: Bool
    public var security: Security
    public var gateway: Gateway
    public var faults: Faults
    /// More access points of the same SSID on the same LAN (topology `access-points:`), for roaming.
    public var extraAccessPoints: [AccessPoint]

    public init(
        name: String, ssid: String, bssid: MACAddressText, channel: Int, hidden: Bool,
        security: Security, gateway: Gateway, faults: Faults = Faults(), extraAccessPoints: [AccessPoint] = []
    ) {
        self.init(name: name, rawSSID: SSID(ssid), bssid: bssid, channel: channel, hidden: hidden, security: security,
                  gateway: gateway, faults: faults, extraAccessPoints: extraAccessPoints)
    }

    public init(
        name: String, rawSSID: SSID, bssid: MACAddressText, channel: Int, hidden: Bool,
        security: Security, gateway: Gateway, faults: Faults = Faults(), extraAccessPoints: [AccessPoint] = []
    ) {
        self.name = name
        self.rawSSID = rawSSID
        self.bssid = bssid
        self.channel = channel
        self.hidden = hidden
        self.security = security
        self.gateway = gateway
        self.faults = faults
        self.extraAccessPoints = extraAccessPoints
    }

    /// Every access point: the first (`bssid`, `channel`), then `extraAccessPoints`.
    public var accessPoints: [AccessPoint] { [AccessPoint(bssid: bssid, channel: channel)] + extraAccessPoints }

    /// This hotspot as its access point `ap` serves it (the BSSID and channel of that access point).
    public func served(by ap: AccessPoint) -> Hotspot {
        var copy = self
        copy.bssid = ap.bssid
        copy.channel = ap.channel
        return copy
    }

    /// wpa_supplicant's `scan_freq`: every access point's frequency, once each, space-separated.
    public var scanFrequencies: String { Self.uniqueFrequencies(accessPoints).map(String.init).joined(separator: " ") }

    /// The access points' frequencies, once each, in the order they first appear (what a scan asks for).
    public static func uniqueFrequencies(_ accessPoints: [AccessPoint]) -> [Int] {
        var seen: [Int] = []
        for f in accessPoints.map(\.frequency) where !seen.contains(f) { seen.append(f) }
        return seen
    }

    /// Frequency in MHz of the first access point's channel.
    public var frequency: Int { Self.frequency(channel: channel) }

    /// Frequency in MHz of the 2.4 GHz (1-14) or 5 GHz channel.
    public static func frequency(channel: Int) -> Int {
        if channel == 14 { return 2484 }
        if channel <= 13 { return 2407 + 5 * channel }
        return 5000 + 5 * channel
    }
}

public struct KnownNetwork: Sendable, Equatable {
    /// The SSID's bytes (`ssid:` as UTF-8, or `ssid_hex:`).
    public var rawSSID: SSID
    /// The SSID as text (lossy for bytes that are not UTF-8; display only). Setting it sets its UTF-8 bytes.
    public var ssid: String {
        get { rawSSID.text }
        set { rawSSID = SSID(newValue) }
    }
    public var psk: String?
    public var identity: String?
    public var password: String?
    public var autoJoin: Bool
    public init(ssid: String, psk: String? = nil, identity: String? = nil, password: String? = nil, autoJoin: Bool = true) {
        self.init(rawSSID: SSID(ssid), psk: psk, identity: identity, password: password, autoJoin: autoJoin)
    }
    public init(rawSSID: SSID, psk: String? = nil, identity: String? = nil, password: String? = nil, autoJoin: Bool = true) {
        self.rawSSID = rawSSID
        self.psk = psk
        self.identity = identity
        self.password = password
        self.autoJoin = autoJoin
    }
}

public struct Station: Sendable, Equatable {
    public var name: String
    /// Helper executables (product names such as `hotspot-helper-portal`) the station runs.
    public var helpers: [String]
    public var knownNetworks: [KnownNetwork]
    /// The apps installed on the station (`apps:`): legacy helper apps and provider pairs, with their manager
    /// configuration. The lab writes the providers to hotspotd's `--apps` file and sets each manager.
    public var apps: [StationApp]
    public init(name: String, helpers: [String], knownNetworks: [KnownNetwork], apps: [StationApp] = []) {
        self.name = name
        self.helpers = helpers
        self.knownNetworks = knownNetworks
        self.apps = apps
    }

    /// The helper command lines the station runs: `helpers:`, then each legacy helper app's (`StationApp.helperCommand`).
    public var helperCommands: [String] { helpers + apps.compactMap(\.helperCommand) }
}

/// One provider an app declares in a topology: its identifier (a bundle identifier) and its command line
/// (words as in `helpers:`; a product name is found in the build folder).
public struct StationProvider: Sendable, Equatable {
    public var identifier: String
    public var command: String
    public init(identifier: String, command: String) {
        self.identifier = identifier
        self.command = command
    }
}

/// An app installed on a station (`stations[].apps[]`, docs/TOPOLOGY.md "Apps"): either a legacy helper app
/// (`helper:`, run with `HOTSPOT_HELPER_IDENTIFIER` = the bundle identifier) or a provider pair (one or both
/// roles), with its `NEHotspotManager` configuration.
public struct StationApp: Sendable, Equatable {
    public var bundleIdentifier: String
    public var displayName: String
    /// A legacy `NEHotspotHelper` app's helper command line; nil for a provider app.
    public var helper: String?
    public var evaluationProvider: StationProvider?
    public var authenticationProvider: StationProvider?
    /// The manager configuration the lab sets when the station comes up; nil: never configured (not enabled).
    public var manager: ManagerConfiguration?

    public init(bundleIdentifier: String, displayName: String, helper: String? = nil, evaluationProvider: StationProvider? = nil,
                authenticationProvider: StationProvider? = nil, manager: ManagerConfiguration? = nil) {
        self.bundleIdentifier = bundleIdentifier
        self.displayName = displayName
        self.helper = helper
        self.evaluationProvider = evaluationProvider
        self.authenticationProvider = authenticationProvider
        self.manager = manager
    }

    public var hasProviders: Bool { evaluationProvider != nil || authenticationProvider != nil }

    /// A legacy helper app's command line as the station runs it: `HOTSPOT_HELPER_IDENTIFIER=<bundle id> CMD` (the
    /// SDK's default identifier; a helper that sets its own, `--identifier`, must set the app's).
    public var helperCommand: String? { helper.map { "HOTSPOT_HELPER_IDENTIFIER=\(bundleIdentifier) \($0)" } }

    /// The default display name: the bundle identifier's last component, cut to hotspotd's 15 characters.
    public static func defaultDisplayName(_ bundleIdentifier: String) -> String {
        String((bundleIdentifier.split(separator: ".").last.map(String.init) ?? bundleIdentifier).prefix(15))
    }
}

/// The portal kinds, read from their one definition (`PortalRegistry` in PortalKinds, the `portals/` folder).
public enum PortalCatalog {
    /// Every kind's name, in the registry's order.
    public static var kinds: [String] { PortalRegistry.names }
    /// Kinds a person (or helper) can log into.
    public static var loginKinds: Set<String> { Set(PortalRegistry.loginNames) }
    /// The kind's definition (settings: required or optional, type, default); nil for an unknown kind.
    public static func definition(_ kind: String) -> PortalKindDefinition? { PortalRegistry.definition(kind) }
    /// Settings the lab takes for every kind (not the kind's own): `https-only`, `session-cookie`, `csrf-token`.
    public static let labSettings = [PortalTLS.setting] + SessionCookie.settings
}
