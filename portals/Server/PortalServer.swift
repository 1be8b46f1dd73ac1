// The portal server: serves one portal kind (PortalKinds, HTTP-free) over HTTP with FlyingFox, or over TLS.
@_exported import PortalKinds
import FlyingFox
import FlyingSocks
import Foundation

/// Serves one portal kind over HTTP with FlyingFox. Requests whose Host is not the portal's own
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
    static var readinessResponse: HTTPResponse { HTTPResponse(statusCode: .noContent) }

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

    /// A request read off a TLS connection (`TLSHTTPServer`), from the TCP peer `peer`.
    public func handle(_ request: RawHTTPRequest, peer: String) async -> PortalResponse {
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
        let listener = try TLSHTTPServer.listen(ip: tlsIP, port: tlsPort)
        let handler = self
        TLSHTTPServer(context: tls) { request, peer in await handler.handle(request, peer: peer) }.start(listener: listener.fd)
        logLine("https portal on \(tlsIP):\(listener.port) as \(httpsURL)")
        let server = HTTPServer(address: try .inet(ip4: ip, port: port), timeout: 120, logger: LineLogger(category: "portal"))
        await server.appendRoute("*") { request in
            if request.path == Self.readinessPath { return Self.readinessResponse }
            let host = Self.host(of: request)
            let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
            let encode = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text }
            let query = request.query.map { encode($0.name) + "=" + encode($0.value) }.joined(separator: "&")
            let location = HTTPSRedirect.location(httpsURL: httpsURL, path: request.path, query: query,
                                                  intercepted: !handler.addressesPortal(host) && host != ip)
            return httpResponse(.redirect(location))
        }
        try await runUntilCancelled(server, onListening: onListening)
    }

    /// The request's Host header without its port.
    static func host(of request: HTTPRequest) -> String? {
        request.headers[HTTPHeader("Host")].map { h -> String in
            if let colon = h.lastIndex(of: ":"), !h.hasSuffix("]") { return String(h[..<colon]) }
            return h
        }
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        if request.path == Self.readinessPath { return Self.readinessResponse }
        let host = Self.host(of: request)
        var clientIP = ""
        switch request.remoteAddress {
        case .ip4(let ip, _): clientIP = ip
        case .ip6(let ip, _): clientIP = ip.hasPrefix("::ffff:") ? String(ip.dropFirst(7)) : ip
        default: break
        }
        var query: [String: String] = [:]
        for item in request.query { query[item.name] = item.value }
        var form: [String: String] = [:]
        if request.method == .POST, let body = try? await request.bodyData {
            form = parseForm(String(decoding: body, as: UTF8.self))
        }
        var portalRequest = PortalRequest(
            method: request.method.rawValue, path: request.path, host: host, query: query, form: form,
            clientIP: clientIP, intercepted: !addressesPortal(host))
        portalRequest.cookies = parseCookies(request.headers[HTTPHeader("Cookie")])
        return httpResponse(await answer(portalRequest))
    }

    /// Listens on `ip:port` (IPv4: FlyingFox's `.loopback` would bind ::1), and on the same port of every
    /// address of `alsoOn` (the gateway's IPv6 address on a dual-stack hotspot), until cancelled.
    public func run(ip: String, port: UInt16, alsoOn: [String] = [], onListening: @Sendable @escaping () -> Void = {}) async throws {
        var servers: [HTTPServer] = []
        let handler = self
        for address in [ip] + alsoOn {
            let server = HTTPServer(address: try listenAddress(address, port), timeout: 120, logger: LineLogger(category: "portal"))
            await server.appendRoute("*") { request in await handler.handle(request) }
            servers.append(server)
        }
        try await runUntilCancelled(servers, onListening: onListening)
    }
}

/// A socket address for `ip` (IPv4 `198.51.100.1` or IPv6 `2001:db8:1::1`, brackets allowed) and `port`.
func listenAddress(_ ip: String, _ port: UInt16) throws -> any SocketAddress {
    if ip.contains(":") {
        return try sockaddr_in6.inet6(ip6: ip.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port)
    }
    return try sockaddr_in.inet(ip4: ip, port: port)
}

func runUntilCancelled(_ server: HTTPServer, onListening: @Sendable @escaping () -> Void) async throws {
    try await runUntilCancelled([server], onListening: onListening)
}

/// Runs every server until cancelled; `onListening` once all of them listen.
func runUntilCancelled(_ servers: [HTTPServer], onListening: @Sendable @escaping () -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for server in servers { group.addTask { try await server.run() } }
        group.addTask {
            for server in servers { try await server.waitUntilListening(timeout: 10) }
            onListening()
        }
        for _ in 0...servers.count { try await group.next() }
    }
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

/// A portal (or the internet's) answer as FlyingFox sends it.
func httpResponse(_ response: PortalResponse) -> HTTPResponse {
    var headers = HTTPHeaders()
    for (name, value) in response.headers { headers[HTTPHeader(name)] = value }
    return HTTPResponse(statusCode: HTTPStatusCode(response.status, phrase: phrase(response.status)),
                        headers: headers, body: Data(response.body.utf8))
}

func phrase(_ status: Int) -> String {
    switch status {
    case 200: return "OK"
    case 204: return "No Content"
    case 302: return "Found"
    case 400: return "Bad Request"
    case 401: return "Unauthorized"
    case 403: return "Forbidden"
    case 404: return "Not Found"
    case 500: return "Internal Server Error"
    case 511: return "Network Authentication Required"
    default: return "Status"
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
        // HTTPS on every address HTTP is on (both families where `alsoOn` has the IPv6 one).
        var tlsServers: [TLSHTTPServer] = []
        defer { tlsServers.forEach { $0.stop() } }
        if let tls {
            for address in [ip] + alsoOn {
                let listener = try TLSHTTPServer.listen(ip: address, port: tlsPort)
                let server = TLSHTTPServer(context: tls) { request, _ in
                    await answer(responder, method: request.method, host: request.host, path: request.path, scheme: "https")
                }
                server.start(listener: listener.fd)
                tlsServers.append(server)
                logLine("internet HTTPS on " + (address.contains(":") ? "[\(address)]" : address) + ":\(listener.port)")
            }
        }
        var servers: [HTTPServer] = []
        for address in [ip] + alsoOn {
            let server = HTTPServer(address: try listenAddress(address, port), timeout: 60, logger: LineLogger(category: "internet"))
            await server.appendRoute("*") { request in
                if request.path == PortalServer.readinessPath { return PortalServer.readinessResponse }
                return httpResponse(await answer(responder, method: request.method.rawValue, host: PortalServer.host(of: request),
                                          path: request.path, scheme: "http"))
            }
            servers.append(server)
        }
        try await runUntilCancelled(servers, onListening: onListening)
    }
}

/// Writes one unbuffered line per message to stdout (the lab's per-daemon log file).
public struct LineLogger: Logging {
    let category: String
    public init(category: String) { self.category = category }
    func write(_ level: String, _ text: String) { logLine("[\(category)] \(level): \(text)") }
    public func logDebug(_ debug: @autoclosure () -> String) {}
    public func logInfo(_ info: @autoclosure () -> String) { write("info", info()) }
    public func logWarning(_ warning: @autoclosure () -> String) { write("warning", warning()) }
    public func logError(_ error: @autoclosure () -> String) { write("error", error()) }
    public func logCritical(_ critical: @autoclosure () -> String) { write("critical", critical()) }
}
