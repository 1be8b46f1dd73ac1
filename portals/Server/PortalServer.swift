// The portal server: serves one portal kind (PortalKinds, HTTP-free) over HTTP, or over TLS (`LabHTTPServer`).
@_exported import PortalKinds
import Foundation

/// Serves one portal kind over HTTP (or HTTPS). Requests whose Host is not the portal's own
/// address are treated as intercepted (redirected by the gate).
public struct PortalServer: Sendable {
    public let kind: any PortalKind
    public let context: any PortalContext
    public let portalHost: String
    /// Other Host values that address the portal itself (the https-only portal: its address besides its name).
    public let otherPortalHosts: Set<String>

    public init(kind: any PortalKind, context: any PortalContext, portalHost: String, otherPortalHosts: Set<String> = []) {
        self.kind = kind
        self.context = context
        self.portalHost = portalHost
        self.otherPortalHosts = otherPortalHosts
    }

    /// The path of the readiness request `hotspot-portal` makes to itself once it listens, before it writes its ready
    /// file: answered 204 ahead of the kind and of the internet's routes, and not logged. Under the VM's emulation a
    /// server's first request cost 0.19-0.2 s more than the next ones (the HTTP machinery's first use); the lab's
    /// readiness now includes it, instead of the helper's first probe (bench/README.md "Process starts in the VM").
    public static let readinessPath = "/.hotspot-lab/ready"

    /// The answer to the readiness request.
    static var readinessResponse: PortalResponse { PortalResponse(status: 204) }

    func addressesPortal(_ host: String?) -> Bool {
        guard let host else { return false }
        return host == portalHost || otherPortalHosts.contains(host)
    }

    /// Answers one request as the kind does (after the kind's delay, if any).
    public func answer(_ request: PortalRequest) async -> PortalResponse {
        let response = await kind.respond(to: request, context: context)
        if response.delaySeconds > 0 { try? await Task.sleep(for: .seconds(response.delaySeconds)) }
        return response
    }

    /// One request (plain HTTP or TLS) from the TCP peer `peer`: the readiness request, or the kind's answer.
    public func handle(_ request: RawHTTPRequest, peer: String) async -> PortalResponse {
        if request.path == Self.readinessPath { return Self.readinessResponse }
        var form: [String: String] = [:]
        if request.method == "POST" { form = parseForm(String(decoding: request.body, as: UTF8.self)) }
        var portalRequest = PortalRequest(
            method: request.method, path: request.path, host: request.host, query: parseForm(request.query), form: form,
            clientIP: peer, intercepted: !addressesPortal(request.host))
        portalRequest.cookies = parseCookies(request.header("Cookie"))
        return await answer(portalRequest)
    }

    /// The https-only portal: serves the kind over TLS on `tlsIP:tlsPort` (terminated in this process, so the
    /// kind sees the client's own address) and answers plain HTTP on `ip:port` only with a redirect to
    /// `httpsURL` (the same path and query when addressed to the portal; the portal's entry page when intercepted).
    public func runHTTPSOnly(ip: String, port: UInt16, tls: TLSServerContext, tlsIP: String, tlsPort: UInt16, httpsURL: String,
                             onListening: @Sendable @escaping () -> Void = {}) async throws {
        try await serveUntilCancelled(onListening: onListening) { servers in
            servers += try startHTTPSOnly(ip: ip, port: port, tls: tls, tlsIP: tlsIP, tlsPort: tlsPort, httpsURL: httpsURL)
        }
    }

    /// The servers `runHTTPSOnly` serves with, listening when this returns (each accepts on a thread of its own), their
    /// lines to `log`. The sockets are made in the calling thread's network namespace (the lab runner calls this inside
    /// the hotspot's: `PortalService`). On an error the servers already listening are stopped.
    public func startHTTPSOnly(ip: String, port: UInt16, tls: TLSServerContext, tlsIP: String, tlsPort: UInt16, httpsURL: String,
                               log: PortalLog = .standardOutput) throws -> [LabHTTPServer] {
        let handler = self
        var servers: [LabHTTPServer] = []
        do {
            let secure = try LabHTTPServer.serving(ip: tlsIP, port: tlsPort, tls: tls, ioTimeoutSeconds: 120, log: log) { request, peer in
                await handler.handle(request, peer: peer)
            }
            servers.append(secure.server)
            log.line("https portal on \(tlsIP):\(secure.port) as \(httpsURL)")
            servers.append(try LabHTTPServer.serving(ip: ip, port: port, ioTimeoutSeconds: 120, logTag: "[portal]", log: log) { request, _ in
                if request.path == Self.readinessPath { return Self.readinessResponse }
                let host = request.host
                return .redirect(HTTPSRedirect.location(httpsURL: httpsURL, path: request.path, query: request.query,
                                                       intercepted: !handler.addressesPortal(host) && host != ip))
            }.server)
        } catch {
            servers.forEach { $0.stop() }
            throw error
        }
        return servers
    }

    /// Listens on `ip:port`, and on the same port of every address of `alsoOn` (the gateway's IPv6 address on a
    /// dual-stack hotspot), until cancelled.
    public func run(ip: String, port: UInt16, alsoOn: [String] = [], onListening: @Sendable @escaping () -> Void = {}) async throws {
        try await serveUntilCancelled(onListening: onListening) { servers in
            servers += try start(ip: ip, port: port, alsoOn: alsoOn)
        }
    }

    /// The servers `run` serves with, listening when this returns, their lines to `log`; made in the calling thread's
    /// network namespace, as `startHTTPSOnly`'s.
    public func start(ip: String, port: UInt16, alsoOn: [String] = [], log: PortalLog = .standardOutput) throws -> [LabHTTPServer] {
        let handler = self
        var servers: [LabHTTPServer] = []
        do {
            for address in [ip] + alsoOn {
                servers.append(try LabHTTPServer.serving(ip: address, port: port, ioTimeoutSeconds: 120, logTag: "[portal]", log: log) { request, peer in
                    await handler.handle(request, peer: peer)
                }.server)
            }
        } catch {
            servers.forEach { $0.stop() }
            throw error
        }
        return servers
    }
}

/// Starts the servers (`start` adds each as it listens), calls `onListening` (every one listens then), and keeps them
/// until the task is cancelled; then, or when starting one of them fails, stops those started.
func serveUntilCancelled(onListening: @Sendable @escaping () -> Void, _ start: (inout [LabHTTPServer]) throws -> Void) async throws {
    var servers: [LabHTTPServer] = []
    defer { servers.forEach { $0.stop() } }
    try start(&servers)
    onListening()
    while true { try await Task.sleep(for: .seconds(3600)) }
}

/// Where the https-only portal's plain HTTP sends a request.
public enum HTTPSRedirect {
    /// `httpsURL` (`https://portal.cafe.example/`) with the request's path and query when it was addressed to the
    /// portal; the portal's entry (`httpsURL` itself) when it was intercepted (a probe, any web site).
    public static func location(httpsURL: String, path: String, query: String, intercepted: Bool) -> String {
        if intercepted { return httpsURL }
        let base = httpsURL.hasSuffix("/") ? String(httpsURL.dropLast()) : httpsURL
        return base + (path.hasPrefix("/") ? path : "/" + path) + (query.isEmpty ? "" : "?" + query)
    }
}

/// The lab's "internet": the topology's backend routes, the connectivity probe endpoints and a plain web site, on
/// any host name (`InternetResponder`), over HTTP and, with a certificate per SNI name, HTTPS.
public enum InternetServer {
    /// Apple's exact success page.
    public static let appleSuccess = InternetResponder.appleSuccess
    public static let generalPage = InternetResponder.generalPage

    public static func respond(path: String, host: String?) -> PortalResponse {
        InternetResponder().respond(host: host, path: path).response
    }

    /// Answers one request as `responder` does, logging what it matched (an unmatched request says so), after
    /// the route's delay; a `hang` route never answers.
    /// Its line goes to the answering server's log (`PortalLog.current`, which `LabHTTPServer` binds around a handler).
    public static func answer(_ responder: InternetResponder, method: String, host: String?, path: String, scheme: String) async -> PortalResponse {
        let (response, match, route) = responder.respond(method: method, host: host, path: path)
        switch match {
        case .service(let n): logLine("[internet] \(scheme) \(method) \(host ?? "-") \(path) -> service \(n) \(response.status)")
        case .probe: logLine("[internet] \(scheme) \(method) \(host ?? "-") \(path) -> probe endpoint \(response.status)")
        case .unmatched: logLine("[internet] \(scheme) \(method) \(host ?? "-") \(path) -> unmatched (no service or probe endpoint; general page)")
        }
        if let route {
            if route.fault == .hang {
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            }
            if route.delayMilliseconds > 0 { try? await Task.sleep(for: .milliseconds(route.delayMilliseconds)) }
        }
        return response
    }

    /// Serves HTTP on `ip:port` and, with `tls` (a context choosing a certificate per SNI name), HTTPS on
    /// `ip:tlsPort`, until cancelled.
    public static func run(ip: String, port: UInt16, alsoOn: [String] = [], responder: InternetResponder = InternetResponder(),
                           tls: TLSServerContext? = nil, tlsPort: UInt16 = 443,
                           onListening: @Sendable @escaping () -> Void = {}) async throws {
        try await serveUntilCancelled(onListening: onListening) { servers in
            servers += try start(ip: ip, port: port, alsoOn: alsoOn, responder: responder, tls: tls, tlsPort: tlsPort)
        }
    }

    /// The servers `run` serves with, listening when this returns (each accepts on a thread of its own): HTTPS on
    /// `tlsPort` of every address with `tls`, then HTTP on `port`, the lines to `log`. The sockets are made in the
    /// calling thread's network namespace; the lab runner calls this inside the lab's internet namespace
    /// (`InternetService`, no process of its own). On an error the servers already listening are stopped. Stop them
    /// with `LabHTTPServer.stop()`.
    public static func start(ip: String, port: UInt16, alsoOn: [String] = [], responder: InternetResponder = InternetResponder(),
                             tls: TLSServerContext? = nil, tlsPort: UInt16 = 443, log: PortalLog = .standardOutput) throws -> [LabHTTPServer] {
        var servers: [LabHTTPServer] = []
        do {
            // HTTPS on every address HTTP is on (both families where `alsoOn` has the IPv6 one).
            if let tls {
                for address in [ip] + alsoOn {
                    let secure = try LabHTTPServer.serving(ip: address, port: tlsPort, tls: tls, logTag: "[internet]", logRequests: false, log: log) { request, _ in
                        await answer(responder, method: request.method, host: request.host, path: request.path, scheme: "https")
                    }
                    servers.append(secure.server)
                    log.line("internet HTTPS on " + (address.contains(":") ? "[\(address)]" : address) + ":\(secure.port)")
                }
            }
            for address in [ip] + alsoOn {
                servers.append(try LabHTTPServer.serving(ip: address, port: port, ioTimeoutSeconds: 60, logTag: "[internet]", logRequests: false, log: log) { request, _ in
                    if request.path == PortalServer.readinessPath { return PortalServer.readinessResponse }
                    return await answer(responder, method: request.method, host: request.host, path: request.path, scheme: "http")
                }.server)
            }
        } catch {
            servers.forEach { $0.stop() }
            throw error
        }
        return servers
    }
}
