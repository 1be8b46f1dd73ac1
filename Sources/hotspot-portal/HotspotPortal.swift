// hotspot-portal: the lab's captive portal server (one portal kind) or, with --internet, the lab's
// "internet" (probe endpoints and a plain web site). Runs inside a hotspot (or the internet) namespace.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HotspotHelper
import HotspotSystem
import PortalNetlink
import Portals

/// The command line is read with `OptionReader` (not swift-argument-parser: a lab starts a portal per hotspot, and in
/// the VM that parser's reflection cost about 0.7 s of CPU per start; bench/README.md "Process starts in the VM").
@main
struct HotspotPortalCommand {
    var kind: String?
    var internet: Bool
    var listen: String
    var listen6: String?
    var gateTable: String
    var sessionSeconds: Int
    var portalURL: String?
    var settings: [String]
    var httpsListen: String?
    var httpsURL: String?
    var tlsCertificate: String?
    var tlsKey: String?
    var services: String?
    var internetTLSPort: UInt16?
    var tlsCa: String?
    var tlsCaKey: String?
    var tlsDirectory: String?
    var readyFile: String?

    static func main() async {
        var options = OptionReader(
            command: "hotspot-portal",
            abstract: "Serve a captive portal kind, or the lab internet's probe endpoints.",
            discussion: "Kinds and their settings (--setting KEY=VALUE; * required):\n" + PortalRegistry.definitions.map { kind in
                "  \(kind.name): " + (kind.settings.isEmpty ? "no settings" : kind.settings.map { ($0.required ? "*" : "") + $0.name }.joined(separator: ", "))
            }.joined(separator: "\n"))
        let command = HotspotPortalCommand(options: &options)
        options.finish()
        if let problem = command.validate() { options.usageError(problem) }
        do {
            try await command.run()
        } catch {
            logLine("hotspot-portal: \(error)")
            exit(1)
        }
    }

    init(options o: inout OptionReader) {
        kind = o.value("kind", help: "Portal kind (see below).")
        internet = o.flag("internet", help: "Serve the lab internet (probe endpoints, plain web site) instead of a portal.")
        listen = o.value("listen", help: "IPv4 address and port to listen on, e.g. 198.51.100.1:8080 (required).") ?? ""
        listen6 = o.value("listen6", help: "Also listen on this IPv6 address (same port as --listen), e.g. 2001:db8:1::1: a dual-stack or IPv6-only hotspot's gateway, or the internet's IPv6 address.")
        gateTable = o.value("gate-table", default: "inet/hotspot/authenticated", help: "The gate's nftables sets as FAMILY/TABLE/SET (the IPv6 set is SET6).")
        sessionSeconds = o.value("session-seconds", default: 3600, help: "Session length in seconds (the gate set's element timeout).")
        portalURL = o.value("portal-url", help: "The portal's public URL (default: http://LISTEN/).")
        settings = o.values("setting", valueName: "setting", help: "Kind setting KEY=VALUE (each kind's settings are listed below).")
        httpsListen = o.value("https-listen", help: "HTTPS only: serve the kind over TLS on this IPV4:PORT (e.g. 198.51.100.1:443); plain HTTP on --listen then only redirects to --https-url.")
        httpsURL = o.value("https-url", help: "HTTPS only: the portal's https:// URL (its host is the certificate's DNS name), e.g. https://portal.cafe.example/.")
        tlsCertificate = o.value("tls-certificate", help: "HTTPS only: the server certificate chain (PEM).")
        tlsKey = o.value("tls-key", help: "HTTPS only: the server's private key (PEM).")
        services = o.value("services", help: "Internet: the backend routes (`internet: services:` of the topology) as a JSON list of InternetRoute.")
        internetTLSPort = o.value("internet-tls-port", help: "Internet: serve HTTPS on this port of the --listen address, a certificate per SNI name issued by --tls-ca.")
        tlsCa = o.value("tls-ca", help: "Internet HTTPS: the lab CA's certificate (PEM).")
        tlsCaKey = o.value("tls-ca-key", help: "Internet HTTPS: the lab CA's private key (PEM).")
        tlsDirectory = o.value("tls-directory", help: "Internet HTTPS: where the issued certificates are written.")
        readyFile = o.value("ready-file", help: "Write this file once the server listens (readiness for the lab).")
    }

    /// The first problem with the options, nil when there is none.
    func validate() -> String? {
        if listen.isEmpty { return "missing --listen IPV4:PORT" }
        if internet == (kind != nil) { return "give exactly one of --kind KIND or --internet" }
        if let kind, !PortalRegistry.names.contains(kind) {
            return "--kind: unknown portal kind `\(kind)`; expected one of \(PortalRegistry.names.joined(separator: ", "))"
        }
        guard parseListen() != nil else { return "--listen: expected IPV4:PORT, found `\(listen)`" }
        if let listen6, IPv6Text.isAddress(listen6) == false {
            return "--listen6: expected an IPv6 address such as 2001:db8:1::1, found `\(listen6)`"
        }
        let https = [httpsListen, httpsURL, tlsCertificate, tlsKey]
        if https.contains(where: { $0 != nil }) {
            guard !https.contains(where: { $0 == nil }) else {
                return "--https-listen, --https-url, --tls-certificate and --tls-key go together (HTTPS only); some are missing"
            }
            guard !internet else { return "--https-listen is the https-only portal's; the internet serves HTTPS with --internet-tls-port" }
            guard Self.parseIPv4Port(httpsListen!) != nil else { return "--https-listen: expected IPV4:PORT, found `\(httpsListen!)`" }
            guard httpsURL!.hasPrefix("https://") else { return "--https-url: expected an https:// URL, found `\(httpsURL!)`" }
        }
        let internetTLS = [tlsCa, tlsCaKey, tlsDirectory]
        if internetTLSPort != nil || internetTLS.contains(where: { $0 != nil }) {
            guard internet else { return "--internet-tls-port, --tls-ca, --tls-ca-key and --tls-directory are for --internet" }
            guard internetTLSPort != nil, !internetTLS.contains(where: { $0 == nil }) else {
                return "--internet-tls-port, --tls-ca, --tls-ca-key and --tls-directory go together; some are missing"
            }
        }
        if services != nil, !internet { return "--services is for --internet" }
        for setting in settings where !setting.contains("=") {
            return "--setting: expected KEY=VALUE, found `\(setting)`"
        }
        // The kind's settings, checked against its definition (as the topology parser does) before anything listens.
        if let kind, let definition = PortalRegistry.definition(kind) {
            do { _ = try definition.validate(settingValues()) } catch { return "--setting: \(error)" }
            if let (name, message) = SessionCookie.problem(settingValues(), kind: definition) {
                return "--setting: \(PortalSettingError(kind: kind, setting: name, message: message))"
            }
        }
        return nil
    }

    /// The `--setting KEY=VALUE` options as a dictionary (the last of a key wins).
    func settingValues() -> [String: String] {
        var values: [String: String] = [:]
        for setting in settings {
            let parts = setting.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            if let key = parts.first { values[key] = parts.count > 1 ? parts[1] : "" }
        }
        return values
    }

    func parseListen() -> (String, UInt16)? { Self.parseIPv4Port(listen) }

    static func parseIPv4Port(_ listen: String) -> (String, UInt16)? {
        let parts = listen.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]), parts[0].split(separator: ".").count == 4 else { return nil }
        return (String(parts[0]), port)
    }

    func run() async throws {
        let (ip, port) = parseListen()!
        let ready = readyFile
        // Ready once a request has been answered, not only once the socket listens: the readiness request (on a thread
        // of its own, so the server's tasks keep the cooperative threads) makes the HTTP machinery's first use here.
        let onListening: @Sendable () -> Void = {
            logLine("listening on \(ip):\(port)")
            guard let ready else { return }
            let writeReady: @Sendable () -> Void = {
                if !FileManager.default.createFile(atPath: ready, contents: Data("\(getpid())\n".utf8)) {
                    logLine("write the ready file \(ready): \(String(cString: strerror(errno)))")
                }
            }
            do {
                try SystemThread.detach("readiness request") {
                    switch ReadinessRequest.get(ip: ip, port: port) {
                    case .success(let status): logLine("ready: \(PortalServer.readinessPath) answered \(status)")
                    case .failure(let error): logLine("ready without the readiness request: \(error)")
                    }
                    writeReady()
                }
            } catch {
                logLine("ready without the readiness request: \(error)")
                writeReady()
            }
        }
        if internet {
            var routes: [InternetRoute] = []
            if let services {
                do {
                    routes = try JSONDecoder().decode([InternetRoute].self, from: Data(contentsOf: URL(fileURLWithPath: services)))
                } catch {
                    throw SystemError("read the backend routes (--services)", services, reason: "\(error)")
                }
            }
            var tls: TLSServerContext?
            if let internetTLSPort, let tlsCa, let tlsCaKey, let tlsDirectory {
                let issuer = TLSCertificateIssuer(caCertificate: tlsCa, caKey: tlsCaKey, directory: tlsDirectory)
                tls = try issuer.serverContext(defaultName: ip)
                logLine("internet HTTPS on port \(internetTLSPort): certificates per SNI name from \(tlsCa)")
            }
            logLine("internet: \(routes.count) backend route(s)")
            try await InternetServer.run(ip: ip, port: port, alsoOn: listen6.map { [$0] } ?? [], responder: InternetResponder(routes: routes), tls: tls,
                                         tlsPort: internetTLSPort ?? 443, onListening: onListening)
            return
        }
        // With `session-cookie` (any login kind): behind its session cookie, `Secure; HttpOnly` over HTTPS only.
        let portalKind = try SessionCookie.guarded(try PortalRegistry.make(kind!, settings: settingValues()), settings: settingValues(),
                                                   secure: httpsListen != nil)
        if let httpsListen, let httpsURL, let tlsCertificate, let tlsKey, let (tlsIP, tlsPort) = Self.parseIPv4Port(httpsListen) {
            let tls = try TLSServerContext(certificateFile: tlsCertificate, keyFile: tlsKey)
            let name = httpsURL.dropFirst(8).prefix { $0 != "/" && $0 != ":" }
            let sessions = PortalSessions(
                portalURL: httpsURL, sessionSeconds: sessionSeconds,
                gate: try NetlinkGate(spec: gateTable), neighbours: try NetlinkNeighbours())
            let server = PortalServer(kind: portalKind, context: sessions, portalHost: String(name), otherPortalHosts: [tlsIP])
            logLine("portal \(kind!) HTTPS only at \(httpsURL) (TLS on \(httpsListen)) session \(sessionSeconds)s gate \(gateTable)")
            try await server.runHTTPSOnly(ip: ip, port: port, tls: tls, tlsIP: tlsIP, tlsPort: tlsPort, httpsURL: httpsURL,
                                          onListening: onListening)
            return
        }
        let sessions = PortalSessions(
            portalURL: portalURL ?? "http://\(ip):\(port)/", sessionSeconds: sessionSeconds,
            gate: try NetlinkGate(spec: gateTable), neighbours: try NetlinkNeighbours())
        let server = PortalServer(kind: portalKind, context: sessions, portalHost: ip,
                                  otherPortalHosts: listen6.map { ["[\($0)]"] } ?? [])
        logLine("portal \(kind!) session \(sessionSeconds)s gate \(gateTable)" + (listen6.map { " also on [\($0)]:\(port)" } ?? ""))
        try await server.run(ip: ip, port: port, alsoOn: listen6.map { [$0] } ?? [], onListening: onListening)
    }
}

/// IPv6 address text.
enum IPv6Text {
    static func isAddress(_ text: String) -> Bool {
        var address = in6_addr()
        return text.contains(":") && inet_pton(AF_INET6, text, &address) == 1
    }
}

/// The readiness request: `GET /.hotspot-lab/ready` to this server's own IPv4 address, with the SDK's client, 10 s at most.
enum ReadinessRequest {
    static func get(ip: String, port: UInt16) -> Result<Int, HotspotTrafficError> {
        Result { () throws(HotspotTrafficError) -> Int in
            try HotspotHTTPClient(timeout: .seconds(10)).get("http://\(ip):\(port)\(PortalServer.readinessPath)").status
        }
    }
}
