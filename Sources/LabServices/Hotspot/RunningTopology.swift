import HotspotCore
import Foundation
import HotspotSystem
import Netlink
import LabSandbox
import LabTopology
import LabVM

public struct RunningTopologyOptions: Sendable {
    public var linkMode: HotspotLinkMode
    /// Where per-daemon logs go; default `$HOTSPOT_LAB_LOGS/<prefix>` or `/tmp/hotspot-lab/<prefix>`.
    public var logRoot: String?
    public var runID: String?
    /// Also run the topology's stations (radio mode only): wpa_supplicant, hotspotd and the helpers.
    public var stations: StationLabOptions?
    public init(linkMode: HotspotLinkMode = .radio, logRoot: String? = nil, runID: String? = nil, stations: StationLabOptions? = nil) {
        self.linkMode = linkMode
        self.logRoot = logRoot
        self.runID = runID
        self.stations = stations
    }
}

/// One access point of a hotspot as it runs (radio mode): its radio's interface and its hostapd.
public struct RunningAccessPoint: Sendable {
    public var accessPoint: AccessPoint
    /// The radio's interface in the hotspot namespace (enslaved to the hotspot's bridge when it has several).
    public var interface: String
    public var hostapdControlPath: String
    /// hostapd's control connection, attached to its events.
    public var hostapd: WPACtrlSocket?
}

/// One hotspot as it runs: its namespace, interfaces and services.
public struct RunningHotspot: Sendable {
    public var hotspot: Hotspot
    public var index: Int
    public var namespace: NetworkNamespace
    /// The LAN interface in the hotspot namespace (the radio's interface, or the veth end).
    public var lanInterface: String
    public var uplinkInterface: String
    /// With `.veth`: the station namespace and its interface (no address: run a DHCP client there).
    public var stationNamespace: NetworkNamespace?
    public var stationInterface: String?
    /// Every access point (radio mode). With more than one, `lanInterface` is a bridge.
    public var accessPoints: [RunningAccessPoint] = []
    /// The first access point's hostapd control socket path (radio mode).
    public var hostapdControlPath: String? { accessPoints.first?.hostapdControlPath }
    /// The first access point's hostapd control connection, attached to its events (radio mode).
    public var hostapd: WPACtrlSocket? { accessPoints.first?.hostapd }
    public var logs: [String: String]

    // The services, in start order.
    public var uplink: UplinkService
    public var gate: GateService
    /// The portal server now (nil: not captive, or its portal is down).
    public var portalService: PortalService?
    /// hostapd per access point (radio mode).
    public var accessPointServices: [AccessPointService]
    public var dhcpDNS: DHCPDNSService
    /// The gateway's IPv6 address and Router Advertisements (a LAN with IPv6 only).
    public var routerAdvertisements: RouterAdvertisementService?
    /// NAT64 and DNS64 (an IPv6-only LAN only).
    public var nat64: NAT64Service?

    public var services: [any HotspotService] {
        var list: [any HotspotService] = [uplink, gate]
        if let portalService { list.append(portalService) }
        return list + accessPointServices.map { $0 as any HotspotService } + (routerAdvertisements.map { [$0] } ?? [])
            + (nat64.map { [$0] } ?? []) + [dhcpDNS]
    }

    /// The kind the hotspot's portal serves now (nil: not captive, or its portal is down).
    public var portalKind: String? { portalService?.kind }
    /// dnsmasq (DHCP and DNS) and how its DNS answers now.
    public var dnsmasq: (any ServiceProcess)? { dhcpDNS.process }
    public var dnsMode: DNSAnswerMode { dhcpDNS.mode }
    /// Queries are dropped (the `no-answer` DNS fault).
    public var dnsDropped: Bool { dhcpDNS.dropped }
    /// `hotspot-dns-fault`, answering every query SERVFAIL (the `servfail` DNS fault).
    public var dnsFault: (any ServiceProcess)? { dhcpDNS.faultServer }

    /// Copies every service's logs into `directory`.
    public func writeLogs(to directory: String) throws {
        for service in services { try service.writeLogs(to: directory) }
    }
}

/// A topology as it runs (as `RunningHotspot` is one hotspot and `RunningStation` one station). Brings a topology up
/// inside a `Lab`: the internet namespace (probe + web server), and per hotspot a
/// namespace with hostapd (or a veth), dnsmasq, the nftables gate and the portal server, linked to the
/// internet by a veth. Everything is created through the lab, so `down()` (the lab's teardown) stops
/// every daemon by pid and deletes every namespace.
public final class RunningTopology: @unchecked Sendable {  // @unchecked: `hotspots` is Locked (a StationLink thread reads it); internet, internetServer, stations and timings change only on the one thread that builds and drives the lab
    public let lab: Lab
    public let topology: Topology
    public let options: RunningTopologyOptions
    public let logDirectory: String
    /// How the hotspots' services start processes (the lab's: journaled, stopped at teardown).
    public let launcher: any ProcessLauncher
    public private(set) var internet: NetworkNamespace!
    /// The internet's server (probe endpoints, backend routes, HTTP and HTTPS).
    public private(set) var internetServer: InternetService?
    /// The hotspots as they run. Behind a lock: a native-tier station's link controller thread (`StationLink`) reads
    /// them while a step (a portal fault) changes them.
    public internal(set) var hotspots: [RunningHotspot] {
        get { runningHotspots.withLock { $0 } }
        set { runningHotspots.withLock { $0 = newValue } }
    }
    private let runningHotspots = Locked<[RunningHotspot]>([])
    /// The services this process serves for the lab (its internet, each hotspot's portals, switched ones included).
    /// `down()` stops each (stopping twice is harmless), also one whose hotspot failed to build.
    private let servedHere = Locked<[any InProcessService]>([])

    /// The servers of the lab this process still serves (their names): none after `down()`.
    public var servingHere: [String] {
        servedHere.withLock { $0 }.filter(\.isServing).map(\.serviceName)
    }

    /// Notes a service `down()` must stop.
    func servesHere(_ service: any InProcessService) {
        servedHere.withLock { $0.append(service) }
    }
    /// The topology's stations, when `options.stations` asked for them.
    public private(set) var stations: [RunningStation] = []
    /// Seconds each phase took (for the bench).
    public private(set) var timings: [(String, Double)] = []

    init(lab: Lab, topology: Topology, options: RunningTopologyOptions) {
        self.lab = lab
        self.topology = topology
        self.options = options
        logDirectory = Self.logRoot(options) + "/" + lab.prefix
        launcher = LabProcessLauncher(lab: lab)
    }

    /// Where labs keep their logs (each in `<root>/<prefix>`, kept after the lab ends).
    static func logRoot(_ options: RunningTopologyOptions) -> String {
        options.logRoot ?? ProcessInfo.processInfo.environment["HOTSPOT_LAB_LOGS"] ?? "/tmp/hotspot-lab"
    }

    /// Validates tools, then builds everything. On any failure what was built is torn down and the error
    /// is rethrown (nothing left half-built).
    public static func up(_ topology: Topology, options: RunningTopologyOptions = RunningTopologyOptions()) throws -> RunningTopology {
        var tools = ["dnsmasq", "nft"]
        if options.linkMode == .radio { tools.append("hostapd") }
        if options.stations != nil {
            if options.linkMode == .radio { tools.append("wpa_supplicant") }
            tools += ["curl", "busybox"]
            _ = try BuildProducts.locate("hotspotd", environmentKey: "HOTSPOTD")
        }
        // PEAP's certificate; the lab CA, the internet's certificates (HTTPS) and the https-only portals'.
        tools.append("openssl")
        // IPv6-only hotspots: NAT64 and DNS64 (docs/TOPOLOGY.md "IPv6"); tayga's log goes through stdbuf.
        if topology.hotspots.contains(where: { $0.gateway.ip == .v6Only }) { tools += ["tayga", "unbound", "stdbuf"] }
        for tool in tools { _ = try findTool(tool) }
        let labStart = ContinuousClock.now
        // A run id whose log folder an earlier lab left is not reused: that folder holds the earlier run's hotspotd
        // state (its cache and trace), which the new lab's stations would inherit. A run id given on purpose keeps
        // its name; the earlier folder is moved aside (`<prefix>.<time>`), not deleted.
        let logRoot = Self.logRoot(options)
        let lab = try Lab.start(runID: options.runID) { FileManager.default.fileExists(atPath: logRoot + "/" + $0) }
        let hotspotLab = RunningTopology(lab: lab, topology: topology, options: options)
        if options.runID != nil, FileManager.default.fileExists(atPath: hotspotLab.logDirectory) {
            let aside = hotspotLab.logDirectory + "." + String(Int(Date().timeIntervalSince1970))
            if rename(hotspotLab.logDirectory, aside) != 0 {
                let error = SystemError.current("move the earlier run's logs aside", hotspotLab.logDirectory + " to " + aside)
                lab.teardown()
                throw error
            }
        }
        hotspotLab.note("lab start", since: labStart)
        do {
            try hotspotLab.build()
        } catch {
            _ = hotspotLab.down()
            throw error
        }
        return hotspotLab
    }

    /// Stops every daemon (by pid) and deletes every namespace. Returns the errors met. Logs stay.
    @discardableResult
    public func down() -> [any Error] {
        for station in stations { station.close() }
        for hotspot in hotspots {
            for ap in hotspot.accessPoints { ap.hostapd?.close() }
        }
        // The internet's and the portals' servers are this process's threads: the lab's teardown (its processes by pid,
        // its namespaces) would not end them.
        var errors: [any Error] = []
        for service in servedHere.withLock({ $0 }) {
            do { try service.stop() } catch { errors.append(error) }
        }
        errors += lab.teardown()
        VMLogMirror.copyOut(logDirectory)
        return errors
    }

    // MARK: building

    func measure<T>(_ label: String, _ body: () throws -> T) rethrows -> T {
        let start = ContinuousClock.now
        let result = try body()
        let elapsed = ContinuousClock.now - start
        timings.append((label, elapsed.secondsDouble))
        return result
    }

    func note(_ label: String, since start: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - start
        timings.append((label, elapsed.secondsDouble))
    }

    func build() throws {
        do { try FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true) } catch {
            throw SystemError("create the lab's log folder", logDirectory, fileError: error)
        }
        // The lab CA always exists: the internet serves HTTPS with it, a portal could switch to HTTPS only, and the
        // helpers (and tools, through the bundle) are told of it at start.
        try measure("lab CA") {
            try PortalTLS.makeCA(labLogDirectory: logDirectory, openssl: try Self.findTool("openssl"))
            try PortalTLS.makeCABundle(labLogDirectory: logDirectory)
        }
        let internetNS = try measure("internet namespace") { try lab.createNamespace("net") }
        internet = internetNS
        try internetNS.route.addAddress(try prefix("\(topology.internet.address)/32"), to: "lo")
        try internetNS.route.addAddress(IPPrefix(Internet.address6, length: 128), to: "lo")
        // Served in this process, listening when `start` returns (no process of its own: InternetService).
        let internetService = InternetService(internet: topology.internet, namespace: internetNS, labLogDirectory: logDirectory)
        servesHere(internetService)
        try measure("internet server ready") { try internetService.start() }
        internetServer = internetService

        // Daemons start at once; their readiness is awaited after every hotspot is started, so slow
        // starts (a Swift binary over 9p under TCG) overlap.
        var pending: [(String, () throws -> Void)] = []
        for (index, hotspot) in topology.hotspots.enumerated() {
            try measure("hotspot \(hotspot.name) started") {
                hotspots.append(try buildHotspot(hotspot, index: index, pending: &pending))
            }
        }
        // The stations (wpa_supplicant, hotspotd, the helpers, each awaited in turn) are built on a thread of their own
        // while the hotspots' readiness is awaited here: under TCG both are mostly process starts, and one after the
        // other left a vCPU idle through each wait (issue 25). Nothing a station does at its start needs a hotspot to be
        // ready: it joins, scans or leases only when a step asks, after `up` returns. Their timings are noted after.
        let stationBuild = try startStations()
        var hotspotsError: (any Error)?
        do {
            for (label, wait) in pending { try measure(label, wait) }
            // DNS faults a topology asks for from the start (`faults: {dns: MODE}`) other than dnsmasq's own.
            for hotspot in topology.hotspots {
                if let mode = hotspot.faults.dns, mode != "normal", mode != "refused" {
                    try measure("hotspot \(hotspot.name): DNS \(mode)") { try setDNS(hotspot: hotspot.name, mode: mode) }
                }
            }
        } catch {
            hotspotsError = error
        }
        stationBuild?.thread.join()
        // The stations built so far belong to the lab either way (`down()` closes them).
        let built = stationBuild?.outcome.withLock { $0 }
        stations += built?.stations ?? []
        timings += built?.timings ?? []
        if let error = hotspotsError ?? built?.error { throw error }
    }

    /// What the station thread built, its timings (noted on `timings` after it is joined) and its error.
    struct StationBuild {
        var stations: [RunningStation] = []
        var timings: [(String, Double)] = []
        var error: (any Error)?
    }

    /// Starts building every station of the topology on a thread of its own (nil: the lab has no stations).
    func startStations() throws -> (thread: SystemThread, outcome: Locked<StationBuild>)? {
        guard let stationOptions = options.stations, !topology.stations.isEmpty else { return nil }
        let outcome = Locked(StationBuild())
        // The topology is only read by the thread; `stations` and `timings` are written after it is joined.
        let box = UncheckedBox(self)
        let thread = try SystemThread.start("build the stations of lab \(lab.prefix)") {
            let running = box.value
            for (index, station) in running.topology.stations.enumerated() {
                let start = ContinuousClock.now
                do {
                    let built: RunningStation
                    switch running.options.linkMode {
                    case .radio:
                        built = try RunningStation.build(station, index: index, lab: running.lab, topology: running.topology,
                                                         logDirectory: running.logDirectory, options: stationOptions)
                    case .veth:
                        built = try RunningStation.buildLinked(station, index: index, lab: running, topology: running.topology,
                                                               logDirectory: running.logDirectory, options: stationOptions)
                    }
                    let elapsed = (ContinuousClock.now - start).secondsDouble
                    outcome.withLock {
                        $0.stations.append(built)
                        $0.timings.append(("station \(station.name) ready", elapsed))
                    }
                } catch {
                    outcome.withLock { $0.error = error }
                    return
                }
            }
        }
        return (thread, outcome)
    }

    /// The station by name (nil: the first).
    public func station(_ name: String? = nil) -> RunningStation? {
        guard let name else { return stations.first }
        return stations.first { $0.station.name == name }
    }

    func prefix(_ text: String) throws -> IPPrefix {
        try IPPrefix.parse(text)
    }

    /// One hotspot: its namespace, then its services in order (uplink, LAN side, gate, portal, one access
    /// point per radio, DHCP/DNS). The daemons are launched here; their readiness waits go to `pending`.
    func buildHotspot(_ hotspot: Hotspot, index: Int,
                      pending: inout [(String, () throws -> Void)]) throws -> RunningHotspot {
        let gateway = hotspot.gateway
        let dir = logDirectory + "/" + hotspot.name
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let ns = try lab.createNamespace("h\(index)")
        let uplink = try UplinkService(hotspot: hotspot, index: index, lab: lab, namespace: ns, internet: internet,
                                       topology: topology, launcher: launcher)
        try measure("\(hotspot.name): uplink") { try uplink.start() }
        let side = try measure("\(hotspot.name): LAN") { try buildLAN(hotspot, index: index, in: ns) }
        let gate = GateService(gateway: gateway, namespace: ns.name, lan: side.lan, uplink: uplink.interface, directory: dir, launcher: launcher)
        let nat64Tun = gateway.ip == .v6Only ? try lab.name("h\(index)t") : nil
        gate.nat64 = nat64Tun
        try measure("\(hotspot.name): gate") { try gate.start() }
        var logs: [String: String] = [:]
        // IPv6 (`ip: dual` or `v6-only`): the LAN's address first (the portal listens on it,
        // dnsmasq's DHCPv6 range needs it), then the RAs.
        var routerAdvertisements: RouterAdvertisementService?
        if let ipv6 = gateway.ipv6 {
            let service = RouterAdvertisementService(hotspot: hotspot, ipv6: ipv6, namespace: ns, interface: side.lan, directory: dir, launcher: launcher)
            try service.launch()
            logs.merge(service.logFiles) { _, new in new }
            pending.append(("\(hotspot.name): router advertisements", service.waitUntilReady))
            routerAdvertisements = service
        }
        // IPv6 only: NAT64 (tayga) and DNS64 (unbound on the gateway's IPv6 address) to the IPv4 internet.
        var nat64: NAT64Service?
        if let nat64Tun {
            let service = NAT64Service(hotspot: hotspot, namespace: ns, tun: nat64Tun, directory: dir, launcher: launcher)
            try service.launch()
            logs.merge(service.logFiles) { _, new in new }
            pending.append(("\(hotspot.name): NAT64 and DNS64", service.waitUntilReady))
            nat64 = service
        }

        var portal: PortalService?
        if let settings = gateway.portal {
            let service = PortalService(hotspot: hotspot, kind: settings.kind, settings: settings.settings, namespace: ns,
                                        labLogDirectory: logDirectory, launcher: launcher)
            // Served in this process, listening when `launch` returns (no process of its own: PortalService).
            servesHere(service)
            try measure("\(hotspot.name): portal ready") { try service.launch() }
            logs.merge(service.logFiles) { _, new in new }
            portal = service
        }

        // hostapd per radio (radio mode); AP-ENABLED is awaited with the other daemons' readiness, so several
        // hostapds start in parallel.
        var accessPoints: [AccessPointService] = []
        if !side.apInterfaces.isEmpty {
            let security = try measure("\(hotspot.name): access point security") {
                try AccessPointService.prepareSecurity(hotspot, directory: dir, launcher: launcher)
            }
            for (n, interface) in side.apInterfaces.enumerated() {
                let service = AccessPointService(hotspot: hotspot, number: n, interface: interface,
                                                 bridge: side.apInterfaces.count > 1 ? side.lan : nil, namespace: ns.name,
                                                 directory: dir, security: security, launcher: launcher)
                try service.launch()
                logs.merge(service.logFiles) { _, new in new }
                accessPoints.append(service)
                let hostapdStart = ContinuousClock.now
                pending.append(("\(hotspot.name): \(service.serviceName) enabled", { [unowned self] in
                    try service.waitUntilReady()
                    if let position = self.hotspots.firstIndex(where: { $0.index == index }) {
                        self.hotspots[position].accessPoints[n].hostapd = service.control
                    }
                    self.note("\(hotspot.name): \(service.serviceName) enabled since spawn", since: hostapdStart)
                }))
            }
        }

        let dhcpDNS = DHCPDNSService(hotspot: hotspot, internet: topology.internet, namespace: ns.name, interface: side.lan,
                                     directory: dir, launcher: launcher)
        try dhcpDNS.launch()
        logs.merge(dhcpDNS.logFiles) { _, new in new }
        pending.append(("\(hotspot.name): dnsmasq ready", dhcpDNS.waitUntilReady))

        return RunningHotspot(
            hotspot: hotspot, index: index, namespace: ns, lanInterface: side.lan, uplinkInterface: uplink.interface,
            stationNamespace: side.stationNamespace, stationInterface: side.stationInterface,
            accessPoints: accessPoints.map { RunningAccessPoint(accessPoint: $0.accessPoint, interface: $0.interface, hostapdControlPath: $0.controlPath) },
            logs: logs, uplink: uplink, gate: gate, portalService: portal, accessPointServices: accessPoints, dhcpDNS: dhcpDNS,
            routerAdvertisements: routerAdvertisements, nat64: nat64)
    }

    /// A hotspot's LAN side: the gateway address on a veth to a station namespace (veth mode), or on the
    /// one radio's interface or the bridge of several radios (radio mode; hostapd's `bridge=` enslaves each
    /// AP interface once it is in AP mode).
    struct LANSide {
        var lan: String
        var apInterfaces: [String] = []
        var stationNamespace: NetworkNamespace?
        var stationInterface: String?
    }

    func buildLAN(_ hotspot: Hotspot, index: Int, in ns: NetworkNamespace) throws -> LANSide {
        let gatewayPrefix = try prefix("\(hotspot.gateway.address)/\(hotspot.gateway.subnet.length)")
        switch options.linkMode {
        case .veth where options.stations != nil:
            // The native tier's segment: a bridge the stations' links are attached to (`StationLink`).
            let bridge = try lab.name("h\(index)b")
            try ns.route.createBridge(bridge)
            try ns.route.setUp(bridge)
            try ns.route.addAddress(gatewayPrefix, to: bridge)
            return LANSide(lan: bridge)
        case .veth:
            let sta = try lab.createNamespace("s\(index)")
            try lab.connect(ns, "h\(index)l", addresses: [gatewayPrefix], to: sta, "s\(index)c")
            return LANSide(lan: try lab.name("h\(index)l"), stationNamespace: sta, stationInterface: try lab.name("s\(index)c"))
        case .radio:
            var apInterfaces: [String] = []
            for (n, ap) in hotspot.accessPoints.enumerated() {
                let (_, interfaces) = try measure("\(hotspot.name): radio \(ap.bssid)") {
                    try lab.createRadio(n == 0 ? "h\(index)r" : "h\(index)r\(n)", in: ns)
                }
                guard let interface = interfaces.first else {
                    throw SystemError("create radio", "for access point \(ap.bssid) of hotspot \(hotspot.name)", reason: "the new radio has no interface")
                }
                apInterfaces.append(interface)
            }
            var lan = apInterfaces.first ?? ""
            if apInterfaces.count != 1 {
                lan = try lab.name("h\(index)b")
                try ns.route.createBridge(lan)
                try ns.route.setUp(lan)
            }
            try ns.route.addAddress(gatewayPrefix, to: lan)
            return LANSide(lan: lan, apInterfaces: apInterfaces)
        }
    }

    // MARK: helpers

    public static func findTool(_ name: String) throws -> String {
        try SystemTools.require(name, package: name == "nft" ? "nftables" : name)
    }

    /// The last lines of a log, on one line.
    static func tail(_ path: String, lines: Int = 14) -> String { Readiness.tail(path, lines: lines) }

    /// How to enter each namespace and where the logs are.
    public func summary() -> String {
        var lines = ["lab \(lab.prefix) up: topology \(topology.name) (\(topology.file))", "logs: \(logDirectory)"]
        lines.append("internet  ip netns exec \(internet.name) bash    # \(topology.internet.address):\(topology.internet.port) and HTTPS :\(InternetService.tlsPort), log internet.log")
        lines.append("  CA bundle for station tools: \(PortalTLS.caBundle(labLogDirectory: logDirectory)) (SSL_CERT_FILE, CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE)")
        for running in hotspots {
            let h = running.hotspot
            var line = "hotspot \(h.name) \(h.rawSSID.printable) \(h.bssid) ch \(h.channel) \(h.security.kindName)"
            if let portal = h.gateway.portal {
                line += ", portal \(portal.kind) at \(h.gateway.portalURL ?? "")"
                if PortalTLS.isHTTPSOnly(portal.settings) { line += " (HTTPS only: \(PortalTLS.url(hotspot: h.name)), CA \(PortalTLS.caFile(labLogDirectory: logDirectory)))" }
            } else {
                line += ", not captive"
            }
            lines.append(line)
            lines.append("  ip netns exec \(running.namespace.name) bash    # gateway \(h.gateway.address) on \(running.lanInterface), uplink \(running.uplinkInterface)")
            if let sta = running.stationNamespace, let interface = running.stationInterface {
                lines.append("  station side: ip netns exec \(sta.name) bash    # interface \(interface); udhcpc -i \(interface)")
            }
            for ap in running.accessPoints {
                lines.append("  hostapd_cli -p \((ap.hostapdControlPath as NSString).deletingLastPathComponent) -i \(ap.interface)"
                             + "    # access point \(ap.accessPoint.bssid), channel \(ap.accessPoint.channel)")
            }
            for (name, path) in running.logs.sorted(by: { $0.key < $1.key }) { lines.append("  \(name) log: \(path)") }
        }
        for station in stations {
            lines.append("station \(station.station.name): helpers \(station.helpers.map { $0.identifier ?? $0.command }.joined(separator: ", "))")
            let providerApps = station.station.apps.filter(\.hasProviders)
            if !providerApps.isEmpty {
                lines.append("  provider apps (\(RunningStation.appsFile(directory: station.directory))): " + providerApps.map { app in
                    app.bundleIdentifier + (app.manager?.isEnabled == true ? " (enabled)" : " (not enabled)")
                }.joined(separator: ", "))
            }
            lines.append("  \((try? NSExec.path()) ?? "hotspot-nsexec") --resolv-conf \(station.resolvConf) /run/netns/\(station.namespace.name) -- bash"
                         + "    # the station's DNS as /etc/resolv.conf; interface \(station.interface), wpa_cli -p \(station.directory)/wpa-ctrl")
            lines.append("  hotspotd: \(station.hotspotdRunDirectory)/control.sock, trace \(station.traceFile), log \(station.hotspotdLog)")
            if let first = station.station.knownNetworks.first {
                lines.append("  drive it: hotspot-lab ctl --station \(station.station.name) \(first.rawSSID.isUTF8 ? "join \(SSIDText.printable(first.ssid))" : "join --ssid-hex \(first.rawSSID.hex)")   (status, trace, foreground, logoff, leave, auto-join)")
            }
        }
        lines.append("timings: " + timings.map { String(format: "%@ %.2f s", $0.0, $0.1) }.joined(separator: ", "))
        return lines.joined(separator: "\n")
    }
}

