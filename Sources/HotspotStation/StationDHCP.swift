#if canImport(Glibc)
import Glibc
#endif
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Netlink

/// The station's IP: busybox udhcpc, one lease per association, and the lease's address and default route set
/// over netlink. Shared by both station backends (`WPAStation`: radio; `LinkStation`: the native tier's link), so
/// DHCP is the same real path in both tiers. Loop thread only.
final class StationDHCP {
    let options: StationOptions
    weak var daemon: (any StationEventSink)?
    private var dhcp: ChildProcess?
    private var dhcpGeneration = 0
    /// This association's IPv6 side (`StationIPv6Watcher`): what it reported, and whether DHCPv4 gave up.
    private var ipv6Watcher: StationIPv6Watcher?
    private var ipv6Ready: StationIPv6Watcher.Ready?
    private var ipv4Failed = false
    private var associationStarted: Duration = .zero
    /// How long the IPv6 side may take after the association (then only traced, and only when IPv4 failed too).
    static let ipv6Timeout: Duration = .seconds(60)

    init(options: StationOptions) { self.options = options }

    func start() {
        stop()
        unlink(options.leaseFile)
        dhcpGeneration += 1
        let generation = dhcpGeneration
        let started = SystemMonotonicClock.read()
        associationStarted = started
        startIPv6(generation)
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(ProcessConfiguration(
                options.busybox, ["udhcpc", "-i", options.interface, "-f", "-q", "-n", "-t", "5", "-T", "1", "-O", "114",
                                  "-s", options.dhcpScript],
                stdout: .file(options.dhcpLog), stderr: .file(options.dhcpLog)))
        } catch {
            daemon?.record(.error(.init(message: "start the DHCP client on \(options.interface): \(error)")))
            return
        }
        dhcp = child
        daemon?.record(.station(.init(action: "dhcpStart", pid: Int(child.pid))))
        let waiter = DHCPWaiter(child: child) { [weak self] status in
            self?.daemon?.post { [weak self] in self?.finished(generation, status, since: started) }
        }
        do {
            try waiter.start()
        } catch {
            daemon?.record(.error(.init(message: "wait for the DHCP client on \(options.interface): \(error)")))
        }
    }

    private func finished(_ generation: Int, _ status: ExitStatus?, since started: Duration) {
        guard generation == dhcpGeneration, let daemon else { return }
        dhcp = nil
        let elapsed = SystemMonotonicClock.read() - started
        guard status?.succeeded == true, daemon.association != nil else {
            daemon.record(.station(.init(action: "dhcpFailed", status: status.map { "\($0)" } ?? "unknown", log: options.dhcpLog)))
            // No DHCPv4 on this network: IP up is the IPv6 side's (an IPv6-only network), now or when it comes.
            ipv4Failed = true
            if let ipv6Ready, daemon.association != nil { ipv6IPUp(ipv6Ready) }
            return
        }
        let fields = DHCPLease.fields(readSmallFile(options.leaseFile) ?? "")
        do {
            try Self.configure(DHCPLease(fields: fields, file: options.leaseFile), interface: options.interface, route: RouteNetlink.current())
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
        if let dhcp, dhcp.exitStatus == nil { _ = try? dhcp.signal(SIGTERM) }
        dhcp = nil
    }

    // MARK: IPv6 (docs/STATION.md, "IP up on an IPv6-only network")

    private func startIPv6(_ generation: Int) {
        let watcher = StationIPv6Watcher(interface: options.interface, timeout: Self.ipv6Timeout) { [weak self] outcome in
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
            if ipv4Failed { daemon.record(.station(.init(action: "ipv6Failed", status: "\(error)"))) }
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

    /// udhcpc's script: writes the lease and resolver files with shell builtins only. It starts no process:
    /// under TCG each fork and exec costs about 0.1 s, and the `ip`, `mv`, `cmp`, `cat` and `rm` calls the script
    /// used to make took about 0.5 s of each of its two runs, most of association -> lease (issue 19,
    /// bench/README.md "bench profile"). hotspotd sets the address and the default route itself over netlink
    /// once udhcpc has exited (`configure(_:interface:route:)`). resolv.conf is rewritten in place (no rename):
    /// the lab bind-mounts this file (its inode) as /etc/resolv.conf of every process in the station
    /// (hotspot-nsexec --resolv-conf). Nobody reads either file before udhcpc has exited (ipUp comes after).
    func writeScript() throws {
        try AtomicFile.write(Array(Self.dhcpScript(options).utf8), to: options.dhcpScript, mode: 0o755)
    }

    /// The text of udhcpc's script for `options` (`options.dhcpScript` holds it; StationDNSRootTests runs it).
    static func dhcpScript(_ options: StationOptions) -> String {
        let script = """
            #!/bin/sh
            # Written by hotspotd (HotspotStation): udhcpc calls it with deconfig, bound, renew or leasefail.
            # Builtins only; hotspotd configures the interface from the lease file over netlink.
            case "$1" in
              bound|renew)
                { for server in $dns; do echo "nameserver $server"; done; } > \(options.resolvConf)
                { echo "ip=$ip"; echo "subnet=$subnet"; echo "mask=$mask"; echo "router=$router"; echo "dns=$dns"
                  echo "lease=$lease"; echo "serverid=$serverid"; [ -n "$opt114" ] && echo "opt114=$opt114"; } > \(options.leaseFile)
                ;;
            esac
            exit 0

            """
        return script
    }
}

/// Waits for the DHCP client on its own thread (the daemon's loop never blocks on it).
final class DHCPWaiter: @unchecked Sendable {  // @unchecked: `let`s only; `done` (not @Sendable) is called once, on the waiter's thread
    let child: ChildProcess
    let done: (ExitStatus?) -> Void
    init(child: ChildProcess, done: @escaping (ExitStatus?) -> Void) {
        self.child = child
        self.done = done
    }

    func start() throws {
        try SystemThread.detach("wait for the DHCP client") { [self] in done(try? child.wait()) }
    }
}
