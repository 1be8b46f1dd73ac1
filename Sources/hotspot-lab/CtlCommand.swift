import ArgumentParser
import Foundation
import HotspotCore
import HotspotClient
import HotspotProtocol

/// `hotspot-lab ctl`: talk to a running hotspotd over its control socket (docs/PROTOCOL.md).
struct CtlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Drive a running hotspotd through its control socket.",
        subcommands: [
            CtlStatus.self, CtlAssociate.self, CtlDisassociate.self, CtlSignal.self, CtlIPUp.self, CtlIPDown.self, CtlScan.self,
            CtlHideScan.self, CtlLogoff.self, CtlForeground.self, CtlTrace.self, CtlJoin.self, CtlLeave.self, CtlAutoJoin.self, CtlFireMaintainTimer.self,
            CtlSetManager.self, CtlGetManager.self,
        ]
    )
}

struct CtlSocket: ParsableArguments {
    @Option(help: "hotspotd's control socket (default /run/hotspotd/control.sock, or the --station's).")
    var socket: String?

    @Option(help: "A station of a lab started by `hotspot-lab up` on this machine: its hotspotd (the newest lab that has it).")
    var station: String?

    /// The socket: given, else the named station's in the newest running lab, else the system hotspotd's.
    func path() throws -> String {
        if let socket { return socket }
        guard let station else { return "/run/hotspotd/control.sock" }
        let root = ProcessInfo.processInfo.environment["HOTSPOT_LAB_LOGS"] ?? "/tmp/hotspot-lab"
        let labs = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).map { root + "/" + $0 }
        let candidates = labs.map { $0 + "/stations/\(station)/hotspotd/control.sock" }.filter { FileManager.default.fileExists(atPath: $0) }
        let newest = candidates.max { a, b in
            let ma = (try? FileManager.default.attributesOfItem(atPath: a)[.modificationDate] as? Date) ?? .distantPast
            let mb = (try? FileManager.default.attributesOfItem(atPath: b)[.modificationDate] as? Date) ?? .distantPast
            return ma < mb
        }
        guard let newest else {
            throw ValidationError("no running lab under \(root) has a station `\(station)` (start one with `hotspot-lab up TOPOLOGY`; "
                                  + "a lab running inside the VM is not reachable from the host)")
        }
        return newest
    }

    func client() throws -> ControlClient {
        let path = try path()
        do {
            return try ControlClient(path: path)
        } catch {
            throw ValidationError("cannot reach hotspotd at \(path): \(error)")
        }
    }

    func send(_ request: ControlRequest) throws {
        let reply = try client().request(request)
        print(reply.text)
    }
}

extension SecurityType: ExpressibleByArgument {}

/// A network given as `SSID,BSSID[,SECURITY[,SIGNAL]]`.
func parseNetwork(_ text: String) throws -> HotspotNetwork {
    let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    guard parts.count >= 2, !parts[0].isEmpty, !parts[1].isEmpty else {
        throw ValidationError("network \"\(text)\": expected SSID,BSSID[,SECURITY[,SIGNAL]]")
    }
    var n = HotspotNetwork(ssid: parts[0], bssid: parts[1])
    if parts.count > 2 {
        guard let s = SecurityType(rawValue: parts[2]) else {
            throw ValidationError("network \"\(text)\": security \"\(parts[2])\" is not open, wpa2-psk or wpa2-enterprise")
        }
        n.security = s
    }
    if parts.count > 3 {
        guard let d = Double(parts[3]), d >= 0, d <= 1 else {
            throw ValidationError("network \"\(text)\": signal \"\(parts[3])\" is not a number from 0.0 to 1.0")
        }
        n.signalStrength = d
    }
    return n
}

struct CtlStatus: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Print the state, best helper, exclude list, cache, auto-join list, and the apps with their manager configuration and providers.")
    @OptionGroup var socket: CtlSocket
    func run() throws { try socket.send(.status) }
}

struct CtlAssociate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "associate", abstract: "Report an association.")
    @OptionGroup var socket: CtlSocket
    @Argument(help: "SSID,BSSID[,SECURITY[,SIGNAL]]") var network: String
    @Flag(help: "The network was joined automatically.") var autoJoin = false
    func run() throws {
        var n = try parseNetwork(network)
        n.didAutoJoin = autoJoin
        try socket.send(.associate(n))
    }
}

struct CtlDisassociate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "disassociate", abstract: "Report the loss of association.")
    @OptionGroup var socket: CtlSocket
    func run() throws { try socket.send(.disassociate) }
}

struct CtlSignal: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "signal", abstract: "Report a change of the associated network's signal strength (0.0-1.0).")
    @OptionGroup var socket: CtlSocket
    @Argument(help: "The new signal strength, 0.0 to 1.0.") var strength: Double
    func validate() throws {
        guard (0...1).contains(strength) else { throw ValidationError("signal strength: expected 0.0 to 1.0, found \(strength)") }
    }
    func run() throws { try socket.send(.signal(strength)) }
}

struct CtlIPUp: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ip-up", abstract: "Report IP connectivity.")
    @OptionGroup var socket: CtlSocket
    func run() throws { try socket.send(.ipUp) }
}

struct CtlIPDown: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ip-down", abstract: "Report the loss of IP connectivity.")
    @OptionGroup var socket: CtlSocket
    func run() throws { try socket.send(.ipDown) }
}

struct CtlScan: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "scan", abstract: "Show the scan list (sends filterScanList).")
    @OptionGroup var socket: CtlSocket
    @Argument(help: "Networks, each SSID,BSSID[,SECURITY[,SIGNAL]]") var networks: [String]
    @Flag(help: "Refresh every scan-list interval until hide-scan.") var repeating = false
    func run() throws { try socket.send(.showScanList(try networks.map(parseNetwork), repeating: repeating)) }
}

struct CtlHideScan: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "hide-scan", abstract: "The scan list is no longer shown.")
    @OptionGroup var socket: CtlSocket
    func run() throws { try socket.send(.hideScanList) }
}

struct CtlLogoff: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "logoff", abstract: "Call logoff(network) on behalf of a helper.")
    @OptionGroup var socket: CtlSocket
    @Option(help: "The helper's identifier.") var helper: String
    @Option(help: "SSID (default: the current network).") var ssid: String?
    @Option(name: .customLong("ssid-hex"), help: "The SSID's bytes as hex digits, for one that is not UTF-8 (instead of --ssid).")
    var ssidHex: String?
    @Option(help: "Security of --ssid.") var security: SecurityType = .open

    func validate() throws {
        if ssid != nil && ssidHex != nil { throw ValidationError("logoff: give --ssid or --ssid-hex, not both") }
        if let ssidHex, SSID(hex: ssidHex).map({ (1...SSID.maximumBytes).contains($0.bytes.count) }) != true {
            throw ValidationError("logoff --ssid-hex \(ssidHex): expected 1 to \(SSID.maximumBytes) bytes as hex digits, two a byte")
        }
    }

    func run() throws {
        let target = ssidHex.flatMap { SSID(hex: $0) } ?? ssid.map { SSID($0) }
        try socket.send(.logoff(helper: helper, network: target.map { NetworkIdentity(rawSSID: $0, security: security) }))
    }
}

struct CtlSetManager: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-manager",
        abstract: "Set an app's manager configuration (NEHotspotManager): isEnabled, evaluatedSSIDs, the evaluation provider.")
    @OptionGroup var socket: CtlSocket
    @Argument(help: "The app's bundle identifier (declared in hotspotd's --apps).") var app: String
    @Option(help: "true: the system starts the app's providers when a command needs them; false: never.") var enabled: Bool
    @Option(name: .customLong("evaluated-ssid"), help: "A pre-evaluated SSID (at most two): claimed at once, its evaluation provider not asked.")
    var evaluatedSSIDs: [String] = []
    @Option(help: "The evaluation provider's bundle identifier (must be the one the app declares).") var evaluationProvider: String?
    func run() throws {
        try socket.send(.setManager(app: app, ManagerConfiguration(
            isEnabled: enabled, evaluatedSSIDs: evaluatedSSIDs, evaluationProviderBundleIdentifier: evaluationProvider)))
    }
}

struct CtlGetManager: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get-manager", abstract: "Print an app's manager configuration.")
    @OptionGroup var socket: CtlSocket
    @Argument(help: "The app's bundle identifier.") var app: String
    func run() throws { try socket.send(.getManager(app: app)) }
}

struct CtlForeground: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "foreground", abstract: "The user brought a helper to the foreground (none: omit --helper).")
    @OptionGroup var socket: CtlSocket
    @Option(help: "The helper's identifier.") var helper: String?
    func run() throws { try socket.send(.foreground(helper: helper)) }
}

struct CtlJoin: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "join", abstract: "The user joins a network (hotspotd with --wpa-supplicant).")
    @OptionGroup var socket: CtlSocket
    @Argument(help: "SSID (text; or give --ssid-hex)") var ssid: String?
    @Option(name: .customLong("ssid-hex"), help: "The SSID's bytes as hex digits, for one that is not UTF-8 (436166e9 is Caf\\xe9).")
    var ssidHex: String?
    @Option(help: "Password (default: the one a helper set in its filterScanList answer, or the configured one).") var password: String?

    func validate() throws {
        if (ssid == nil) == (ssidHex == nil) { throw ValidationError("join: give the SSID as text or as --ssid-hex, one of them") }
        if let ssidHex {
            guard let bytes = SSID(hex: ssidHex), (1...SSID.maximumBytes).contains(bytes.bytes.count) else {
                throw ValidationError("join --ssid-hex \(ssidHex): expected 1 to \(SSID.maximumBytes) bytes as hex digits, two a byte")
            }
        }
    }

    func run() throws {
        let target = ssidHex.flatMap { SSID(hex: $0) } ?? SSID(ssid ?? "")
        try socket.send(.join(ssid: target, password: password))
    }
}

struct CtlLeave: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "leave", abstract: "The user leaves the network (hotspotd with --wpa-supplicant).")
    @OptionGroup var socket: CtlSocket
    func run() throws { try socket.send(.leave) }
}

struct CtlAutoJoin: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "auto-join", abstract: "The device joins known networks on its own (hotspotd with --wpa-supplicant).")
    @OptionGroup var socket: CtlSocket
    func run() throws { try socket.send(.autoJoin) }
}

struct CtlFireMaintainTimer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fire-maintain-timer", abstract: "The armed maintain timer fires now, as if its interval had passed (an error when none is armed).")
    @OptionGroup var socket: CtlSocket
    func run() throws { try socket.send(.fireMaintainTimer) }
}

struct CtlTrace: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "trace", abstract: "Print trace records as they happen (one JSON object per line).")
    @OptionGroup var socket: CtlSocket
    @Option(help: "Stop after this many records (default: run until hotspotd stops).") var count: Int?
    func run() throws {
        let c = try socket.client()
        try c.request(.subscribeTrace)
        var printed = 0
        while count.map({ printed < $0 }) ?? true {
            guard let r = try c.nextTraceRecord(timeout: .seconds(1)) else { continue }
            print(r.text)
            printed += 1
        }
    }
}
