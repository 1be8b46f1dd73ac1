#if canImport(Glibc)
import Glibc
#endif
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Netlink

/// The station's IP: our DHCPv4 client (`DHCPClient`, on a packet socket), one lease per association, the lease
/// and resolver files written for helpers and applications, and the lease's address and default route set over
/// netlink. Shared by both station backends (`WPAStation`: radio; `LinkStation`: the native tier's link), so
/// DHCP is the same real path in both tiers. Loop thread only.
final class StationDHCP {
    let options: StationOptions
    weak var daemon: (any StationEventSink)?
    /// The exchange of the current association, if it has not ended.
    private var current: StationDHCPRun?
    private var dhcpGeneration = 0
    /// This association's IPv6 side (`StationIPv6Watcher`): what it reported, and whether DHCPv4 gave up.
    private var ipv6Watcher: StationIPv6Watcher?
    private var ipv6Ready: StationIPv6Watcher.Ready?
    private var ipv4Failed = false
    /// Why this association's IPv6 side gave up, while DHCPv4 had not (yet) failed: traced as `ipv6Failed` if it does.
    private var ipv6Failure: String?
    private var associationStarted: Duration = .zero

    init(options: StationOptions) { self.options = options }

    func start() {
        stop()
        unlink(options.leaseFile)
        dhcpGeneration += 1
        let generation = dhcpGeneration
        let started = SystemMonotonicClock.read()
        associationStarted = started
        startIPv6(generation)
        let run = StationDHCPRun(interface: options.interface, log: options.dhcpLog)
        current = run
        daemon?.record(.station(.init(action: "dhcpStart")))
        do {
            try run.start { [weak self] outcome in
                self?.daemon?.post { [weak self] in self?.finished(generation, outcome, since: started) }
            }
        } catch {
            current = nil
            daemon?.record(.error(.init(message: "start the DHCP client on \(options.interface): \(error)")))
        }
    }

    private func finished(_ generation: Int, _ outcome: Result<[String: String], any Error>, since started: Duration) {
        guard generation == dhcpGeneration, let daemon else { return }
        current = nil
        let elapsed = SystemMonotonicClock.read() - started
        guard case .success(let fields) = outcome, daemon.association != nil else {
            let status = if case .failure(let error) = outcome { "\(error)" } else { "the station left the network" }
            daemon.record(.station(.init(action: "dhcpFailed", status: status, log: options.dhcpLog)))
            // No DHCPv4 on this network: IP up is the IPv6 side's (an IPv6-only network), now or when it comes.
            ipv4Failed = true
            if let ipv6Ready, daemon.association != nil { ipv6IPUp(ipv6Ready) }
            // The IPv6 side gave up first (a short --ipv6-timeout): now neither family has an address.
            if let ipv6Failure, daemon.association != nil { daemon.record(.station(.init(action: "ipv6Failed", status: ipv6Failure))) }
            return
        }
        do {
            try Self.apply(fields, options: options, route: RouteNetlink.current())
        } catch {
            daemon.record(.station(.init(action: "dhcpFailed", status: "\(error)", log: options.dhcpLog)))
            return
        }
        let elapsedAll = SystemMonotonicClock.read() - started
        var record = TraceRecord.Station(action: "dhcpLease", lease: fields, latency_ms: elapsedAll.milliseconds,
                                         client_ms: elapsed.milliseconds)
        // The interface's addresses and default routes per family (IPv4 from the lease, IPv6 from SLAAC or DHCPv6).
        if let route = try? RouteNetlink.current(), let index = try? route.index(of: options.interface),
           let addressing = try? StationAddressing.read(interfaceIndex: index, route: route) {
            addressing.fill(&record)
        }
        daemon.record(.station(record))
        daemon.submit(.ipUp, via: "dhcp")
    }

    func stop() {
        dhcpGeneration += 1
        ipv6Watcher?.cancel()
        ipv6Watcher = nil
        ipv6Ready = nil
        ipv4Failed = false
        ipv6Failure = nil
        current?.cancel()
        current = nil
    }

    // MARK: IPv6 (docs/STATION.md, "IP up on an IPv6-only network")

    private func startIPv6(_ generation: Int) {
        let watcher = StationIPv6Watcher(interface: options.interface, timeout: options.ipv6Timeout) { [weak self] outcome in
            self?.daemon?.post { [weak self] in self?.ipv6Reported(generation, outcome) }
        }
        ipv6Watcher = watcher
        watcher.start()
    }

    /// Loop thread: the IPv6 side of association `generation` is up (or never came). Traced as `ipv6Up` with the
    /// interface's addresses and routes per family; IP up when DHCPv4 gave up (else the lease was, or will be).
    private func ipv6Reported(_ generation: Int, _ outcome: Result<StationIPv6Watcher.Ready, SystemError>) {
        guard generation == dhcpGeneration, let daemon else { return }
        ipv6Watcher = nil
        switch outcome {
        case .failure(let error):
            // Only worth a record where nothing came up: on an IPv4-only network no RA is the normal case.
            if ipv4Failed { daemon.record(.station(.init(action: "ipv6Failed", status: "\(error)"))) } else { ipv6Failure = "\(error)" }
        case .success(let ready):
            ipv6Ready = ready
            var record = TraceRecord.Station(action: "ipv6Up", lease: Self.ipv6Lease(ready), latency_ms: ready.elapsed.milliseconds)
            ready.addressing.fill(&record)
            daemon.record(.station(record))
            if ipv4Failed, daemon.association != nil { ipv6IPUp(ready) }
        }
    }

    /// The `key=value` fields an IPv6-only network gives helpers in the lease file (`HOTSPOT_DHCP_LEASE`): `ip6`,
    /// `router6`, `dns` (RDNSS) and `ra37` (RFC 8910's URI from the Router Advertisement).
    static func ipv6Lease(_ ready: StationIPv6Watcher.Ready) -> [String: String] {
        var fields: [String: String] = [:]
        if let address = ready.addressing.ipv6Addresses.first { fields["ip6"] = address }
        if let route = ready.addressing.ipv6DefaultRoute { fields["router6"] = route.hasPrefix("via ") ? String(route.dropFirst(4)) : route }
        if !ready.advertisement.dnsServers.isEmpty { fields["dns"] = ready.advertisement.dnsServers.joined(separator: " ") }
        if let uri = ready.advertisement.captivePortal { fields["ra37"] = uri }
        return fields
    }

    /// IP up from the IPv6 side alone: the lease file and resolv.conf (RDNSS, written in place: the lab bind-mounts
    /// it) for helpers and applications, then `ipUp`.
    private func ipv6IPUp(_ ready: StationIPv6Watcher.Ready) {
        guard let daemon else { return }
        let fields = Self.ipv6Lease(ready)
        let lease = fields.keys.sorted().map { "\($0)=\(fields[$0]!)\n" }.joined()
        let resolv = ready.advertisement.dnsServers.map { "nameserver \($0)\n" }.joined()
        do {
            try AtomicFile.write(Array(lease.utf8), to: options.leaseFile, mode: 0o644)
            try AtomicFile.overwriteInPlace(Array(resolv.utf8), at: options.resolvConf)
        } catch {
            daemon.record(.error(.init(message: "write the IPv6 lease of \(options.interface): \(error)")))
        }
        daemon.submit(.ipUp, via: "ipv6")
    }

    /// A lease taken: its fields in the lease file for helpers (`HOTSPOT_DHCP_LEASE`), its DNS servers in resolv.conf for
    /// every process of the station (rewritten in place: the lab bind-mounts this file's inode as their
    /// /etc/resolv.conf), then its address and default route on the interface.
    static func apply(_ fields: [String: String], options: StationOptions, route: RouteNetlink) throws {
        let lease = fields.keys.sorted().map { "\($0)=\(fields[$0]!)\n" }.joined()
        let resolv = (fields["dns"] ?? "").split(separator: " ").map { "nameserver \($0)\n" }.joined()
        try AtomicFile.write(Array(lease.utf8), to: options.leaseFile, mode: 0o644)
        try AtomicFile.overwriteInPlace(Array(resolv.utf8), at: options.resolvConf)
        try configure(DHCPLease(fields: fields, file: options.leaseFile), interface: options.interface, route: route)
    }

    /// The lease's address on `interface` (its other IPv4 addresses removed) and its default route, through
    /// `route` (the station namespace's rtnetlink).
    static func configure(_ lease: DHCPLease, interface: String, route: RouteNetlink) throws {
        let index = try route.index(of: interface)
        let present = try route.addresses().filter { $0.index == index && !$0.prefix.address.isIPv6 }.map(\.prefix)
        for prefix in present where prefix != lease.address {
            try route.deleteAddress(prefix, from: interface)
        }
        if !present.contains(lease.address) {
            try route.addAddress(lease.address, to: interface)
        }
        guard let router = lease.router else { return }
        let defaultRoute = Route(gateway: router, outputInterface: index)
        do {
            try route.addRoute(defaultRoute)
        } catch let error as SystemError where error.errno == EEXIST {
            // A default route is left from an earlier lease (another router): replace it.
            try? route.deleteRoute(Route(outputInterface: nil))
            try route.addRoute(defaultRoute)
        }
    }

    func flushAddresses() {
        do {
            let route = try RouteNetlink.current()
            let index = try route.index(of: options.interface)
            for address in try route.addresses() where address.index == index && !address.prefix.address.isIPv6 {
                try route.deleteAddress(address.prefix, from: options.interface)
            }
        } catch {
            daemon?.record(.error(.init(message: "flush addresses of \(options.interface): \(error)")))
        }
        unlink(options.leaseFile)
    }
}

/// One association's DHCPv4 exchange on its own thread (`DHCPClient` over an `IPv4PacketSocket` on the station's
/// interface), its progress lines in the run folder's dhcp.log, as udhcpc's were. The outcome (the lease's fields or
/// why there is none) goes to `done` once; the socket is closed after that, as closing a packet socket waits for
/// an RCU grace period that the lease need not.
final class StationDHCPRun: @unchecked Sendable {  // @unchecked: `let`s, and `cancelled` behind its lock; `done` (not @Sendable) is called once, on the run's thread
    let interface: String
    let logPath: String
    private let cancelled = Locked(false)

    init(interface: String, log: String) {
        self.interface = interface
        self.logPath = log
    }

    func cancel() { cancelled.withLock { $0 = true } }

    func start(_ done: @escaping (Result<[String: String], any Error>) -> Void) throws {
        let box = UncheckedBox(done)  // called once, on the run's thread; it only posts to the daemon's loop
        try SystemThread.detach("DHCP on \(interface)") { [self] in run(box.value) }
    }

    private func run(_ done: (Result<[String: String], any Error>) -> Void) {
        let log = try? AppendFile(path: logPath, mode: 0o644)
        defer { log?.close() }
        let started = SystemMonotonicClock.read()
        let write = { (line: String) in
            let at = (SystemMonotonicClock.read() - started).milliseconds
            _ = try? log?.append(Array("dhcp: +\(Int(at)) ms \(line)\n".utf8))
        }
        let socket: IPv4PacketSocket
        do {
            socket = try IPv4PacketSocket(interface: interface)
        } catch {
            write("\(error)")
            return done(.failure(error))
        }
        write("started on \(interface) (\(MACAddress(bytes: socket.hardwareAddress).map { "\($0)" } ?? "?"))")
        let client = DHCPClient(interface: interface, transport: socket, isCancelled: { [cancelled] in cancelled.withLock { $0 } }, log: write)
        let outcome = Result<[String: String], any Error> { try client.run().leaseFields }
        if case .failure(let error) = outcome { write("\(error)") }
        done(outcome)
        socket.close()
    }
}
