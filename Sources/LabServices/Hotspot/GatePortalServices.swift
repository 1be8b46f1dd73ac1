import Foundation
import HotspotSystem
import Netlink
import PortalKinds
import PortalNetlink
import Portals
import LabTopology

/// The nftables captive gate of a hotspot (`GateRuleset`), loaded from `gate.nft` in its log folder.
public final class GateService: HotspotService, @unchecked Sendable {  // @unchecked: started and stopped by the one thread that brings its hotspot up or down; the rest is lets
    public let gateway: Gateway
    public let namespace: String
    public let lan: String
    public let uplink: String
    public let directory: String
    let launcher: any ProcessLauncher
    /// An IPv6-only LAN's NAT64 tun (`NAT64Service`), named in the ruleset.
    public var nat64: String?

    public var serviceName: String { "gate" }
    public var logFiles: [String: String] { [:] }
    /// The rendered ruleset's file.
    public var rulesFile: String { directory + "/gate.nft" }

    public init(gateway: Gateway, namespace: String, lan: String, uplink: String, directory: String, launcher: any ProcessLauncher) {
        self.gateway = gateway
        self.namespace = namespace
        self.lan = lan
        self.uplink = uplink
        self.directory = directory
        self.launcher = launcher
    }

    public func launch() throws {
        let rules = rulesFile
        try GateRuleset.render(gateway, lan: lan, uplink: uplink, nat64: nat64).write(toFile: rules, atomically: true, encoding: .utf8)
        // The bound catches a hang, not a slow run: 60 s as every other nft call of the lab. It was 10 s, which `nft -f`
        // exceeds in the VM under TCG on a loaded 2-core machine (seen: every lab of a certify failing to start, issue 25).
        let nft = try launcher.run(ProcessConfiguration(try launcher.tool("nft"), ["-f", rules]), inNamespace: namespace, timeout: .seconds(60))
        guard nft.status.succeeded else {
            throw SystemError("load the captive gate", "\(rules) into \(namespace)",
                              reason: "nft -f: \(nft.status): " + nft.stderr.split(separator: "\n").joined(separator: " | "))
        }
    }

    /// Ready once loaded (`nft -f` is synchronous).
    public func waitUntilReady() throws {}

    /// The gate's table is deleted (nothing forwarded or redirected any more).
    public func stop() throws {
        try check(["delete", "table", GateRuleset.family, GateRuleset.table], doing: "remove the captive gate of")
    }

    /// Every portal session ends, as at the session length: both authenticated sets (IPv4 and IPv6) are flushed.
    /// Both families' sets in one nft transaction: the sessions end at one moment, never IPv4 first and IPv6 a
    /// process start later (a sign-in between the two would have kept half a session).
    public func expireSessions() throws {
        try check(["flush", "set", GateRuleset.family, GateRuleset.table, GateRuleset.set, ";",
                   "flush", "set", GateRuleset.family, GateRuleset.table, GateRuleset.set6], doing: "expire the portal sessions of")
    }

    func check(_ args: [String], doing operation: String) throws {
        let result = try launcher.run(ProcessConfiguration(try launcher.tool("nft"), args), inNamespace: namespace, timeout: .seconds(60))
        guard result.status.succeeded else {
            throw SystemError(operation, "\(namespace) (gateway \(gateway.address))",
                              reason: "nft \(args.joined(separator: " ")): \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }
}

/// A hotspot's portal server: its kind (`PortalKinds`) served by `PortalServer` in the lab runner's own process, its
/// sockets and its gate's netlink sockets made inside the hotspot's namespace (`PortalNetlink`), each connection on a
/// thread of its own; its lines (the kind's `refused:` lines included) go to `<hotspot>/portal.log`. Until stop 45 it
/// was a `hotspot-portal --kind KIND` process, whose start was most of its CPU under the VM's emulation (bench/README.md);
/// that program stays, for a portal served by hand. Ready once `launch` returns: every socket listens then.
public final class PortalService: InProcessService, @unchecked Sendable {  // @unchecked: lets, and `served` (which locks its own state)
    public let hotspot: Hotspot
    public let kind: String
    public let settings: [String: String]
    public let namespace: NetworkNamespace
    /// The hotspot's log folder; `labLogDirectory` holds the lab CA.
    public let directory: String
    public let labLogDirectory: String
    let launcher: any ProcessLauncher
    private let served = InProcessServers()

    public var serviceName: String { "portal \(kind)" }
    public var log: String { directory + "/portal.log" }
    public var logFiles: [String: String] { ["portal": log] }
    /// The gate's sets, as `hotspot-portal --gate-table` takes them.
    public static var gateSpec: String { "\(GateRuleset.family)/\(GateRuleset.table)/\(GateRuleset.set)" }

    public init(hotspot: Hotspot, kind: String, settings: [String: String], namespace: NetworkNamespace,
                labLogDirectory: String, launcher: any ProcessLauncher) {
        self.hotspot = hotspot
        self.kind = kind
        self.settings = settings
        self.namespace = namespace
        self.labLogDirectory = labLogDirectory
        directory = labLogDirectory + "/" + hotspot.name
        self.launcher = launcher
    }

    /// Checks the settings (nothing listens when they are wrong), then serves the kind: on the gateway's portal port
    /// (and its IPv6 address on a hotspot with IPv6), or, HTTPS only, over TLS on 443 with the plain port redirecting
    /// there (the certificate made by the lab CA).
    public func launch() throws {
        let gateway = hotspot.gateway
        if let value = settings[PortalTLS.setting], let problem = PortalTLS.problem(value) {
            throw SystemError("start the portal of", hotspot.name, reason: "setting `\(PortalTLS.setting)`: \(problem)")
        }
        if let definition = PortalCatalog.definition(kind), let (name, message) = SessionCookie.problem(settings, kind: definition) {
            throw SystemError("start the portal of", hotspot.name, reason: "setting `\(name)`: \(message)")
        }
        guard let port = UInt16(exactly: gateway.portal?.port ?? 8080), port > 0 else {
            throw SystemError("start the portal of", hotspot.name, reason: "port \(gateway.portal?.port ?? 8080): expected a TCP port, 1-65535")
        }
        let kindSettings = settings.filter { $0.key != PortalTLS.setting }
        let httpsOnly = PortalTLS.isHTTPSOnly(settings)
        let portalKind: any PortalKind
        do {
            portalKind = try SessionCookie.guarded(try PortalRegistry.make(kind, settings: kindSettings), settings: kindSettings, secure: httpsOnly)
        } catch {
            throw SystemError("start the portal of", hotspot.name, reason: "kind `\(kind)`: \(error)")
        }
        var https: (certificate: String, key: String)?
        if httpsOnly {
            https = try PortalTLS.makeServerCertificate(labLogDirectory: labLogDirectory, hotspot: hotspot.name,
                                                        gatewayAddress: "\(gateway.address)", openssl: try launcher.tool("openssl"))
        }
        let log: PortalLog
        do { log = try PortalLog(file: self.log) } catch {
            throw SystemError("start the portal of", hotspot.name, reason: "\(error)")
        }
        let ip = "\(gateway.address)", kind = kind, sessionSeconds = gateway.sessionSeconds, gateSpec = Self.gateSpec
        let address6 = gateway.ipv6.map { "\($0.address)" }
        let portalURL = address6 != nil ? (gateway.portalURL ?? "") : "http://\(ip):\(port)/"
        let httpsURL = PortalTLS.url(hotspot: hotspot.name)
        do {
            let servers = try namespace.runInside { () throws -> [LabHTTPServer] in
                // The gate's and the neighbour tables' netlink sockets, made here: the hotspot's namespace.
                let gate = try NetlinkGate(spec: gateSpec)
                let neighbours = try NetlinkNeighbours()
                if let https {
                    let tls = try TLSServerContext(certificateFile: https.certificate, keyFile: https.key)
                    let name = httpsURL.dropFirst(8).prefix { $0 != "/" && $0 != ":" }
                    let sessions = PortalSessions(portalURL: httpsURL, sessionSeconds: sessionSeconds, gate: gate, neighbours: neighbours)
                    let server = PortalServer(kind: portalKind, context: sessions, portalHost: String(name), otherPortalHosts: [ip])
                    log.line("portal \(kind) HTTPS only at \(httpsURL) (TLS on \(ip):\(PortalTLS.port)) session \(sessionSeconds)s gate \(gateSpec)")
                    return try server.startHTTPSOnly(ip: ip, port: port, tls: tls, tlsIP: ip, tlsPort: UInt16(PortalTLS.port),
                                                     httpsURL: httpsURL, log: log)
                }
                let sessions = PortalSessions(portalURL: portalURL, sessionSeconds: sessionSeconds, gate: gate, neighbours: neighbours)
                let server = PortalServer(kind: portalKind, context: sessions, portalHost: ip, otherPortalHosts: address6.map { ["[\($0)]"] } ?? [])
                log.line("portal \(kind) session \(sessionSeconds)s gate \(gateSpec)" + (address6.map { " also on [\($0)]:\(port)" } ?? ""))
                return try server.start(ip: ip, port: port, alsoOn: address6.map { [$0] } ?? [], log: log)
            }
            served.serving(servers, log: log)
        } catch {
            log.close()
            throw SystemError("start the portal of", hotspot.name, reason: "\(error)")
        }
        log.line("listening on \(ip):\(port)")
    }

    /// Whether it listens (launched, not stopped).
    public var isServing: Bool { served.isServing }

    /// Listening since `launch` returned.
    public func waitUntilReady() throws {
        guard served.isServing else { throw SystemError("wait for", "portal \(kind) of \(hotspot.name)", reason: "it was not launched") }
    }

    /// Stops the server: it stops listening and every open connection ends (a sign-in in progress, a kind's delay).
    /// The gate still redirects to its port.
    public func stop() throws {
        served.stop()
    }
}
