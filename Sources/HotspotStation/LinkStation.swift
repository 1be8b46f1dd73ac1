#if canImport(Glibc)
import Glibc
#endif
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Netlink

/// The native tier's station backend (`hotspotd --link-control PATH`): the Wi-Fi interface is a link the lab
/// attaches to a hotspot's segment (a veth end moved into the hotspot's bridge), so there is no radio and no
/// wpa_supplicant. Association, disassociation, roaming and radio loss arrive as typed `LinkEvent`s from the lab's
/// link controller over a Unix socket, with the topology's SSID, BSSID, security and signal; hotspotd's join, leave,
/// auto-join and disassociate go to it as `LinkRequest`s. Everything above the radio is the same as `WPAStation`:
/// our DHCPv4 client on the interface (`StationDHCP`), IP suppression by policy routing, the same trace records
/// (`via: link` instead of `via: wpa_supplicant`). docs/STATION.md, "The native tier".
public final class LinkStation: StationDriver, NetworkControl, @unchecked Sendable {  // @unchecked: `socket`, `daemon` and `readerThread` change only in attach/detach, around the reader thread's life; the join state is the daemon's loop thread's; writes go under `writeLock`
    public let options: StationOptions
    /// The lab's link controller socket.
    public let linkPath: String
    private var socket: UnixSocket?
    private let writeLock = Mutex()
    private weak var daemon: (any StationEventSink)?
    private let ip = StationIPControl()
    private let dhcp: StationDHCP
    private var readerThread: SystemThread?
    /// Set by `detach` to end the reader thread.
    private let stopping = Locked(false)
    /// Set by `join`: the next association was the user's choice (didAutoJoin false).
    private var manualJoinPending = false
    private var associatedBSSID: String?
    private var reportedRSSI: Double?

    public init(options: StationOptions, linkPath: String) {
        self.options = options
        self.linkPath = linkPath
        dhcp = StationDHCP(options: options)
    }

    // MARK: StationDriver

    public func attach(to daemon: any StationEventSink) throws {
        self.daemon = daemon
        dhcp.daemon = daemon
        ip.daemon = daemon
        try ip.install(enabled: options.suppressIP)
        // The lab serves the socket before it starts hotspotd; a short retry covers a lab that is still binding it.
        let deadline = SystemMonotonicClock.read() + .seconds(15)
        while socket == nil {
            do {
                socket = try UnixSocket.connect(path: linkPath)
            } catch {
                if SystemMonotonicClock.read() > deadline { throw SystemError("connect to the lab's link controller", linkPath, reason: "\(error)") }
                usleep(5_000)
            }
        }
        daemon.record(.station(.init(action: "attached", ipSuppression: options.suppressIP, linkControl: linkPath)))
        try startReader()
    }

    public func detach() {
        stopping.withLock { $0 = true }
        readerThread?.join()
        readerThread = nil
        dhcp.stop()
        ip.remove()
        socket?.close()
        socket = nil
    }

    public func join(ssid: SSID, password: String?) throws {
        var secret = password
        var source = password != nil ? "request" : "configuration"
        if secret == nil, let claimed = daemon?.annotatedScanList?.first(where: { $0.network.rawSSID == ssid && $0.password != nil }) {
            secret = claimed.password
            source = "filterScanList (\(claimed.claimedBy ?? "?"))"
        }
        manualJoinPending = true
        try send(.join(ssid: ssid, password: secret))
        daemon?.record(.station(.init(action: "join", ssid: TraceSSID(ssid), passwordFrom: source)))
    }

    public func leave() throws {
        manualJoinPending = false
        try send(.disconnect)
        daemon?.record(.station(.init(action: "leave")))
    }

    public func autoJoin(except disabled: Set<NetworkIdentity>) throws {
        manualJoinPending = false
        let except = disabled.sorted { $0.rawSSID.hex < $1.rawSSID.hex }
        try send(.autoJoin(except: except))
        daemon?.record(.station(.init(action: "autoJoin", notAutoJoined: except.map(\.wire))))
    }

    // MARK: NetworkControl

    public func suppressIP(interface: String, network: NetworkIdentity?) {
        ip.suppress(interface: interface)
    }

    public func releaseIP(interface: String, network: NetworkIdentity?) {
        ip.release(interface: interface)
    }

    public func disassociate(interface: String, network: NetworkIdentity?) {
        do { try send(.disconnect) } catch { daemon?.record(.error(.init(message: "disassociate \(interface): \(error)"))) }
    }

    /// The lab's controller is told which networks to skip with each `autoJoin`; nothing to do at once.
    public func setAutoJoin(_ enabled: Bool, network: NetworkIdentity, interface: String) {}

    // MARK: the link

    private func send(_ request: LinkRequest) throws {
        guard let socket else { throw SystemError("talk to the lab's link controller at", linkPath, reason: "not attached") }
        try writeLock.withLock { try socket.writeAll(request.framed) }
    }

    private func startReader() throws {
        readerThread = try SystemThread.start("read the lab's link events") { [self] in readEvents() }
    }

    /// Reader thread: frames from the lab, each decoded into a `LinkEvent` and handled on the daemon's loop.
    private func readEvents() {
        guard let socket else { return }
        var decoder = FrameDecoder()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopping.withLock({ $0 }) {
            do {
                while let payload = try decoder.nextFrame() {
                    let event = try LinkEvent(json: try JSON.parse(payload))
                    daemon?.post { [weak self] in self?.handle(event) }
                }
                guard socket.waitReadable(timeout: .milliseconds(200)) else { continue }
                let outcome = try buffer.withUnsafeMutableBytes { p in try socket.read(into: p) }
                switch outcome {
                case .bytes(let n): decoder.append(buffer[0..<n])
                case .wouldBlock: continue
                case .endOfFile:
                    daemon?.post { [weak self] in self?.daemon?.record(.error(.init(message: "the lab's link controller closed \(self?.linkPath ?? "")"))) }
                    return
                }
            } catch {
                daemon?.post { [weak self] in self?.daemon?.record(.error(.init(message: "link events from \(self?.linkPath ?? ""): \(error)"))) }
                return
            }
        }
    }

    /// Loop thread: one event from the lab.
    private func handle(_ event: LinkEvent) {
        guard let daemon else { return }
        switch event {
        case .associated(let reported, let rssi, let hotspot):
            let previous = daemon.association
            let roamedFrom: String? = (associatedBSSID != nil && associatedBSSID != reported.bssid && previous?.rawSSID == reported.rawSSID)
                ? associatedBSSID : nil
            var network = HotspotNetwork(rawSSID: reported.rawSSID, bssid: reported.bssid, signalStrength: WPAText.strength(rssi: rssi),
                                         security: reported.security)
            network.didAutoJoin = roamedFrom != nil ? (previous?.didAutoJoin ?? true) : !manualJoinPending
            manualJoinPending = false
            associatedBSSID = reported.bssid
            reportedRSSI = rssi
            if let roamedFrom {
                daemon.record(.station(.init(action: "roamed", ssid: TraceSSID(reported.rawSSID), rssi: rssi, from: roamedFrom,
                                             to: reported.bssid)))
            }
            daemon.record(.station(.init(action: "associated", ssid: TraceSSID(reported.rawSSID), bssid: reported.bssid, rssi: rssi,
                                         keyMgmt: reported.security.rawValue, hotspot: hotspot, via: "link")))
            daemon.submit(.associated(network), via: "link")
            dhcp.start()
        case .disassociated(let reason):
            associatedBSSID = nil
            reportedRSSI = nil
            dhcp.stop()
            dhcp.flushAddresses()
            daemon.record(.station(.init(action: "disassociated", event: reason, via: "link")))
            if daemon.association != nil { daemon.submit(.disassociated, via: "link") }
        case .rejected(let reason):
            manualJoinPending = false
            daemon.record(.station(.init(action: "linkRejected", reason: reason)))
        case .signal(let rssi):
            guard let bssid = associatedBSSID, daemon.association != nil else { return }
            let previous = reportedRSSI
            if let previous, abs(rssi - previous) < options.signalChangeThreshold { return }
            reportedRSSI = rssi
            let strength = WPAText.strength(rssi: rssi)
            daemon.record(.station(.init(action: "signal", bssid: bssid, rssi: rssi, previousRSSI: previous, signalStrength: strength)))
            daemon.submit(.signalChanged(strength), via: "link")
        }
    }
}
