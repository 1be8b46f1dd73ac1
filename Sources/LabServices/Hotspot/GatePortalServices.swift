import Foundation
import HotspotSystem
import PortalKinds
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

/// A hotspot's portal server (`hotspot-portal --kind KIND`), ready once it wrote `portal.ready`.
public final class PortalService: HotspotService, @unchecked Sendable {  // @unchecked: started and stopped by the one thread that brings its hotspot up or down; the rest is lets
    public let hotspot: Hotspot
    public let kind: String
    public let settings: [String: String]
    public let namespace: String
    public let binary: String
    /// The hotspot's log folder; `labLogDirectory` holds the lab CA.
    public let directory: String
    public let labLogDirectory: String
    let launcher: any ProcessLauncher
    public private(set) var process: (any ServiceProcess)?

    public var serviceName: String { "portal \(kind)" }
    public var log: String { directory + "/portal.log" }
    public var readyFile: String { directory + "/portal.ready" }
    public var logFiles: [String: String] { ["portal": log] }

    public init(hotspot: Hotspot, kind: String, settings: [String: String], namespace: String, binary: String,
                labLogDirectory: String, launcher: any ProcessLauncher) {
        self.hotspot = hotspot
        self.kind = kind
        self.settings = settings
        self.namespace = namespace
        self.binary = binary
        self.labLogDirectory = labLogDirectory
        directory = labLogDirectory + "/" + hotspot.name
        self.launcher = launcher
    }

    /// The server's arguments (makes the https-only certificate when the settings ask for HTTPS only).
    public func arguments() throws -> [String] {
        let gateway = hotspot.gateway
        var args = ["--kind", kind, "--listen", "\(gateway.address):\(gateway.portal?.port ?? 8080)"]
        // A LAN with IPv6: the portal answers on the gateway's IPv6 address too (the gate sends IPv6 HTTP there).
        if let ipv6 = gateway.ipv6 { args += ["--listen6", "\(ipv6.address)", "--portal-url", gateway.portalURL ?? ""] }
        args += ["--gate-table", "\(GateRuleset.family)/\(GateRuleset.table)/\(GateRuleset.set)",
                 "--session-seconds", "\(gateway.sessionSeconds)", "--ready-file", readyFile]
        if let value = settings[PortalTLS.setting], let problem = PortalTLS.problem(value) {
            throw SystemError("start the portal of", hotspot.name, reason: "setting `\(PortalTLS.setting)`: \(problem)")
        }
        if let definition = PortalCatalog.definition(kind), let (name, message) = SessionCookie.problem(settings, kind: definition) {
            throw SystemError("start the portal of", hotspot.name, reason: "setting `\(name)`: \(message)")
        }
        if PortalTLS.isHTTPSOnly(settings) {
            let (certificate, key) = try PortalTLS.makeServerCertificate(
                labLogDirectory: labLogDirectory, hotspot: hotspot.name, gatewayAddress: "\(gateway.address)", openssl: try launcher.tool("openssl"))
            args += ["--https-listen", "\(gateway.address):\(PortalTLS.port)", "--https-url", PortalTLS.url(hotspot: hotspot.name),
                     "--tls-certificate", certificate, "--tls-key", key]
        }
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) where key != PortalTLS.setting { args += ["--setting", "\(key)=\(value)"] }
        return args
    }

    public func launch() throws {
        unlink(readyFile)
        let args = try arguments()
        process = try launcher.spawn(ProcessConfiguration(binary, args, stdout: .file(log), stderr: .file(log)), inNamespace: namespace)
    }

    public func waitUntilReady() throws {
        guard let process else { throw SystemError("wait for", "portal \(kind) of \(hotspot.name)", reason: "it was not launched") }
        try Readiness.waitForFile(readyFile, child: process, log: log, what: "portal \(kind) for \(hotspot.name)")
    }

    /// Stops the server (`grace` before SIGKILL). The gate still redirects to its port.
    public func stop() throws { try stop(grace: .seconds(2)) }

    public func stop(grace: Duration) throws {
        try Readiness.stop(process, grace: grace)
    }
}
