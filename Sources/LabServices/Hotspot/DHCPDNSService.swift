import Foundation
import HotspotSystem
import LabTopology

/// A hotspot's DHCP and DNS: dnsmasq on the LAN interface (ready once it logged "started, version"), and
/// the DNS faults (docs/REPLAY.md): the DNS answering another way (`DNSAnswerMode`), queries dropped by an
/// nftables table of the fault's own (`no-answer`), `hotspot-dns-fault` answering SERVFAIL.
///
/// `refused`, `hijack` and `private` are switched atomically on an IPv4 or dual-stack LAN: a DNS-only dnsmasq
/// answering that way starts on a side port and is waited for, then one nft transaction points the gateway's port 53
/// at it (`DnsmasqConfig.redirectRuleset`), and back to normal the table goes in one step. Every query is answered
/// the old way or the new one, never by nobody, and DHCP never stops: a restart of the hotspot's dnsmasq left a
/// window with no DNS that outlasted the certify's 3 s maintain timer in the VM under load (issue 25). `servfail`,
/// and every mode on an IPv6-only LAN (where unbound owns port 53), still restart dnsmasq.
public final class DHCPDNSService: HotspotService, @unchecked Sendable {  // @unchecked: started and stopped by the one thread that brings its hotspot up or down; the rest is lets
    public let hotspot: Hotspot
    public let internet: Internet
    public let namespace: String
    public let interface: String
    public let directory: String
    let launcher: any ProcessLauncher
    /// dnsmasq and how its DNS answers now.
    public private(set) var process: (any ServiceProcess)?
    public private(set) var mode: DNSAnswerMode
    /// Queries are dropped (the `no-answer` DNS fault).
    public private(set) var dropped = false
    /// `hotspot-dns-fault`, answering every query SERVFAIL (the `servfail` DNS fault).
    public private(set) var faultServer: (any ServiceProcess)?
    /// How the hotspot's own dnsmasq answers (`mode` differs while a side server answers).
    public private(set) var mainMode: DNSAnswerMode
    /// The DNS-only dnsmasq answering a switched fault, its port (the gateway's port 53 redirected there) and log.
    public private(set) var sideServer: (any ServiceProcess)?
    public private(set) var sidePort: Int?
    public private(set) var sideLogs: [String] = []

    public var serviceName: String { "dnsmasq" }
    public var log: String { directory + "/dnsmasq.log" }
    public var leaseFile: String { directory + "/dnsmasq.leases" }
    public var faultLog: String { directory + "/dns-fault.log" }
    public var logFiles: [String: String] {
        var files = ["dnsmasq": log]
        for (n, side) in sideLogs.enumerated() { files["dnsmasq-dns-\(n + 1)"] = side }
        return files
    }

    public init(hotspot: Hotspot, internet: Internet, namespace: String, interface: String, directory: String, launcher: any ProcessLauncher) {
        self.hotspot = hotspot
        self.internet = internet
        self.namespace = namespace
        self.interface = interface
        self.directory = directory
        self.launcher = launcher
        mode = hotspot.faults.dns == "refused" ? .refused : .normal
        mainMode = mode
    }

    /// Whether `mode` is switched by a side server and one nft transaction (see the type's notes).
    public func switchesAtomically(_ mode: DNSAnswerMode) -> Bool {
        [.refused, .hijack, .privateAddresses].contains(mode) && hotspot.gateway.ip != .v6Only
    }

    /// dnsmasq's arguments in `mode` (nil: the topology's).
    public func arguments(mode: DNSAnswerMode? = nil) -> [String] {
        DnsmasqConfig.arguments(hotspot, internet: internet, interface: interface, leaseFile: leaseFile, logFile: log, mode: mode)
    }

    /// Starts dnsmasq as the topology asks (its log starts empty).
    public func launch() throws {
        try? FileManager.default.removeItem(atPath: log)
        try spawnDnsmasq(mode: nil)
    }

    func spawnDnsmasq(mode requested: DNSAnswerMode?) throws {
        process = try launcher.spawn(ProcessConfiguration(try launcher.tool("dnsmasq"), arguments(mode: requested),
                                                          stdout: .file(log), stderr: .file(log)), inNamespace: namespace)
    }

    public func waitUntilReady() throws {
        guard let process else { throw SystemError("wait for", "dnsmasq of \(hotspot.name)", reason: "it was not launched") }
        try Readiness.waitForLogLine(log, containing: "started, version", child: process, what: "dnsmasq for \(hotspot.name)")
    }

    /// Stops dnsmasq, the side server and the SERVFAIL server (the redirect table goes with the namespace).
    public func stop() throws {
        try Readiness.stop(faultServer, grace: .seconds(2))
        faultServer = nil
        try Readiness.stop(sideServer, grace: .seconds(2))
        sideServer = nil
        try Readiness.stop(process, grace: .seconds(2))
    }

    /// The `no-answer` fault's table: DNS queries to the hotspot dropped, on port 53 and on the side ports (where a
    /// switched fault's redirect, left in place beneath it, has already sent them).
    public static let dropRuleset: String = {
        let ports = ([53] + DnsmasqConfig.sidePorts).map(String.init).joined(separator: ", ")
        return "table inet hsldnsfault {\n  chain input {\n    type filter hook input priority -10; policy accept;\n"
            + "    udp dport { \(ports) } drop\n    tcp dport { \(ports) } drop\n  }\n}\n"
    }()

    /// Every DNS query to the hotspot is dropped (the `no-answer` fault).
    public func dropQueries() throws {
        let file = directory + "/dns-fault.nft"
        try Self.dropRuleset.write(toFile: file, atomically: true, encoding: .utf8)
        try nft(["-f", file], "drop DNS queries at")
        dropped = true
    }

    /// DNS answers as `newMode`: queries no longer dropped, dnsmasq restarted in that mode if it changed (its
    /// leases stay in the lease file; the previous log is kept as dnsmasq.log.N), the SERVFAIL server started
    /// (servfail) or stopped (any other mode).
    public func setMode(_ newMode: DNSAnswerMode) throws {
        if dropped {
            _ = try launcher.run(ProcessConfiguration(try launcher.tool("nft"), ["delete", "table", "inet", "hsldnsfault"]),
                                 inNamespace: namespace, timeout: .seconds(60))
            dropped = false
        }
        if switchesAtomically(newMode) {
            if newMode == mode, sideServer != nil { return }
            // The side server is up on the free side port before port 53 is pointed at it; the previous one (another
            // fault) stops after the switch.
            let port = sidePort == DnsmasqConfig.sidePorts[0] ? DnsmasqConfig.sidePorts[1] : DnsmasqConfig.sidePorts[0]
            let side = try startSideServer(mode: newMode, port: port)
            do {
                try redirect(to: port)
            } catch {
                try? Readiness.stop(side, grace: .seconds(2))
                throw error
            }
            let previous = sideServer
            sideServer = side
            sidePort = port
            mode = newMode
            try Readiness.stop(previous, grace: .seconds(2))
            // A SERVFAIL server no longer gets a query (port 53 is redirected); it stops.
            if let fault = faultServer {
                try Readiness.stop(fault, grace: .seconds(2))
                faultServer = nil
            }
            return
        }
        // The hotspot's dnsmasq answers `newMode` itself: restarted in it if it answers otherwise (the SERVFAIL server
        // goes first: dnsmasq in another mode wants port 53 back), then a side server's redirect is removed.
        if newMode != .servfail, let fault = faultServer {
            try Readiness.stop(fault, grace: .seconds(2))
            faultServer = nil
        }
        if newMode != mainMode || process == nil {
            try Readiness.stop(process, grace: .seconds(2))
            var generation = 1
            while FileManager.default.fileExists(atPath: "\(log).\(generation)") { generation += 1 }
            try? FileManager.default.moveItem(atPath: log, toPath: "\(log).\(generation)")
            try spawnDnsmasq(mode: newMode)
            try waitUntilReady()
            mainMode = newMode
        }
        // poll, not exitStatus: a server that died is known only once reaped (nothing else reaps it).
        if newMode == .servfail, try faultServer?.poll() != nil || faultServer == nil {
            try startFaultServer()
        }
        if let side = sideServer {
            try removeRedirect()
            sideServer = nil
            sidePort = nil
            try Readiness.stop(side, grace: .seconds(2))
        }
        mode = newMode
    }

    /// A DNS-only dnsmasq answering as `mode` on `port`, waited for (its own log, started empty).
    func startSideServer(mode: DNSAnswerMode, port: Int) throws -> any ServiceProcess {
        let sideLog = directory + "/dnsmasq-dns-\(sideLogs.count + 1)-\(mode.rawValue).log"
        try? FileManager.default.removeItem(atPath: sideLog)
        let arguments = DnsmasqConfig.dnsOnlyArguments(hotspot, internet: internet, interface: interface, logFile: sideLog, mode: mode, port: port)
        let side = try launcher.spawn(ProcessConfiguration(try launcher.tool("dnsmasq"), arguments, stdout: .file(sideLog), stderr: .file(sideLog)),
                                      inNamespace: namespace)
        sideLogs.append(sideLog)
        do {
            try Readiness.waitForLogLine(sideLog, containing: "started, version", child: side, what: "the DNS-only dnsmasq (\(mode.rawValue)) for \(hotspot.name)")
        } catch {
            try? Readiness.stop(side, grace: .seconds(2))
            throw error
        }
        return side
    }

    /// Points the gateway's port 53 at `port` (the redirect table replaced in one nft transaction).
    func redirect(to port: Int) throws {
        let file = directory + "/dns-redirect.nft"
        try DnsmasqConfig.redirectRuleset(hotspot.gateway, interface: interface, port: port).write(toFile: file, atomically: true, encoding: .utf8)
        try nft(["-f", file], "point the DNS of")
    }

    /// The gateway's port 53 is the hotspot's dnsmasq's again (the redirect table deleted in one step).
    func removeRedirect() throws {
        try nft(["delete", "table", "inet", DnsmasqConfig.redirectTable], "restore the DNS of")
    }

    /// `nft ARGUMENTS` in the hotspot's namespace; a failure names `operation`, the hotspot, the command and nft's words.
    func nft(_ arguments: [String], _ operation: String) throws {
        let result = try launcher.run(ProcessConfiguration(try launcher.tool("nft"), arguments), inNamespace: namespace, timeout: .seconds(60))
        guard result.status.succeeded else {
            throw SystemError(operation, hotspot.name,
                              reason: "nft \(arguments.joined(separator: " ")): \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
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
                                  timeout: .seconds(60))  // a bound for a server that never starts: ready ends it
        faultServer = child
    }
}
