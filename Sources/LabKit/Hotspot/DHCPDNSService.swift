import Foundation
import HotspotSystem

/// A hotspot's DHCP and DNS: dnsmasq on the LAN interface (ready once it logged "started, version"), and
/// the DNS faults (docs/REPLAY.md): dnsmasq restarted answering another way (`DnsmasqConfig.Mode`), queries
/// dropped by an nftables table of the fault's own (`no-answer`), `hotspot-dns-fault` answering SERVFAIL.
public final class DHCPDNSService: HotspotService, @unchecked Sendable {  // @unchecked: started and stopped by the one thread that brings its hotspot up or down; the rest is lets
    public let hotspot: Hotspot
    public let internet: Internet
    public let namespace: String
    public let interface: String
    public let directory: String
    let launcher: any ProcessLauncher
    /// dnsmasq and how its DNS answers now.
    public private(set) var process: (any ServiceProcess)?
    public private(set) var mode: DnsmasqConfig.Mode
    /// Queries are dropped (the `no-answer` DNS fault).
    public private(set) var dropped = false
    /// `hotspot-dns-fault`, answering every query SERVFAIL (the `servfail` DNS fault).
    public private(set) var faultServer: (any ServiceProcess)?

    public var serviceName: String { "dnsmasq" }
    public var log: String { directory + "/dnsmasq.log" }
    public var leaseFile: String { directory + "/dnsmasq.leases" }
    public var faultLog: String { directory + "/dns-fault.log" }
    public var logFiles: [String: String] { ["dnsmasq": log] }

    public init(hotspot: Hotspot, internet: Internet, namespace: String, interface: String, directory: String, launcher: any ProcessLauncher) {
        self.hotspot = hotspot
        self.internet = internet
        self.namespace = namespace
        self.interface = interface
        self.directory = directory
        self.launcher = launcher
        mode = hotspot.faults.dns == "refused" ? .refused : .normal
    }

    /// dnsmasq's arguments in `mode` (nil: the topology's).
    public func arguments(mode: DnsmasqConfig.Mode? = nil) -> [String] {
        DnsmasqConfig.arguments(hotspot, internet: internet, interface: interface, leaseFile: leaseFile, logFile: log, mode: mode)
    }

    /// Starts dnsmasq as the topology asks (its log starts empty).
    public func launch() throws {
        try? FileManager.default.removeItem(atPath: log)
        try spawnDnsmasq(mode: nil)
    }

    func spawnDnsmasq(mode requested: DnsmasqConfig.Mode?) throws {
        process = try launcher.spawn(ProcessConfiguration(try launcher.tool("dnsmasq"), arguments(mode: requested),
                                                          stdout: .file(log), stderr: .file(log)), inNamespace: namespace)
    }

    public func waitUntilReady() throws {
        guard let process else { throw SystemError("wait for", "dnsmasq of \(hotspot.name)", reason: "it was not launched") }
        try Readiness.waitForLogLine(log, containing: "started, version", child: process, what: "dnsmasq for \(hotspot.name)")
    }

    /// Stops dnsmasq and the SERVFAIL server.
    public func stop() throws {
        try Readiness.stop(faultServer, grace: .seconds(2))
        faultServer = nil
        try Readiness.stop(process, grace: .seconds(2))
    }

    /// The `no-answer` fault's table: DNS queries to the hotspot dropped.
    public static let dropRuleset = "table inet hsldnsfault {\n  chain input {\n    type filter hook input priority -10; policy accept;\n    udp dport 53 drop\n    tcp dport 53 drop\n  }\n}\n"

    /// Every DNS query to the hotspot is dropped (the `no-answer` fault).
    public func dropQueries() throws {
        let file = directory + "/dns-fault.nft"
        try Self.dropRuleset.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try launcher.run(ProcessConfiguration(try launcher.tool("nft"), ["-f", file]), inNamespace: namespace, timeout: .seconds(60))
        guard result.status.succeeded else { throw SystemError("drop DNS queries at", hotspot.name, reason: "nft -f: \(result.stderr)") }
        dropped = true
    }

    /// DNS answers as `newMode`: queries no longer dropped, dnsmasq restarted in that mode if it changed (its
    /// leases stay in the lease file; the previous log is kept as dnsmasq.log.N), the SERVFAIL server started
    /// (servfail) or stopped (any other mode).
    public func setMode(_ newMode: DnsmasqConfig.Mode) throws {
        if dropped {
            _ = try launcher.run(ProcessConfiguration(try launcher.tool("nft"), ["delete", "table", "inet", "hsldnsfault"]),
                                 inNamespace: namespace, timeout: .seconds(60))
            dropped = false
        }
        // The SERVFAIL server goes first: dnsmasq in another mode wants port 53 back.
        if newMode != .servfail, let fault = faultServer {
            try Readiness.stop(fault, grace: .seconds(2))
            faultServer = nil
        }
        if newMode != mode || process == nil {
            try Readiness.stop(process, grace: .seconds(2))
            var generation = 1
            while FileManager.default.fileExists(atPath: "\(log).\(generation)") { generation += 1 }
            try? FileManager.default.moveItem(atPath: log, toPath: "\(log).\(generation)")
            try spawnDnsmasq(mode: newMode)
            try waitUntilReady()
            mode = newMode
        }
        if newMode == .servfail, faultServer?.exitStatus != nil || faultServer == nil {
            try startFaultServer()
        }
    }

    /// `hotspot-dns-fault`'s arguments: SERVFAIL on the gateway's port 53.
    public func faultServerArguments(readyFile: String) -> [String] {
        ["--listen", "\(hotspot.gateway.address):53", "--rcode", "servfail", "--log", faultLog, "--ready-file", readyFile]
    }

    func startFaultServer() throws {
        let ready = directory + "/dns-fault.ready"
        unlink(ready)
        let child = try launcher.spawn(ProcessConfiguration(
            try launcher.product("hotspot-dns-fault", environmentKey: "HOTSPOT_DNS_FAULT"), faultServerArguments(readyFile: ready),
            stdout: .file(faultLog), stderr: .file(faultLog)), inNamespace: namespace)
        try Readiness.waitForFile(ready, child: child, log: faultLog, what: "the SERVFAIL DNS server (hotspot-dns-fault) of \(hotspot.name)",
                                  timeout: .seconds(10))
        faultServer = child
    }
}
