import Foundation
import HotspotCore
import HotspotProtocol
import HotspotSystem
import Netlink
import LabTopology

/// The native tier's air for one station (docs/STATION.md, "The native tier"): the station's Wi-Fi is one end of a
/// veth pair in the station's namespace; the other end (the "access point side") waits down in the lab's air
/// namespace, and associating moves it into a hotspot's namespace and enslaves it to that hotspot's LAN bridge.
/// Roaming between hotspots is the lab moving the link; leaving moves it back.
///
/// It serves hotspotd's `LinkStation` on a Unix socket (`<station>/link.sock`, typed `LinkRequest` in, `LinkEvent`
/// out): what wpa_supplicant is to a radio station. The SSID, BSSID, security and signal of every association come
/// from the topology; a join is refused as wpa_supplicant's would fail (no such network, wrong key).
public final class StationLink: @unchecked Sendable {  // @unchecked: the mutable state (connection, routes, stop flag) is touched only with `lock` held
    /// What hwsim gives a station at the access point's default transmit power (20 dBm): -30 dBm, strength 1.0
    /// (docs/STATION.md, "Signal strength"). The native tier reports the same, so both tiers' helpers see one signal.
    public static let defaultRSSI: Double = -30

    public let socketPath: String
    /// The station's interface (in the station namespace) and the access point side's end.
    public let interface: String
    public let peer: String
    let station: Station
    let topology: Topology
    private let air: NetworkNamespace
    private unowned let lab: RunningTopology
    private let listener: UnixSocket
    private let lock = Mutex(recursive: true)
    private var connection: UnixSocket?
    /// rtnetlink sockets of our own per namespace (the namespaces' own sockets belong to the steps' thread).
    private var routes: [String: RouteNetlink] = [:]
    /// The hotspot (by name) and access point the link is attached to now.
    private var attachedHotspot: String?
    private var attachedBSSID: String?
    private var thread: SystemThread?
    private var stopFlag = false

    init(station: Station, topology: Topology, lab: RunningTopology, air: NetworkNamespace, interface: String, peer: String,
         socketPath: String) throws {
        self.station = station
        self.topology = topology
        self.lab = lab
        self.air = air
        self.interface = interface
        self.peer = peer
        self.socketPath = socketPath
        unlink(socketPath)
        listener = try UnixSocket.listen(path: socketPath)
    }

    /// Starts serving hotspotd (one connection at a time; a restarted hotspotd connects again and is told the
    /// current association at once, as a new hotspotd finds wpa_supplicant's association in `STATUS`).
    func start() throws {
        thread = try SystemThread.start("serve the link of station \(station.name)") { [self] in serve() }
    }

    func stop() {
        lock.withLock { stopFlag = true }
        thread?.join()
        thread = nil
        listener.close()
        lock.withLock {
            connection?.close()
            connection = nil
            for route in routes.values { (route.socket as? MNLSocket)?.close() }
            routes = [:]
        }
        unlink(socketPath)
    }

    /// The networks a scan finds: every access point of every hotspot that broadcasts its SSID, with the signal the
    /// link gives (the scan list comes from the topology).
    public func scanResults() -> [HotspotNetwork] {
        topology.hotspots.filter { !$0.hidden }.flatMap { hotspot in
            hotspot.accessPoints.map { ap in
                HotspotNetwork(rawSSID: hotspot.rawSSID, bssid: "\(ap.bssid)", signalStrength: WPAText.strength(rssi: Self.defaultRSSI),
                               security: Self.securityType(hotspot.security))
            }
        }
    }

    static func securityType(_ security: Security) -> SecurityType {
        switch security {
        case .open: return .open
        case .wpa2PSK: return .wpa2Personal
        case .wpa2Enterprise: return .wpa2Enterprise
        }
    }

    // MARK: serving

    private func stopping() -> Bool { lock.withLock { stopFlag } }

    private func serve() {
        while !stopping() {
            guard listener.waitReadable(timeout: .milliseconds(200)) else { continue }
            guard let accepted = try? listener.accept() else { continue }
            lock.withLock {
                connection?.close()
                connection = accepted
                if let hotspot = attachedHotspot, let bssid = attachedBSSID { announce(hotspot: hotspot, bssid: bssid) }
            }
            read(accepted)
        }
    }

    private func read(_ socket: UnixSocket) {
        var decoder = FrameDecoder()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopping() {
            do {
                while let payload = try decoder.nextFrame() {
                    let request = try LinkRequest(json: try JSON.parse(payload))
                    lock.withLock { handle(request) }
                }
                guard socket.waitReadable(timeout: .milliseconds(200)) else { continue }
                let outcome = try buffer.withUnsafeMutableBytes { p in try socket.read(into: p) }
                switch outcome {
                case .bytes(let n): decoder.append(buffer[0..<n])
                case .wouldBlock: continue
                case .endOfFile: return
                }
            } catch {
                FileHandle.standardError.write(Data("hotspot-lab: link controller of station \(station.name): \(error)\n".utf8))
                return
            }
        }
    }

    private func send(_ event: LinkEvent) {
        guard let connection else { return }
        do { try connection.writeAll(event.framed) } catch {
            FileHandle.standardError.write(Data("hotspot-lab: link event to station \(station.name): \(error)\n".utf8))
        }
    }

    // MARK: requests (under the lock)

    private func handle(_ request: LinkRequest) {
        switch request {
        case .join(let ssid, let password):
            guard let hotspot = topology.hotspots.first(where: { $0.rawSSID == ssid }) else {
                return send(.rejected(reason: "no network \(ssid.printable) in range"))
            }
            let known = station.knownNetworks.first { $0.rawSSID == ssid }
            if let refusal = Self.refusal(hotspot, password: password ?? known?.psk, known: known) {
                if attachedHotspot != nil { detach(reason: "join \(ssid.printable)") }
                return send(.rejected(reason: refusal))
            }
            attach(hotspot, bssid: "\(hotspot.bssid)")
        case .autoJoin(let except):
            for known in station.knownNetworks where known.autoJoin {
                guard let hotspot = topology.hotspots.first(where: { $0.rawSSID == known.rawSSID }) else { continue }
                let identity = NetworkIdentity(rawSSID: hotspot.rawSSID, security: Self.securityType(hotspot.security))
                if except.contains(identity) { continue }
                if Self.refusal(hotspot, password: known.psk, known: known) != nil { continue }
                if attachedHotspot == hotspot.name { return }
                return attach(hotspot, bssid: "\(hotspot.bssid)")
            }
            send(.rejected(reason: "no known network to join on its own"))
        case .disconnect:
            if attachedHotspot != nil { detach(reason: "disconnect") }
        }
    }

    /// Why the network would refuse this station (nil: it would not): the key or the account, as the radio's
    /// handshake would.
    static func refusal(_ hotspot: Hotspot, password: String?, known: KnownNetwork?) -> String? {
        switch hotspot.security {
        case .open: return nil
        case .wpa2PSK(let passphrase):
            return password == passphrase ? nil : "WRONG_KEY for \(hotspot.rawSSID.printable)"
        case .wpa2Enterprise(_, let users):
            let ok = users.contains { $0.identity == known?.identity && $0.password == known?.password }
            return ok ? nil : "EAP authentication failed for \(hotspot.rawSSID.printable)"
        }
    }

    private func route(_ namespace: NetworkNamespace) throws -> RouteNetlink {
        if let route = routes[namespace.name] { return route }
        let route = try namespace.runInside { try RouteNetlink.current() }
        routes[namespace.name] = route
        return route
    }

    private func running(_ name: String) -> RunningHotspot? { lab.hotspots.first { $0.hotspot.name == name } }

    /// Moves the link into `hotspot`'s segment (its LAN bridge) and reports the association.
    private func attach(_ hotspot: Hotspot, bssid: String) {
        if let current = attachedHotspot {
            if current == hotspot.name {
                if attachedBSSID == bssid { return }
                attachedBSSID = bssid   // another access point of the same LAN: a roam, the link stays
                return announce(hotspot: hotspot.name, bssid: bssid)
            }
            detach(reason: "join \(hotspot.rawSSID.printable)")
        }
        guard let target = running(hotspot.name) else { return send(.rejected(reason: "hotspot \(hotspot.name) is not running")) }
        do {
            try route(air).setUp(peer, false)
            try route(air).move(peer, to: target.namespace)
            let inside = try route(target.namespace)
            try inside.setMaster(peer, bridge: target.lanInterface)
            try inside.setUp(peer)
        } catch {
            return send(.rejected(reason: "attach the link of station \(station.name) to hotspot \(hotspot.name): \(error)"))
        }
        attachedHotspot = hotspot.name
        attachedBSSID = bssid
        announce(hotspot: hotspot.name, bssid: bssid)
    }

    private func announce(hotspot name: String, bssid: String) {
        guard let hotspot = topology.hotspots.first(where: { $0.name == name }) else { return }
        let network = HotspotNetwork(rawSSID: hotspot.rawSSID, bssid: bssid, signalStrength: WPAText.strength(rssi: Self.defaultRSSI),
                                     security: Self.securityType(hotspot.security))
        send(.associated(network: network, rssi: Self.defaultRSSI, hotspot: name))
    }

    /// Moves the link back to the air namespace (down) and reports the disassociation.
    private func detach(reason: String) {
        if let name = attachedHotspot, let from = running(name) {
            do {
                let inside = try route(from.namespace)
                try inside.setUp(peer, false)
                try inside.setMaster(peer, bridge: nil)
                try inside.move(peer, to: air)
            } catch {
                FileHandle.standardError.write(Data("hotspot-lab: detach the link of station \(station.name) from \(name): \(error)\n".utf8))
            }
        }
        attachedHotspot = nil
        attachedBSSID = nil
        send(.disassociated(reason: reason))
    }

    // MARK: the lab's own link events

    /// The station moves to access point `bssid` (of any hotspot): a roam within one LAN keeps the link, one to
    /// another hotspot moves it.
    public func roam(to bssid: String) throws {
        guard let hotspot = topology.hotspots.first(where: { $0.accessPoints.contains { "\($0.bssid)" == bssid.lowercased() } }) else {
            throw SystemError("roam station \(station.name) to", bssid, reason: "no access point with that BSSID in \(topology.file)")
        }
        lock.withLock { attach(hotspot, bssid: bssid.lowercased()) }
    }

    /// The radio link is lost (the access point went away): the link leaves the segment.
    public func loseLink(reason: String) {
        lock.withLock { if attachedHotspot != nil { detach(reason: reason) } }
    }

    /// The hotspot the link is attached to now.
    public var currentHotspot: String? { lock.withLock { attachedHotspot } }
}

extension RunningStation {
    /// Builds one station of the native tier inside `lab`: its namespace, the veth whose far end is the lab's to
    /// move (`StationLink`), hotspotd with `--link-control`, and the helpers. No radio, no wpa_supplicant.
    static func buildLinked(_ station: Station, index: Int, lab hotspotLab: RunningTopology, topology: Topology, logDirectory: String,
                            options: StationLabOptions) throws -> RunningStation {
        let lab = hotspotLab.lab
        let dir = logDirectory + "/stations/" + station.name
        try FileManager.default.createDirectory(atPath: dir + "/ui", withIntermediateDirectories: true)
        try StationResolver.prepare(runDirectory: dir + "/hotspotd")
        let ns = try lab.createNamespace("s\(index)")
        try ns.route.setUp("lo")
        let air = try lab.airNamespace()
        try lab.connect(ns, "s\(index)w", to: air, "s\(index)a")
        let interface = try lab.name("s\(index)w")
        let peer = try lab.name("s\(index)a")
        try air.route.setUp(peer, false)   // no carrier until the lab attaches the link to a hotspot
        let link = try StationLink(station: station, topology: topology, lab: hotspotLab, air: air, interface: interface, peer: peer,
                                   socketPath: dir + "/link.sock")
        try link.start()
        do {
            let hotspotd = try spawnHotspotd(lab: lab, namespace: ns, interface: interface, directory: dir, options: options, station: station,
                                             link: link)
            let running = RunningStation(station: station, index: index, namespace: ns, interface: interface, directory: dir, lab: lab,
                                         options: options, topology: topology, hotspotd: hotspotd, helpers: [])
            running.link = link
            try running.connectControl()
            try running.configureManagers()
            try running.startHelpers()
            return running
        } catch {
            link.stop()
            throw error
        }
    }
}
