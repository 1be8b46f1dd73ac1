import Foundation
import HotspotSystem
import Netlink

/// How a hotspot's LAN side is made.
public enum HotspotLinkMode: Sendable, Equatable {
    /// A mac80211_hwsim radio in the hotspot namespace, served by hostapd (needs hwsim: the VM).
    case radio
    /// A veth pair to a per-hotspot station namespace standing in for the radio link (host kernels
    /// without wireless; used by the gate/portal tests).
    case veth
}

public struct HotspotLabOptions: Sendable {
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
public struct RunningAccessPoint: @unchecked Sendable {
    public var accessPoint: AccessPoint
    /// The radio's interface in the hotspot namespace (enslaved to the hotspot's bridge when it has several).
    public var interface: String
    public var hostapdControlPath: String
    /// hostapd's control connection, attached to its events.
    public var hostapd: DaemonControl?
}

/// Where a `link:` fault applies: the hotspot's uplink (toward the internet) or its radio side (toward the
/// stations).
public enum LinkSide: String, Sendable, CaseIterable { case uplink, radio }

/// One hotspot as it runs.
public struct RunningHotspot: @unchecked Sendable {
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
    public var hostapd: DaemonControl? { accessPoints.first?.hostapd }
    public var logs: [String: String]
    /// The portal server process (nil: not captive) and the kind it serves now.
    public var portal: ChildProcess?
    public var portalKind: String?
    /// dnsmasq (DHCP and DNS) and how its DNS answers now.
    public var dnsmasq: ChildProcess?
    public var dnsMode: DnsmasqConfig.Mode = .normal
    /// Queries are dropped (the `no-answer` DNS fault).
    public var dnsDropped = false
    /// `hotspot-dns-fault`, answering every query SERVFAIL (the `servfail` DNS fault).
    public var dnsFault: ChildProcess?
}

/// Brings a topology up inside a `Lab`: the internet namespace (probe + web server), and per hotspot a
/// namespace with hostapd (or a veth), dnsmasq, the nftables gate and the portal server, linked to the
/// internet by a veth. Everything is created through the lab, so `down()` (the lab's teardown) stops
/// every daemon by pid and deletes every namespace.
public final class HotspotLab: @unchecked Sendable {
    public let lab: Lab
    public let topology: Topology
    public let options: HotspotLabOptions
    public let logDirectory: String
    public private(set) var internet: NetworkNamespace!
    public private(set) var hotspots: [RunningHotspot] = []
    /// The topology's stations, when `options.stations` asked for them.
    public private(set) var stations: [RunningStation] = []
    /// Seconds each phase took (for the bench).
    public private(set) var timings: [(String, Double)] = []

    init(lab: Lab, topology: Topology, options: HotspotLabOptions) {
        self.lab = lab
        self.topology = topology
        self.options = options
        let root = options.logRoot ?? ProcessInfo.processInfo.environment["HOTSPOT_LAB_LOGS"] ?? "/tmp/hotspot-lab"
        logDirectory = root + "/" + lab.prefix
    }

    /// Validates tools, then builds everything. On any failure what was built is torn down and the error
    /// is rethrown (nothing left half-built).
    public static func up(_ topology: Topology, options: HotspotLabOptions = HotspotLabOptions()) throws -> HotspotLab {
        let portal = try BuildProducts.locate("hotspot-portal", environmentKey: "HOTSPOT_PORTAL")
        var tools = ["dnsmasq", "nft"]
        if options.linkMode == .radio { tools.append("hostapd") }
        if options.stations != nil {
            guard options.linkMode == .radio else {
                throw SystemError("start stations", topology.file, reason: "stations need radios (--link radio; mac80211_hwsim: the VM)")
            }
            tools += ["wpa_supplicant", "curl", "busybox"]
            _ = try BuildProducts.locate("hotspotd", environmentKey: "HOTSPOTD")
        }
        if topology.hotspots.contains(where: { if case .wpa2Enterprise(.peap, _) = $0.security { return true }; return false })
            || topology.hotspots.contains(where: { $0.gateway.portal != nil })
        {
            tools.append("openssl") // PEAP's certificate; the lab CA and the https-only portals' certificates
        }
        for tool in tools { _ = try findTool(tool) }
        let labStart = ContinuousClock.now
        // Lab.start races with another process's dead-run cleaning between creating its state folder and
        // writing the owner file (the cleaner sees no owner and removes the folder): retry on ENOENT.
        var attempt = 0
        let lab: Lab = try {
            while true {
                do {
                    return try Lab.start(runID: options.runID)
                } catch let error as SystemError where error.errno == ENOENT && attempt < 3 {
                    attempt += 1
                }
            }
        }()
        let hotspotLab = HotspotLab(lab: lab, topology: topology, options: options)
        hotspotLab.note("lab start", since: labStart)
        do {
            try hotspotLab.build(portalBinary: portal)
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
        let errors = lab.teardown()
        VMLogMirror.copyOut(logDirectory)
        return errors
    }

    // MARK: building

    func measure<T>(_ label: String, _ body: () throws -> T) rethrows -> T {
        let start = ContinuousClock.now
        let result = try body()
        let elapsed = ContinuousClock.now - start
        timings.append((label, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        return result
    }

    func note(_ label: String, since start: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - start
        timings.append((label, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
    }

    func build(portalBinary: String) throws {
        try FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true)
        if topology.hotspots.contains(where: { $0.gateway.portal != nil }) {
            // The lab CA exists whenever a portal could switch to HTTPS only: the helpers are told of it at start.
            try measure("lab CA") { try PortalTLS.makeCA(labLogDirectory: logDirectory, openssl: try Self.findTool("openssl")) }
        }
        let internetNS = try measure("internet namespace") { try lab.createNamespace("net") }
        internet = internetNS
        try internetNS.route.addAddress(try prefix("\(topology.internet.address)/32"), to: "lo")
        let internetLog = logDirectory + "/internet.log"
        let ready = logDirectory + "/internet.ready"
        unlink(ready)
        let server = try lab.spawn(ProcessConfiguration(
            portalBinary, ["--internet", "--listen", "\(topology.internet.address):\(topology.internet.port)", "--ready-file", ready],
            stdout: .file(internetLog), stderr: .file(internetLog)), in: internetNS)

        // Daemons start at once; their readiness is awaited after every hotspot is started, so slow
        // starts (a Swift binary over 9p under TCG) overlap.
        var pending: [(String, () throws -> Void)] = []
        for (index, hotspot) in topology.hotspots.enumerated() {
            try measure("hotspot \(hotspot.name) started") {
                hotspots.append(try buildHotspot(hotspot, index: index, portalBinary: portalBinary, pending: &pending))
            }
        }
        for (label, wait) in pending { try measure(label, wait) }
        // DNS faults a topology asks for from the start (`faults: {dns: MODE}`) other than dnsmasq's own.
        for hotspot in topology.hotspots {
            if let mode = hotspot.faults.dns, mode != "normal", mode != "refused" {
                try measure("hotspot \(hotspot.name): DNS \(mode)") { try setDNS(hotspot: hotspot.name, mode: mode) }
            }
        }
        try measure("internet server ready") {
            try Self.waitForFile(ready, child: server, log: internetLog, what: "internet server")
        }
        if let stationOptions = options.stations {
            for (index, station) in topology.stations.enumerated() {
                try measure("station \(station.name) ready") {
                    stations.append(try RunningStation.build(station, index: index, lab: lab, topology: topology,
                                                             logDirectory: logDirectory, options: stationOptions))
                }
            }
        }
    }

    /// The station by name (nil: the first).
    public func station(_ name: String? = nil) -> RunningStation? {
        guard let name else { return stations.first }
        return stations.first { $0.station.name == name }
    }

    func prefix(_ text: String) throws -> IPPrefix {
        try IPPrefix.parse(text)
    }

    func buildHotspot(_ hotspot: Hotspot, index: Int, portalBinary: String,
                      pending: inout [(String, () throws -> Void)]) throws -> RunningHotspot {
        let gateway = hotspot.gateway
        let dir = logDirectory + "/" + hotspot.name
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let ns = try lab.createNamespace("h\(index)")
        let uplinkName = "h\(index)u"
        let (internetSide, hotspotSide) = topology.internet.uplink(index)
        try lab.connect(ns, uplinkName, addresses: [try prefix("\(hotspotSide)/30")],
                        to: internet, "h\(index)i", addresses: [try prefix("\(internetSide)/30")])
        if !hotspot.faults.uplinkDown {
            try ns.route.addRoute(Route(gateway: IPAddress("\(internetSide)")!))
        }
        let f = hotspot.faults
        let startNetem = Self.netem(latencyMS: f.latencyMS, jitterMS: f.jitterMS, lossPercent: Double(f.lossPercent), rateKbit: f.rateKbit)
        if !startNetem.isEmpty {
            // Latency, jitter, loss and a rate limit on the uplink (egress of the hotspot's side) with netem.
            let uplinkLink = try lab.name(uplinkName)
            let netem = ["qdisc", "add", "dev", uplinkLink, "root", "netem"] + startNetem
            let tc = try ProcessRunner.run(ProcessConfiguration(try Self.findTool("tc"), netem).inNetworkNamespace(ns.name),
                                           timeout: .seconds(10))
            guard tc.status.succeeded else {
                throw SystemError("apply faults latency-ms/loss-percent of hotspot \(hotspot.name) on", uplinkLink,
                                  reason: "tc \(netem.joined(separator: " ")): \(tc.stderr.trimmingCharacters(in: .whitespacesAndNewlines)) "
                                      + "(this kernel may lack netem; the VM kernel has it: --where vm)")
            }
        }
        // net.* sysctls belong to the writing thread's namespace: write from inside.
        try ns.runInside {
            let fd = open("/proc/sys/net/ipv4/ip_forward", O_WRONLY)
            guard fd >= 0 else { throw SystemError.current("open", "/proc/sys/net/ipv4/ip_forward") }
            defer { close(fd) }
            guard write(fd, "1\n", 2) == 2 else { throw SystemError.current("enable forwarding in", ns.name) }
        }
        let uplink = try lab.name(uplinkName)
        var logs: [String: String] = [:]

        // LAN side.
        var lan: String
        var stationNS: NetworkNamespace?
        var stationInterface: String?
        var apInterfaces: [String] = []
        var runningAPs: [RunningAccessPoint] = []
        let gatewayPrefix = try prefix("\(gateway.address)/\(gateway.subnet.length)")
        switch options.linkMode {
        case .veth:
            let sta = try lab.createNamespace("s\(index)")
            try lab.connect(ns, "h\(index)l", addresses: [gatewayPrefix], to: sta, "s\(index)c")
            lan = try lab.name("h\(index)l")
            stationNS = sta
            stationInterface = try lab.name("s\(index)c")
        case .radio:
            // One radio per access point. Several access points share the LAN through a bridge (hostapd's
            // `bridge=` enslaves each AP interface once it is in AP mode); the gateway address is on the bridge.
            for (n, ap) in hotspot.accessPoints.enumerated() {
                let (_, interfaces) = try measure("\(hotspot.name): radio \(ap.bssid)") {
                    try lab.createRadio(n == 0 ? "h\(index)r" : "h\(index)r\(n)", in: ns)
                }
                guard let interface = interfaces.first else {
                    throw SystemError("create radio", "for access point \(ap.bssid) of hotspot \(hotspot.name)", reason: "the new radio has no interface")
                }
                apInterfaces.append(interface)
            }
            if apInterfaces.count == 1 {
                lan = apInterfaces[0]
            } else {
                lan = try lab.name("h\(index)b")
                try ns.route.createBridge(lan)
                try ns.route.setUp(lan)
            }
            try ns.route.addAddress(gatewayPrefix, to: lan)
        }

        // The gate.
        let rules = dir + "/gate.nft"
        try GateRuleset.render(gateway, lan: lan, uplink: uplink).write(toFile: rules, atomically: true, encoding: .utf8)
        let nft = try ProcessRunner.run(ProcessConfiguration(try Self.findTool("nft"), ["-f", rules]).inNetworkNamespace(ns.name),
                                        timeout: .seconds(10))
        guard nft.status.succeeded else {
            throw SystemError("load the captive gate", "\(rules) into \(ns.name)",
                              reason: "nft -f: \(nft.status): " + nft.stderr.split(separator: "\n").joined(separator: " | "))
        }

        // The portal.
        var portalChild: ChildProcess?
        if let portal = gateway.portal {
            logs["portal"] = dir + "/portal.log"
            let (child, wait) = try startPortal(hotspot, in: ns, kind: portal.kind, settings: portal.settings, portalBinary: portalBinary)
            portalChild = child
            pending.append(("\(hotspot.name): portal ready", wait))
        }

        // hostapd (radio mode): wait for AP-ENABLED on its control socket.
        if options.linkMode == .radio {
            let ctrlDirectory = dir + "/hostapd-ctrl"
            var eapUsers: String?
            var certificates: HostapdConfig.CertificateFiles?
            if let users = HostapdConfig.eapUsers(hotspot.security) {
                eapUsers = dir + "/eap_users"
                try users.write(toFile: eapUsers!, atomically: true, encoding: .utf8)
                if case .wpa2Enterprise(.peap, _) = hotspot.security {
                    certificates = try Self.makeCertificates(in: dir, name: hotspot.ssid)
                }
            }
            let ctrlDir = ctrlDirectory
            for (n, ap) in hotspot.accessPoints.enumerated() {
                let interface = apInterfaces[n]
                let conf = dir + (n == 0 ? "/hostapd.conf" : "/hostapd-\(n).conf")
                try HostapdConfig.render(hotspot.served(by: ap), interface: interface, controlDirectory: ctrlDir, eapUserFile: eapUsers,
                                         certificates: certificates, bridge: apInterfaces.count > 1 ? lan : nil)
                    .write(toFile: conf, atomically: true, encoding: .utf8)
                let log = dir + (n == 0 ? "/hostapd.log" : "/hostapd-\(n).log")
                logs[n == 0 ? "hostapd" : "hostapd-\(n)"] = log
                let child = try lab.spawn(ProcessConfiguration(try Self.findTool("hostapd"), ["-t", conf],
                                                               stdout: .file(log), stderr: .file(log)), in: ns)
                let path = ctrlDir + "/" + interface
                runningAPs.append(RunningAccessPoint(accessPoint: ap, interface: interface, hostapdControlPath: path, hostapd: nil))
                // AP-ENABLED is awaited with the other daemons' readiness, so several hostapds start in parallel.
                let hostapdStart = ContinuousClock.now
                pending.append(("\(hotspot.name): hostapd \(ap.bssid) enabled", { [unowned self] in
                    let ctl: DaemonControl
                    do {
                        ctl = try DaemonControl.connect(serverPath: path, timeout: .seconds(15))
                        try ctl.attach()
                        let status = DaemonControl.keyValues(try ctl.request("STATUS"))
                        if status["state"] != "ENABLED" {
                            _ = try ctl.waitForEvent(["AP-ENABLED"], timeout: .seconds(15))
                        }
                    } catch {
                        throw SystemError("start hostapd", "for access point \(ap.bssid) of hotspot \(hotspot.name)",
                                          reason: "\(error) (exit: \(String(describing: try? child.poll()))); log \(log): \(Self.tail(log))")
                    }
                    if let position = self.hotspots.firstIndex(where: { $0.index == index }) {
                        self.hotspots[position].accessPoints[n].hostapd = ctl
                    }
                    self.note("\(hotspot.name): hostapd \(ap.bssid) enabled since spawn", since: hostapdStart)
                }))
            }
        }

        // dnsmasq.
        let dnsLog = dir + "/dnsmasq.log"
        logs["dnsmasq"] = dnsLog
        try? FileManager.default.removeItem(atPath: dnsLog)
        let dnsmasq = try lab.spawn(ProcessConfiguration(
            try Self.findTool("dnsmasq"),
            DnsmasqConfig.arguments(hotspot, internet: topology.internet, interface: lan, leaseFile: dir + "/dnsmasq.leases", logFile: dnsLog),
            stdout: .file(dnsLog), stderr: .file(dnsLog)), in: ns)
        pending.append(("\(hotspot.name): dnsmasq ready", {
            try Self.waitForLogLine(dnsLog, containing: "started, version", child: dnsmasq, what: "dnsmasq for \(hotspot.name)")
        }))

        return RunningHotspot(
            hotspot: hotspot, index: index, namespace: ns, lanInterface: lan, uplinkInterface: uplink,
            stationNamespace: stationNS, stationInterface: stationInterface, accessPoints: runningAPs, logs: logs, portal: portalChild, portalKind: gateway.portal?.kind, dnsmasq: dnsmasq,
            dnsMode: hotspot.faults.dns == "refused" ? .refused : .normal)
    }

    /// DNS faults during a run (docs/REPLAY.md): `no-answer` drops every query at the hotspot (an nftables
    /// table of the fault's own); `refused`, `hijack`, `private` and `normal` restart dnsmasq answering that way
    /// (its leases are kept in the lease file; the previous log is kept as dnsmasq.log.N); `servfail` restarts
    /// dnsmasq for DHCP only and starts `hotspot-dns-fault` on the gateway's port 53 (log: dns-fault.log).
    public static let dnsModes = ["no-answer"] + DnsmasqConfig.Mode.allCases.map(\.rawValue)

    @discardableResult
    public func setDNS(hotspot name: String, mode: String) throws -> String {
        guard let position = hotspots.firstIndex(where: { $0.hotspot.name == name }) else {
            throw SystemError("set the DNS of", name, reason: "no such hotspot in \(topology.file)")
        }
        let running = hotspots[position]
        let nft = try Self.findTool("nft")
        let dropTable = ["inet", "hsldnsfault"]
        if mode == "no-answer" {
            let rules = "table inet hsldnsfault {\n  chain input {\n    type filter hook input priority -10; policy accept;\n    udp dport 53 drop\n    tcp dport 53 drop\n  }\n}\n"
            let file = logDirectory + "/" + running.hotspot.name + "/dns-fault.nft"
            try rules.write(toFile: file, atomically: true, encoding: .utf8)
            let result = try ProcessRunner.run(ProcessConfiguration(nft, ["-f", file]).inNetworkNamespace(running.namespace.name))
            guard result.status.succeeded else { throw SystemError("drop DNS queries at", name, reason: "nft -f: \(result.stderr)") }
            hotspots[position].dnsDropped = true
            return "DNS of \(name): no answer (queries dropped)"
        }
        guard let newMode = DnsmasqConfig.Mode(rawValue: mode) else {
            throw SystemError("set the DNS of", name, reason: "unknown mode `\(mode)`; expected one of \(Self.dnsModes.joined(separator: ", "))")
        }
        if running.dnsDropped {
            _ = try ProcessRunner.run(ProcessConfiguration(nft, ["delete", "table"] + dropTable).inNetworkNamespace(running.namespace.name))
            hotspots[position].dnsDropped = false
        }
        let dir = logDirectory + "/" + running.hotspot.name
        // The SERVFAIL server goes first: dnsmasq in another mode wants port 53 back.
        if newMode != .servfail, let fault = running.dnsFault {
            if fault.exitStatus == nil { _ = try fault.terminate(grace: .seconds(2)) }
            hotspots[position].dnsFault = nil
        }
        if newMode != running.dnsMode || running.dnsmasq == nil {
            let log = dir + "/dnsmasq.log"
            if let old = running.dnsmasq, old.exitStatus == nil { _ = try old.terminate(grace: .seconds(2)) }
            var generation = 1
            while FileManager.default.fileExists(atPath: "\(log).\(generation)") { generation += 1 }
            try? FileManager.default.moveItem(atPath: log, toPath: "\(log).\(generation)")
            let child = try lab.spawn(ProcessConfiguration(
                try Self.findTool("dnsmasq"),
                DnsmasqConfig.arguments(running.hotspot, internet: topology.internet, interface: running.lanInterface,
                                        leaseFile: dir + "/dnsmasq.leases", logFile: log, mode: newMode),
                stdout: .file(log), stderr: .file(log)), in: running.namespace)
            try Self.waitForLogLine(log, containing: "started, version", child: child, what: "dnsmasq for \(name)")
            hotspots[position].dnsmasq = child
            hotspots[position].dnsMode = newMode
        }
        if newMode == .servfail, hotspots[position].dnsFault?.exitStatus != nil || hotspots[position].dnsFault == nil {
            let log = dir + "/dns-fault.log"
            let ready = dir + "/dns-fault.ready"
            unlink(ready)
            let child = try lab.spawn(ProcessConfiguration(
                try BuildProducts.locate("hotspot-dns-fault", environmentKey: "HOTSPOT_DNS_FAULT"),
                ["--listen", "\(running.hotspot.gateway.address):53", "--rcode", "servfail", "--log", log, "--ready-file", ready],
                stdout: .file(log), stderr: .file(log)), in: running.namespace)
            try Self.waitForFile(ready, child: child, log: log, what: "the SERVFAIL DNS server (hotspot-dns-fault) of \(name)", timeout: .seconds(10))
            hotspots[position].dnsFault = child
        }
        return "DNS of \(name): \(newMode.rawValue)"
    }

    /// Starts the portal server of `hotspot` in its namespace; returns it and a wait for its readiness.
    func startPortal(_ hotspot: Hotspot, in ns: NetworkNamespace, kind: String, settings: [String: String],
                     portalBinary: String) throws -> (ChildProcess, () throws -> Void) {
        let gateway = hotspot.gateway
        let dir = logDirectory + "/" + hotspot.name
        let log = dir + "/portal.log"
        let ready = dir + "/portal.ready"
        unlink(ready)
        var args = ["--kind", kind, "--listen", "\(gateway.address):\(gateway.portal?.port ?? 8080)",
                    "--gate-table", "\(GateRuleset.family)/\(GateRuleset.table)/\(GateRuleset.set)",
                    "--session-seconds", "\(gateway.sessionSeconds)", "--ready-file", ready]
        if let value = settings[PortalTLS.setting], let problem = PortalTLS.problem(value) {
            throw SystemError("start the portal of", hotspot.name, reason: "setting `\(PortalTLS.setting)`: \(problem)")
        }
        if PortalTLS.isHTTPSOnly(settings) {
            let (certificate, key) = try PortalTLS.makeServerCertificate(
                labLogDirectory: logDirectory, hotspot: hotspot.name, gatewayAddress: "\(gateway.address)", openssl: try Self.findTool("openssl"))
            args += ["--https-listen", "\(gateway.address):\(PortalTLS.port)", "--https-url", PortalTLS.url(hotspot: hotspot.name),
                     "--tls-certificate", certificate, "--tls-key", key]
        }
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) where key != PortalTLS.setting { args += ["--setting", "\(key)=\(value)"] }
        let child = try lab.spawn(ProcessConfiguration(portalBinary, args, stdout: .file(log), stderr: .file(log)), in: ns)
        return (child, { try Self.waitForFile(ready, child: child, log: log, what: "portal \(kind) for \(hotspot.name)") })
    }

    /// The received signal mac80211_hwsim gives: -50 dBm plus the sender's tx power in dBm, which mac80211
    /// takes as a whole number from 0 dBm (the weakest, -50 dBm received) to the channel's 20 dBm (-30 dBm).
    public static let signalRange: ClosedRange<Int> = -50 ... -30

    /// What stations receive from the hotspot's access points (all, or the one with `bssid`): `dbm` in
    /// `signalRange`, set as the AP interface's tx power (`dbm + 50` dBm) through nl80211; nil: automatic
    /// (the radio's default, 20 dBm: -30 dBm received). Returns what it did, per access point.
    @discardableResult
    public func setSignal(_ running: RunningHotspot, bssid: String?, dbm: Int?) throws -> String {
        guard !running.accessPoints.isEmpty else {
            throw SystemError("set the signal of", running.hotspot.name, reason: "the hotspot has no radio (veth mode)")
        }
        if let dbm, !Self.signalRange.contains(dbm) {
            throw SystemError("set the signal of", running.hotspot.name,
                              reason: "\(dbm) dBm is outside what mac80211_hwsim can give (\(Self.signalRange.lowerBound)...\(Self.signalRange.upperBound) dBm)")
        }
        let targets = running.accessPoints.filter { bssid == nil || $0.accessPoint.bssid.text.lowercased() == bssid!.lowercased() }
        guard !targets.isEmpty else {
            throw SystemError("set the signal of", running.hotspot.name,
                              reason: "no access point \(bssid ?? "") (it has \(running.accessPoints.map(\.accessPoint.bssid.text).joined(separator: ", ")))")
        }
        let nl80211 = try running.namespace.runInside { try Nl80211() }
        let wireless = try nl80211.interfaces()
        var done: [String] = []
        for ap in targets {
            guard let interface = wireless.first(where: { $0.name == ap.interface }) else {
                throw SystemError("set the signal of", "\(running.hotspot.name) \(ap.accessPoint.bssid)",
                                  reason: "its interface \(ap.interface) is not a wireless interface in \(running.namespace.name)")
            }
            try nl80211.setTxPower(interface: interface, mBm: dbm.map { Int32(($0 + 50) * 100) })
            done.append("\(ap.accessPoint.bssid) " + (dbm.map { "\($0) dBm (tx power \($0 + 50) dBm)" } ?? "normal (automatic tx power)"))
        }
        return "signal of \(running.hotspot.name): " + done.joined(separator: ", ")
    }

    /// Every portal session of the hotspot ends, as at the session length: the gate's authenticated set is flushed.
    public func expirePortalSessions(_ running: RunningHotspot) throws {
        let flush = try ProcessRunner.run(ProcessConfiguration(try Self.findTool("nft"), ["flush", "set", GateRuleset.family, GateRuleset.table, GateRuleset.set])
            .inNetworkNamespace(running.namespace.name))
        guard flush.status.succeeded else {
            throw SystemError("expire the portal sessions of", running.hotspot.name, reason: "nft flush set: \(flush.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    /// netem's parameters for these faults (empty: none).
    static func netem(latencyMS: Int, jitterMS: Int, lossPercent: Double, rateKbit: Int) -> [String] {
        var args: [String] = []
        if latencyMS > 0 || jitterMS > 0 { args += ["delay", "\(latencyMS)ms"] + (jitterMS > 0 ? ["\(jitterMS)ms"] : []) }
        if lossPercent > 0 { args += ["loss", lossPercent == lossPercent.rounded() ? "\(Int(lossPercent))%" : "\(lossPercent)%"] }
        if rateKbit > 0 { args += ["rate", "\(rateKbit)kbit"] }
        return args
    }

    /// Latency, jitter, loss and a rate limit on a hotspot's uplink or radio side (its egress there), with
    /// netem; all zero removes it. Needs netem (the VM kernel has it; the host kernel here does not).
    @discardableResult
    public func setLinkQuality(_ running: RunningHotspot, side: LinkSide = .uplink, latencyMS: Int, jitterMS: Int, lossPercent: Double,
                               rateKbit: Int) throws -> String {
        let tc = try Self.findTool("tc")
        // The uplink: the hotspot's egress to the internet. The radio side: its egress to the stations (the
        // LAN interface; management frames such as beacons do not pass the qdisc, so stations stay associated).
        let device = side == .uplink ? running.uplinkInterface : running.lanInterface
        let what = "\(side.rawValue) of \(running.hotspot.name)"
        if latencyMS == 0 && jitterMS == 0 && lossPercent == 0 && rateKbit == 0 {
            _ = try ProcessRunner.run(ProcessConfiguration(tc, ["qdisc", "del", "dev", device, "root"]).inNetworkNamespace(running.namespace.name))
            return "\(what): no added latency or loss"
        }
        let args = ["qdisc", "replace", "dev", device, "root", "netem"]
            + Self.netem(latencyMS: latencyMS, jitterMS: jitterMS, lossPercent: lossPercent, rateKbit: rateKbit)
        let result = try ProcessRunner.run(ProcessConfiguration(tc, args).inNetworkNamespace(running.namespace.name), timeout: .seconds(10))
        guard result.status.succeeded else {
            throw SystemError("set the link quality of the \(what) on", device,
                              reason: "tc \(args.joined(separator: " ")): \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)) "
                                  + "(this kernel may lack netem; the VM kernel has it: --where vm)")
        }
        return "\(what): " + args.dropFirst(6).joined(separator: " ")
    }

    /// The portal changes on the server side: the hotspot's portal server is replaced by one of `kind`
    /// (settings: the topology's, overridden by `settings`). The gate and its authenticated set stay.
    /// `kind` "down": the portal server dies (stopped), whatever it was doing; the gate still redirects to it.
    public func switchPortal(hotspot name: String, kind: String, settings: [String: String] = [:]) throws {
        guard let position = hotspots.firstIndex(where: { $0.hotspot.name == name }) else {
            throw SystemError("switch the portal of", name, reason: "no such hotspot in \(topology.file)")
        }
        if kind == "down" {
            if let old = hotspots[position].portal, old.exitStatus == nil { _ = try old.terminate(grace: .milliseconds(200)) }
            hotspots[position].portal = nil
            hotspots[position].portalKind = nil
            return
        }
        guard PortalCatalog.kinds.contains(kind) else {
            throw SystemError("switch the portal of", name, reason: "unknown portal kind `\(kind)`; expected one of: \(PortalCatalog.kinds.joined(separator: ", "))")
        }
        let running = hotspots[position]
        guard let current = running.hotspot.gateway.portal else {
            throw SystemError("switch the portal of", name, reason: "the hotspot is not captive (no portal in \(topology.file))")
        }
        if let old = running.portal, old.exitStatus == nil { _ = try old.terminate(grace: .seconds(2)) }
        let binary = try BuildProducts.locate("hotspot-portal", environmentKey: "HOTSPOT_PORTAL")
        let (child, wait) = try startPortal(running.hotspot, in: running.namespace, kind: kind,
                                            settings: current.settings.merging(settings) { _, new in new }, portalBinary: binary)
        try wait()
        hotspots[position].portal = child
        hotspots[position].portalKind = kind
    }

    // MARK: helpers

    /// A throwaway self-signed server certificate for PEAP (valid two days).
    static func makeCertificates(in dir: String, name: String) throws -> HostapdConfig.CertificateFiles {
        let cert = dir + "/server.pem"
        let key = dir + "/server.key"
        _ = try ProcessRunner.check(ProcessConfiguration(try findTool("openssl"), [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=hotspot-lab.invalid",
        ]), timeout: .seconds(30))
        return HostapdConfig.CertificateFiles(caCert: cert, serverCert: cert, privateKey: key)
    }

    public static func findTool(_ name: String) throws -> String {
        for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin"] {
            let path = dir + "/" + name
            if access(path, X_OK) == 0 { return path }
        }
        throw SystemError("find", name, reason: "not installed (apt-get install -y \(name == "nft" ? "nftables" : name))")
    }

    /// Waits for a daemon's readiness file (written once it listens); fails early if it exits.
    static func waitForFile(_ path: String, child: ChildProcess, log: String, what: String, timeout: Duration = .seconds(15)) throws {
        let deadline = ContinuousClock.now + timeout
        while access(path, F_OK) != 0 {
            if let status = try child.poll() {
                throw SystemError("start", what, reason: "exited (\(status)) before it was ready; log \(log): \(tail(log))")
            }
            if ContinuousClock.now >= deadline {
                throw SystemError("start", what, reason: "not ready within \(timeout); log \(log): \(tail(log))")
            }
            usleep(5_000)
        }
    }

    static func waitForLogLine(_ path: String, containing text: String, child: ChildProcess, what: String,
                               timeout: Duration = .seconds(15)) throws {
        let deadline = ContinuousClock.now + timeout
        while !(readSmallFile(path)?.contains(text) ?? false) {
            if let status = try child.poll() {
                throw SystemError("start", what, reason: "exited (\(status)); log \(path): \(tail(path))")
            }
            if ContinuousClock.now >= deadline {
                throw SystemError("start", what, reason: "no \"\(text)\" in its log within \(timeout); log \(path): \(tail(path))")
            }
            usleep(5_000)
        }
    }

    static func tail(_ path: String, lines: Int = 14) -> String {
        guard let text = readSmallFile(path) else { return "(no log)" }
        return text.split(separator: "\n").suffix(lines).joined(separator: " | ")
    }

    /// How to enter each namespace and where the logs are.
    public func summary() -> String {
        var lines = ["lab \(lab.prefix) up: topology \(topology.name) (\(topology.file))", "logs: \(logDirectory)"]
        lines.append("internet  ip netns exec \(internet.name) bash    # \(topology.internet.address):\(topology.internet.port), log internet.log")
        for running in hotspots {
            let h = running.hotspot
            var line = "hotspot \(h.name) \"\(h.ssid)\" \(h.bssid) ch \(h.channel) \(h.security.kindName)"
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
            lines.append("  ip netns exec \(station.namespace.name) bash    # interface \(station.interface), wpa_cli -p \(station.directory)/wpa-ctrl")
            lines.append("  hotspotd: \(station.hotspotdRunDirectory)/control.sock, trace \(station.traceFile), log \(station.hotspotdLog)")
            if let first = station.station.knownNetworks.first {
                lines.append("  drive it: hotspot-lab ctl --station \(station.station.name) join \"\(first.ssid)\"   (status, trace, foreground, logoff, leave, auto-join)")
            }
        }
        lines.append("timings: " + timings.map { String(format: "%@ %.2f s", $0.0, $0.1) }.joined(separator: ", "))
        return lines.joined(separator: "\n")
    }
}

/// In the VM, a lab's logs are copied to the results share when it goes down, under the same path the host
/// sees (`hotspot-lab` sets `HOTSPOT_LAB_VM_LOGS` to a host folder that is the share). Regular files only:
/// the control sockets stay behind.
public enum VMLogMirror {
    public static let environmentKey = "HOTSPOT_LAB_VM_LOGS"

    public static func copyOut(_ logDirectory: String) {
        let env = ProcessInfo.processInfo.environment
        guard InVM.isActive, let folder = env[environmentKey], let share = InVM.resultsDirectory, logDirectory.hasPrefix(folder + "/") else { return }
        let relative = String(logDirectory.dropFirst(folder.count + 1))
        let fm = FileManager.default
        guard let walker = fm.enumerator(atPath: logDirectory) else { return }
        while let item = walker.nextObject() as? String {
            let source = logDirectory + "/" + item
            var info = stat()
            guard lstat(source, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let target = share + "/" + relative + "/" + item
            try? fm.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try? fm.removeItem(atPath: target)
            try? fm.copyItem(atPath: source, toPath: target)
        }
    }
}

/// A report file (`--junit`, `--json`, `--html`) written by a command. Inside the VM the host's folders are
/// read-only (changes land in a throwaway overlay), so the file goes to the results share with a manifest
/// line, and the host process moves it to `path` when the VM has stopped (`deliver`).
public enum ReportFile {
    public static func write(_ text: String, to path: String) throws {
        let env = ProcessInfo.processInfo.environment
        // Relative to the directory the user ran the command in (inside the VM it may be another).
        let cwd = env["HOTSPOT_LAB_HOST_CWD"] ?? FileManager.default.currentDirectoryPath
        let absolute = path.hasPrefix("/") ? path : cwd + "/" + path
        guard InVM.isActive, env[VMLogMirror.environmentKey] != nil, let share = InVM.resultsDirectory else {
            try text.write(toFile: absolute, atomically: true, encoding: .utf8)
            return
        }
        let outputs = share + "/outputs"
        try FileManager.default.createDirectory(atPath: outputs, withIntermediateDirectories: true)
        let name = "\(getpid())-\(UInt64(Date().timeIntervalSince1970 * 1e6))"
        try text.write(toFile: outputs + "/" + name, atomically: false, encoding: .utf8)
        let line = name + "\t" + absolute + "\n"
        if let handle = FileHandle(forWritingAtPath: outputs + "/manifest") {
            handle.seekToEndOfFile()
            handle.write(Data(line.utf8))
            handle.closeFile()
        } else {
            try line.write(toFile: outputs + "/manifest", atomically: false, encoding: .utf8)
        }
    }

    /// On the host after a VM run: moves every report the run wrote to where it was asked for.
    public static func deliver(from folder: String) -> [String] {
        let outputs = folder + "/outputs"
        guard let manifest = try? String(contentsOfFile: outputs + "/manifest", encoding: .utf8) else { return [] }
        var delivered: [String] = []
        for line in manifest.split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            let target = parts[1]
            try? FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: target)
            do {
                try FileManager.default.moveItem(atPath: outputs + "/" + parts[0], toPath: target)
                delivered.append(target)
            } catch {
                FileHandle.standardError.write(Data("hotspot-lab: deliver the report \(target) from the VM: \(error)\n".utf8))
            }
        }
        return delivered
    }
}

