#if canImport(Glibc)
import Glibc
#endif
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Netlink

/// How hotspotd runs a real station (`hotspotd --wpa-supplicant CTRL-PATH`).
public struct StationOptions: Sendable {
    /// The Wi-Fi interface (wpa_supplicant's `-i`).
    public var interface: String
    /// wpa_supplicant's control socket for the interface (`ctrl_interface` directory + interface name).
    public var wpaControlPath: String
    /// Where the DHCP log, `lease.env` and `resolv.conf` go (hotspotd's run directory).
    public var runDirectory: String
    /// Carry out IP suppression with policy routing (`IPSuppression`); off: only traced.
    public var suppressIP: Bool
    /// How often the signal is read (`SIGNAL_POLL`) while associated; also at once on CTRL-EVENT-SIGNAL-CHANGE.
    public var signalPollInterval: Duration
    /// The RSSI change (dB) that counts as a change of signal (`signalChanged` to the state machine).
    public var signalChangeThreshold: Double
    /// How long the IPv6 side (a Router Advertisement, SLAAC or DHCPv6) may take after an association. Past it IPv6
    /// is given up for that association, which is traced (`ipv6Failed`) only when DHCPv4 failed too: no address.
    public var ipv6Timeout: Duration

    public init(interface: String, wpaControlPath: String, runDirectory: String, suppressIP: Bool = true,
                signalPollInterval: Duration = .seconds(1), signalChangeThreshold: Double = 2, ipv6Timeout: Duration = .seconds(60)) {
        self.interface = interface
        self.wpaControlPath = wpaControlPath
        self.runDirectory = runDirectory
        self.suppressIP = suppressIP
        self.signalPollInterval = signalPollInterval
        self.signalChangeThreshold = signalChangeThreshold
        self.ipv6Timeout = ipv6Timeout
    }

    /// Files the DHCP client writes for helpers (`HOTSPOT_DHCP_LEASE`, `HOTSPOT_RESOLV_CONF`).
    public var leaseFile: String { runDirectory + "/lease.env" }
    public var resolvConf: String { runDirectory + "/resolv.conf" }
    public var dhcpLog: String { runDirectory + "/dhcp.log" }
}

/// The station side of hotspotd: wpa_supplicant for association (its events in, DISCONNECT and network
/// enabling out), our DHCPv4 client for IP (`StationDHCP`, one lease per association), and `IPSuppression` for the
/// connectivity the state machine allows. Nothing here is simulated: association and IP events are what
/// wpa_supplicant and the DHCP client report. docs/STATION.md.
public final class WPAStation: StationDriver, NetworkControl, @unchecked Sendable {  // @unchecked: `control`, `daemon` and `eventThread` change only in attach/detach, around the event thread's life; the association state is the daemon's loop thread's
    public let options: StationOptions
    private var control: WPACtrlSocket?
    private weak var daemon: (any StationEventSink)?
    private let ip = StationIPControl()
    private var eventThread: SystemThread?
    /// Set by `detach` to end the event thread.
    private let stopping = Locked(false)
    /// Set by `join`: the next association was the user's choice (didAutoJoin false).
    private var manualJoinPending = false
    private let dhcp: StationDHCP
    private var associatedBSSID: String?
    /// The RSSI (dBm) last given to the state machine for the current association.
    private var reportedRSSI: Double?
    /// A signal poll is queued on the daemon's loop (the event thread queues at most one).
    private let pollQueued = Locked(false)

    public init(options: StationOptions) {
        self.options = options
        dhcp = StationDHCP(options: options)
    }

    // MARK: StationDriver

    public func attach(to daemon: any StationEventSink) throws {
        self.daemon = daemon
        dhcp.daemon = daemon
        ip.daemon = daemon
        try ip.install(enabled: options.suppressIP)
        let control = try WPACtrlSocket.connect(serverPath: options.wpaControlPath, timeout: .seconds(15))
        try control.attach()
        self.control = control
        let status = WPACtrlSocket.keyValues(try control.request("STATUS"))
        daemon.record(.station(.init(action: "attached", wpaControl: options.wpaControlPath, wpaState: status["wpa_state"] ?? "?",
                                     ipSuppression: options.suppressIP)))
        try startEventThread()
        if status["wpa_state"] == "COMPLETED" { connected() }
    }

    public func detach() {
        stopping.withLock { $0 = true }
        eventThread?.join()
        eventThread = nil
        dhcp.stop()
        ip.remove()
        control?.close()
        control = nil
    }

    public func join(ssid: SSID, password: String?) throws {
        let control = try requireControl()
        let networks = try listNetworks()
        let id: String
        var source = "configuration"
        if let known = networks.first(where: { $0.ssid == ssid }) {
            id = known.id
        } else {
            id = try control.request("ADD_NETWORK")
            guard Int(id) != nil else { throw SystemError("add network", ssid.printable, reason: "wpa_supplicant answered \(id)") }
            // The bytes as wpa_supplicant reads them: quoted text, or hex for any other bytes (lossless).
            try set(id, "ssid", WPAText.networkValue(ssid))
            try set(id, "scan_ssid", "1")
            try set(id, "key_mgmt", "NONE")
            source = "none"
        }
        // The password: given with the request, else the one a helper set in its filterScanList answer.
        var secret = password
        if password != nil { source = "request" }
        if secret == nil, let claimed = daemon?.annotatedScanList?.first(where: { $0.network.rawSSID == ssid && $0.password != nil }) {
            secret = claimed.password
            source = "filterScanList (\(claimed.claimedBy ?? "?"))"
        }
        if let secret {
            try set(id, "key_mgmt", "WPA-PSK")
            try set(id, "psk", quoted(secret))
        }
        if let freq = try scanFrequency(ssid: ssid) { try set(id, "scan_freq", freq) }
        manualJoinPending = true
        try expectOK(control.request("SELECT_NETWORK \(id)"), "select network \(id) (\(ssid.printable))")
        daemon?.record(.station(.init(action: "join", ssid: TraceSSID(ssid), networkID: id, passwordFrom: source)))
    }

    public func leave() throws {
        manualJoinPending = false
        try expectOK(try requireControl().request("DISCONNECT"), "disconnect")
        daemon?.record(.station(.init(action: "leave")))
    }

    public func autoJoin(except disabled: Set<NetworkIdentity>) throws {
        let control = try requireControl()
        var enabled: [JSON] = []
        var skipped: [JSON] = []
        for network in try listNetworks() {
            let idStr = (try? control.request("GET_NETWORK \(network.id) id_str")) ?? ""
            let keyMgmt = (try? control.request("GET_NETWORK \(network.id) key_mgmt")) ?? "NONE"
            let identity = NetworkIdentity(rawSSID: network.ssid, security: WPAText.security(keyMgmt: keyMgmt))
            // Networks the lab configured with `auto-join: false` carry id_str "manual".
            let allowed = idStr != "\"manual\"" && !disabled.contains(identity)
            try expectOK(control.request("\(allowed ? "ENABLE" : "DISABLE")_NETWORK \(network.id)"), "auto-join \(network.ssid.printable)")
            let listed: JSON = network.ssid.needsHexOnTheWire ? .object(network.ssid.wireFields) : .string(network.ssid.text)
            (allowed ? { enabled.append(listed) } : { skipped.append(listed) })()
        }
        manualJoinPending = false
        try expectOK(control.request("REASSOCIATE"), "reassociate")
        daemon?.record(.station(.init(action: "autoJoin", enabled: enabled, notAutoJoined: skipped)))
    }

    // MARK: NetworkControl

    public func suppressIP(interface: String, network: NetworkIdentity?) {
        ip.suppress(interface: interface)
    }

    public func releaseIP(interface: String, network: NetworkIdentity?) {
        ip.release(interface: interface)
    }

    public func disassociate(interface: String, network: NetworkIdentity?) {
        do {
            try expectOK(try requireControl().request("DISCONNECT"), "disconnect")
        } catch {
            daemon?.record(.error(.init(message: "disassociate \(interface): \(error)")))
        }
    }

    public func setAutoJoin(_ enabled: Bool, network: NetworkIdentity, interface: String) {
        guard !enabled else { return }   // a manual join selects the network anyway
        do {
            for known in try listNetworks() where known.ssid == network.rawSSID {
                try expectOK(try requireControl().request("DISABLE_NETWORK \(known.id)"), "disable network \(known.id)")
            }
        } catch {
            daemon?.record(.error(.init(message: "disable auto-join for \(network): \(error)")))
        }
    }

    // MARK: events (a thread reads wpa_supplicant's events and posts them to the daemon's loop)

    private func startEventThread() throws {
        eventThread = try SystemThread.start("read wpa_supplicant's events") { [self] in readEvents() }
    }

    private func readEvents() {
        guard let control else { return }
        var lastPoll = SystemMonotonicClock.read()
        while !stopping.withLock({ $0 }) {
            let now = SystemMonotonicClock.read()
            if now - lastPoll >= options.signalPollInterval {
                lastPoll = now
                queueSignalPoll()
            }
            let event: String?
            do {
                event = try control.nextEvent(until: .now + .milliseconds(200))
            } catch {
                daemon?.post { [weak self] in self?.daemon?.record(.error(.init(message: "wpa_supplicant events: \(error)"))) }
                return
            }
            guard let event else { continue }
            if event.hasPrefix("CTRL-EVENT-CONNECTED") {
                daemon?.post { [weak self] in self?.connected() }
            } else if event.hasPrefix("CTRL-EVENT-DISCONNECTED") {
                daemon?.post { [weak self] in self?.disconnected(event) }
            } else if event.hasPrefix("CTRL-EVENT-SIGNAL-CHANGE") {
                lastPoll = SystemMonotonicClock.read()
                queueSignalPoll()
            } else if event.hasPrefix("CTRL-EVENT-SSID-TEMP-DISABLED") || event.hasPrefix("CTRL-EVENT-ASSOC-REJECT")
                        || event.hasPrefix("CTRL-EVENT-AUTH-REJECT") || event.hasPrefix("CTRL-EVENT-NETWORK-NOT-FOUND") {
                daemon?.post { [weak self] in self?.daemon?.record(.station(.init(action: "wpaEvent", event: event))) }
            }
        }
    }

    /// Loop thread: wpa_supplicant completed an association.
    private func connected() {
        guard let daemon, let control else { return }
        do {
            let status = WPACtrlSocket.keyValues(try control.request("STATUS"))
            guard let ssidText = status["ssid"], let bssid = status["bssid"] else {
                daemon.record(.error(.init(message: "association reported without ssid/bssid: \(status)")))
                return
            }
            if associatedBSSID == bssid, daemon.association != nil { return }   // the event and our start-up check
            let ssid = WPAText.ssid(printfEncoded: ssidText)   // its bytes (wpa_supplicant escapes them)
            let rssi = Self.rssi(control) ?? -50
            // A roam: wpa_supplicant moved to another BSSID of the same SSID without a disconnection in between.
            // A new association (docs/DECISIONS.md): Inactive, then the cached sequence once DHCP is done.
            let previous = daemon.association
            let roamedFrom: String? = (associatedBSSID != nil && associatedBSSID != bssid && previous?.rawSSID == ssid) ? associatedBSSID : nil
            let network = HotspotNetwork(
                rawSSID: ssid, bssid: bssid, signalStrength: WPAText.strength(rssi: rssi),
                security: WPAText.security(keyMgmt: status["key_mgmt"] ?? "NONE"),
                didAutoJoin: roamedFrom != nil ? (previous?.didAutoJoin ?? true) : !manualJoinPending)
            manualJoinPending = false
            associatedBSSID = bssid
            reportedRSSI = rssi
            if let roamedFrom {
                daemon.record(.station(.init(action: "roamed", ssid: TraceSSID(ssid), rssi: rssi, frequency: status["freq"] ?? "?",
                                             from: roamedFrom, to: bssid)))
            }
            daemon.record(.station(.init(action: "associated", ssid: TraceSSID(ssid), bssid: bssid, rssi: rssi,
                                         keyMgmt: status["key_mgmt"] ?? "?", frequency: status["freq"] ?? "?")))
            daemon.submit(.associated(network), via: "wpa_supplicant")
            dhcp.start()
        } catch {
            daemon.record(.error(.init(message: "read the association from wpa_supplicant: \(error)")))
        }
    }

    /// Event thread: asks the loop for one signal poll, unless one is queued already.
    private func queueSignalPoll() {
        let queue = pollQueued.withLock { queued -> Bool in
            if queued { return false }
            queued = true
            return true
        }
        guard queue else { return }
        daemon?.post { [weak self] in
            guard let self else { return }
            self.pollQueued.withLock { $0 = false }
            self.pollSignal()
        }
    }

    /// Loop thread: reads the signal of the current association (`SIGNAL_POLL`); a change of at least
    /// `signalChangeThreshold` dB goes to the state machine as `signalChanged` (no transition: the
    /// helper sees it in its next command), with a `station` record `{action: "signal"}`.
    private func pollSignal() {
        guard let daemon, let control, let bssid = associatedBSSID, daemon.association != nil else { return }
        guard let rssi = Self.rssi(control) else { return }
        let previous = reportedRSSI
        if let previous, abs(rssi - previous) < options.signalChangeThreshold { return }
        reportedRSSI = rssi
        let strength = WPAText.strength(rssi: rssi)
        daemon.record(.station(.init(action: "signal", bssid: bssid, rssi: rssi, previousRSSI: previous, signalStrength: strength)))
        daemon.submit(.signalChanged(strength), via: "wpa_supplicant")
    }

    /// The current association's RSSI in dBm from wpa_supplicant's `SIGNAL_POLL` (nil: no answer or no RSSI).
    private static func rssi(_ control: WPACtrlSocket) -> Double? {
        guard let reply = try? control.request("SIGNAL_POLL") else { return nil }
        return Double(WPACtrlSocket.keyValues(reply)["RSSI"] ?? "")
    }

    /// Loop thread: the association ended (our DISCONNECT, the AP, or the user).
    private func disconnected(_ event: String) {
        associatedBSSID = nil
        reportedRSSI = nil
        dhcp.stop()
        dhcp.flushAddresses()
        daemon?.record(.station(.init(action: "disassociated", event: event)))
        if daemon?.association != nil { daemon?.submit(.disassociated, via: "wpa_supplicant") }
    }

    // MARK: wpa_supplicant helpers

    struct KnownNetwork { var id: String; var ssid: SSID; var flags: String }

    private func requireControl() throws -> WPACtrlSocket {
        guard let control else { throw SystemError("talk to wpa_supplicant at", options.wpaControlPath, reason: "not attached") }
        return control
    }

    private func listNetworks() throws -> [KnownNetwork] {
        WPAText.listNetworks(try requireControl().request("LIST_NETWORKS")).map { KnownNetwork(id: $0.id, ssid: $0.ssid, flags: $0.flags) }
    }

    /// The frequencies of the SSID in the last scan results, space-separated (so the join scans only the
    /// channels of its access points, every one of them: the station can roam between them).
    private func scanFrequency(ssid: SSID) throws -> String? {
        let reply = try requireControl().request("SCAN_RESULTS")
        var frequencies: [Int] = []
        for result in WPAText.scanResults(reply) where result.ssid == ssid {
            if let f = result.frequency, !frequencies.contains(f) { frequencies.append(f) }
        }
        return frequencies.isEmpty ? nil : frequencies.map(String.init).joined(separator: " ")
    }

    private func set(_ id: String, _ key: String, _ value: String) throws {
        try expectOK(try requireControl().request("SET_NETWORK \(id) \(key) \(value)"), "set network \(id) \(key)")
    }

    private func expectOK(_ reply: String, _ what: String) throws {
        guard reply.hasPrefix("OK") else { throw SystemError(what, options.wpaControlPath, reason: "wpa_supplicant answered \(reply)") }
    }

    private func quoted(_ text: String) -> String { "\"" + text + "\"" }
}

extension WPAStation {
    /// The lease's address on `interface` (its other IPv4 addresses removed) and its default route, through
    /// `route` (the station namespace's rtnetlink).
    public static func configure(_ lease: DHCPLease, interface: String, route: RouteNetlink) throws {
        try StationDHCP.configure(lease, interface: interface, route: route)
    }

    /// A lease's fields (`DHCPMessage.leaseFields`) applied as hotspotd applies them: the lease file, resolv.conf
    /// (in place) and, through `route`, the address and default route of `options.interface`.
    public static func apply(lease fields: [String: String], options: StationOptions, route: RouteNetlink) throws {
        try StationDHCP.apply(fields, options: options, route: route)
    }

}
