import HotspotCore
import Foundation
import PortalKinds
import HotspotProtocol
import HotspotSystem
import Netlink
import LabServices
import LabTopology
import LabVM

/// The steps' context in a real lab: the acting station's hotspotd (control socket, trace), its helpers'
/// processes and wpa_supplicant, the hotspots' hostapd, gate, portal, DNS, uplink and radios.
final class LabStepContext: StepContext {
    let lab: RunningTopology
    let station: RunningStation
    var stateCheckpoint = 0
    var waitCursor = 0
    var stateBound: Int?
    var matchedTransition: Int?

    init(lab: RunningTopology, station: RunningStation) {
        self.lab = lab
        self.station = station
    }

    var topology: Topology { lab.topology }
    var stationName: String { station.station.name }

    func running(_ hotspot: String) throws -> RunningHotspot {
        guard let h = lab.hotspots.first(where: { $0.hotspot.name == hotspot }) else { throw StepFailure("no hotspot \(hotspot) in \(lab.topology.file)") }
        return h
    }

    func runningHelper(_ name: String) throws -> RunningHelper {
        guard let helper = station.helper(name) else { throw noHelper(name) }
        return helper
    }

    // MARK: hotspotd
    func status() throws -> JSON { try station.status() }
    func readTrace(from line: Int) -> [TraceEntry] { station.readTrace(from: line) }
    func traceLineCount() -> Int { station.traceLineCount() }
    func waitForState(_ state: String, after cursor: Int, timeout: Duration) throws -> Int {
        try station.waitForState(state, after: cursor, timeout: timeout)
    }
    func showScanList() throws -> [TraceScanListEntry] { try station.showScanList() }
    func join(_ ssid: SSID, password: String?) throws { try station.join(ssid, password: password) }
    func autoJoin() throws { try station.autoJoin() }
    func leave() throws { try station.leave() }
    func fireMaintainTimer() throws { try station.fireMaintainTimer() }
    func foreground(_ identifier: String?) throws { try station.foreground(identifier) }
    func logoff(helper identifier: String) throws -> Bool { try station.logoff(helper: identifier) }
    func restartHotspotd(helperDelay: Duration) throws -> Int { try station.restartHotspotd(helperDelay: helperDelay) }
    func recordStep(_ text: String, kind: String, line: Int, index: Int) {
        _ = try? station.request(.record(["step": .string(text), "stepKind": .string(kind), "line": .number(Double(line)),
                                          "index": .number(Double(index))]))
    }
    func waitForTransition(to state: String, after cursor: Int, timeout: Duration) throws -> Int {
        try station.waitForState(state, after: cursor, timeout: timeout, acceptCurrent: false)
    }

    // MARK: helpers
    // A provider app (by bundle identifier) stands for its running provider (the authentication provider's first).
    func helperPID(_ name: String) -> Int32? {
        if let helper = station.helper(name) { return helper.process.pid }
        return station.app(name)?.hasProviders == true ? station.providerPID(app: name) : nil
    }
    func helperIdentifier(_ name: String) -> String? {
        station.helper(name)?.identifier ?? (station.app(name)?.hasProviders == true ? name : nil)
    }
    func type(_ text: String, intoHelper name: String) throws {
        if station.helper(name) == nil, station.app(name)?.hasProviders == true { return try station.type(text, intoApp: name) }
        try station.type(text, into: try runningHelper(name))
    }
    func killHelper(_ name: String) throws {
        if station.helper(name) == nil, station.app(name)?.hasProviders == true {
            guard let pid = station.providerPID(app: name) else { throw StepFailure("app \(name) has no provider running on station \(stationName)") }
            guard Glibc.kill(pid, SIGKILL) == 0 else { throw StepFailure("kill the provider of \(name) (pid \(pid)): errno \(errno)") }
            return
        }
        try station.kill(helper: try runningHelper(name))
    }
    func signalHelper(_ name: String, _ signal: Int32) throws {
        if station.helper(name) == nil, station.app(name)?.hasProviders == true {
            guard let pid = station.providerPID(app: name) else { throw StepFailure("app \(name) has no provider running on station \(stationName)") }
            guard Glibc.kill(pid, signal) == 0 else { throw StepFailure("signal \(signal) to the provider of \(name) (pid \(pid)): errno \(errno)") }
            return
        }
        try runningHelper(name).process.signal(signal)
    }

    // MARK: the station
    func macAddress() throws -> String { try station.macAddress() }
    func application(_ url: String) throws -> (status: Int?, error: String) { try station.application(url) }
    func probe(_ urls: [String]) throws -> [ProbeObservation] { try station.probe(urls) }
    func wpaRequest(_ command: String) throws -> String { try station.wpaControl().request(command) }
    func wpaWaitForEvent(_ prefixes: [String], timeout: Duration) throws -> String {
        try station.wpaControl().waitForEvent(prefixes, timeout: timeout)
    }
    var wpaLog: String { station.wpaLog }

    // MARK: the lab
    func hostapdCount(hotspot: String) throws -> Int { try running(hotspot).accessPoints.compactMap(\.hostapd).count }

    func hostapdRequest(hotspot: String, index: Int, _ command: String) throws -> String {
        let controls = try running(hotspot).accessPoints.compactMap(\.hostapd)
        guard controls.indices.contains(index) else { throw StepFailure("hotspot \(hotspot) has no hostapd #\(index + 1)") }
        return try controls[index].request(command)
    }

    func setUplink(hotspot: String, up: Bool) throws -> String { try lab.setUplink(try running(hotspot), up: up) }

    func setLinkQuality(hotspot: String, side: LinkSide, latencyMS: Int, jitterMS: Int, lossPercent: Double, rateKbit: Int) throws -> String {
        try lab.setLinkQuality(try running(hotspot), side: side, latencyMS: latencyMS, jitterMS: jitterMS, lossPercent: lossPercent, rateKbit: rateKbit)
    }

    func setDNS(hotspot: String, mode: String) throws -> String { try lab.setDNS(hotspot: hotspot, mode: mode) }

    func switchPortal(hotspot: String, kind: String, settings: [String: String]) throws {
        try lab.switchPortal(hotspot: hotspot, kind: kind, settings: settings)
    }

    func gateAuthenticated(hotspot: String) throws -> [String] { try GateInspector.authenticated(in: try running(hotspot)) }

    func setSignal(hotspot: String, bssid: String?, dbm: Int?) throws -> String { try lab.setSignal(try running(hotspot), bssid: bssid, dbm: dbm) }

    func expirePortalSessions(hotspot: String) throws { try lab.expirePortalSessions(try running(hotspot)) }

    func pause(_ seconds: Double) { usleep(UInt32(seconds * 1_000_000)) }
}

/// A radio scenario's capture of the air (`AirCapture`, LabVM), only inside the hotspot-lab VM (there hwsim0
/// belongs to the VM; on a host with hwsim it is the host's and is left alone). A capture that cannot start is
/// reported and the run goes on without it.
enum ScenarioAirCapture {
    static func start(into path: String) -> AirCapture? {
        guard InVM.isActive, FileManager.default.fileExists(atPath: "/sys/class/net/hwsim0") else { return nil }
        do {
            return try AirCapture.start(into: path)
        } catch {
            StandardStreams.error("hotspot-lab: no capture of the air: \(error)\n")
            return nil
        }
    }
}

/// Reads a hotspot's captive gate: the members of its authenticated sets, over nfnetlink (no `nft` process).
public enum GateInspector {
    /// The members of the gate's authenticated sets: `MAC . IPv4` of `authenticated`, and, on a LAN with IPv6, the
    /// MAC alone of `authenticated6` (the gate releases a MAC there on both families: docs/TOPOLOGY.md). Spelled as
    /// `nft list set` prints them (`02:00:00:00:0a:00 . 198.51.100.14`). A gateway without a portal has no such sets:
    /// no members; a captive one without them is an error.
    /// Read in-process with one GETSETELEM dump per set: certify reads the gate right before its logoff ask, inside
    /// the 3 s before the next maintain, and under TCG on a loaded machine an `nft` process cost seconds of that
    /// (CI run 23).
    public static func authenticated(in running: RunningHotspot) throws -> [String] {
        let ipv6 = running.hotspot.gateway.ip.hasIPv6
        let hotspot = running.hotspot.name
        let captive = running.hotspot.gateway.portal != nil
        return try running.namespace.runInside {
            let socket = try MNLSocket(netlinkProtocol: NFT.netlinkProtocol)
            defer { socket.close() }
            func keys(_ set: String) throws -> [[UInt8]] {
                do {
                    return try NFTSet(socket: socket, family: GateRuleset.family, table: GateRuleset.table, set: set).elementKeys()
                } catch let error as SystemError where error.errno == ENOENT && !captive {
                    return []
                } catch let error as SystemError {
                    throw SystemError("read the gate of", hotspot, reason: error.description)
                }
            }
            var members = try keys(GateRuleset.set).compactMap(member(macIPv4:))
            if ipv6 { members += try keys(GateRuleset.set6).compactMap { MACAddress(bytes: $0)?.description } }
            return members
        }
    }

    /// An `ether_addr . ipv4_addr` key (the MAC, 2 bytes of padding, the address) as `nft` prints it; nil for a key
    /// of another shape.
    static func member(macIPv4 key: [UInt8]) -> String? {
        guard key.count == 12, let mac = MACAddress(bytes: Array(key[0..<6])), let ip = IPAddress(bytes: Array(key[8..<12])) else {
            return nil
        }
        return "\(mac) . \(ip)"
    }
}

