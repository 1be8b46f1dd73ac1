import Foundation
import HotspotCore
import HotspotProtocol
import HotspotSystem
import Netlink
import LabTopology

/// The native tier's air for one station (docs/STATION.md, "The native tier"): the station's Wi-Fi is one end of a
/// veth pair in the station's namespace; the other end (the "access point side") is a port of the station's own bridge
/// in the lab's air namespace, beside one port per hotspot: the air end of a veth pair whose other end is a port of
/// that hotspot's LAN bridge. Associating sets the hotspot's port and the access point side up (carrier for the
/// station); leaving sets them down. Roaming between hotspots is the lab switching ports. Nothing moves between
/// namespaces on a join: a namespace move waits for an RCU grace period (about 14 ms), setting a link up does not.
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
    /// The station's bridge in the air namespace (the access point side and the hotspots' ports).
    public let bridge: String
    let stationIndex: Int
    let station: Station
    let topology: Topology
    private let air: NetworkNamespace
    private unowned let lab: RunningTopology
    private let listener: UnixSocket
    private let lock = Mutex(recursive: true)
    private var connection: UnixSocket?
    /// rtnetlink sockets of our own per namespace (the namespaces' own sockets belong to the steps' thread).
    private var routes: [String: RouteNetlink] = [:]
    /// Per hotspot (by name): the air end of its port, made at station start for the hotspots running then, else at
    /// the first join.
    private var ports: [String: (air: String, lan: String)] = [:]
    /// The hotspot (by name) and access point the link is attached to now.
    private var attachedHotspot: String?
    private var attachedBSSID: String?
    private var thread: SystemThread?
    private var stopFlag = false

    init(station: Station, index: Int, topology: Topology, lab: RunningTopology, air: NetworkNamespace, interface: String, peer: String,
         bridge: String, socketPath: String) throws {
        self.station = station
        self.stationIndex = index
        self.bridge = bridge
        self.topology = topology
        self.lab = lab
        self.air = air
        self.interface = interface
        self.peer = peer
        self.socketPath = socketPath
        unlink(socketPath)
        listener = try UnixSocket.listen(path: socketPath)
    }

    /// Makes the port of every hotspot running now (before `start`: the serving thread makes later ones).
    func prepare() throws {
        try lock.withLock {
            for running in lab.hotspots where ports[running.hotspot.name] == nil { _ = try port(running) }
        }
    }

    /// The air end of `target`'s port, made on first use: a veth pair from the air namespace into the hotspot's, its
    /// hotspot end a port of the LAN bridge (up, without carrier until the air end is up), its air end a port of the
    /// station's bridge (down until a join).
    private func port(_ target: RunningHotspot) throws -> (air: String, lan: String) {
        if let made = ports[target.hotspot.name] { return made }
        let k = topology.hotspots.firstIndex { $0.name == target.hotspot.name } ?? ports.count
        let airEnd = try lab.lab.name("s\(stationIndex)p\(k)"), lanEnd = try lab.lab.name("s\(stationIndex)q\(k)")
        try route(air).createVeth(airEnd, peer: lanEnd, peerNamespace: target.namespace)
        let inside = try route(target.namespace)
        try inside.setMaster(lanEnd, bridge: target.lanInterface)
        try inside.setUp(lanEnd)
        try route(air).setMaster(airEnd, bridge: bridge)
        ports[target.hotspot.name] = (airEnd, lanEnd)
        return (airEnd, lanEnd)
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
                StandardStreams.error("hotspot-lab: link controller of station \(station.name): \(error)\n")
                return
            }
        }
    }

    private func send(_ event: LinkEvent) {
        guard let connection else { return }
        do { try connection.writeAll(event.framed) } catch {
            StandardStreams.error("hotspot-lab: link event to station \(station.name): \(error)\n")
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
            let port = try port(target)
            try route(air).setUp(port.air)
            try route(air).setUp(peer)
            try waitForwarding(port: port, target: target)
        } catch {
            return send(.rejected(reason: "attach the link of station \(station.name) to hotspot \(hotspot.name): \(error)"))
        }
        attachedHotspot = hotspot.name
        attachedBSSID = bssid
        announce(hotspot: hotspot.name, bssid: bssid)
    }

    /// Waits, bounded, until the three links between the station and the hotspot's LAN bridge are operationally up,
    /// so their bridges forward: the carrier is there at once, but the kernel's link watcher marks the links running
    /// and tells their bridges a moment later (a workqueue). Announced before that, the association's first DHCP
    /// discover could be dropped by a bridge port not yet forwarding, and the lease would wait a second for the
    /// retry, as no radio association does: wpa_supplicant reports CONNECTED once the access point forwards.
    private func waitForwarding(port: (air: String, lan: String), target: RunningHotspot) throws {
        let links = [(try route(air), peer), (try route(air), port.air), (try route(target.namespace), port.lan)]
        let deadline = SystemMonotonicClock.read() + .seconds(60)  // a link that never comes up; up ends it
        var waiting = links
        while true {
            waiting = try waiting.filter { !(try $0.0.link($0.1).isRunning) }
            if waiting.isEmpty { return }
            guard SystemMonotonicClock.read() < deadline else {
                throw SystemError("attach the link of station \(station.name) to hotspot \(target.hotspot.name)",
                                  waiting.map(\.1).joined(separator: ", "), reason: "not operationally up within 60 s")
            }
            usleep(500)
        }
    }

    private func announce(hotspot name: String, bssid: String) {
        guard let hotspot = topology.hotspots.first(where: { $0.name == name }) else { return }
        let network = HotspotNetwork(rawSSID: hotspot.rawSSID, bssid: bssid, signalStrength: WPAText.strength(rssi: Self.defaultRSSI),
                                     security: Self.securityType(hotspot.security))
        send(.associated(network: network, rssi: Self.defaultRSSI, hotspot: name))
    }

    /// Sets the access point side and the hotspot's port down (no carrier for the station) and reports the
    /// disassociation.
    private func detach(reason: String) {
        if let name = attachedHotspot, let port = ports[name] {
            do {
                try route(air).setUp(peer, false)
                try route(air).setUp(port.air, false)
            } catch {
                StandardStreams.error("hotspot-lab: detach the link of station \(station.name) from \(name): \(error)\n")
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
        // The station's bridge in the air: no IPv6 of its own (it would be a host on every LAN it joins, with SLAAC).
        let bridge = try lab.name("s\(index)b")
        try air.route.createBridge(bridge)
        try air.writeSysctls(["/proc/sys/net/ipv6/conf/\(bridge)/disable_ipv6"], "1")
        try air.route.setUp(bridge)
        try air.route.setMaster(peer, bridge: bridge)
        let link = try StationLink(station: station, index: index, topology: topology, lab: hotspotLab, air: air, interface: interface,
                                   peer: peer, bridge: bridge, socketPath: dir + "/link.sock")
        try link.prepare()
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
