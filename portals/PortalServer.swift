import FlyingFox
import FlyingSocks
import Foundation

/// Serves one portal kind over HTTP with FlyingFox. Requests whose Host is not the portal's own
/// address are treated as intercepted (redirected by the gate).
public struct PortalServer: Sendable {
    public let kind: any PortalKind
    public let context: any PortalContext
    public let portalHost: String

    public init(kind: any PortalKind, context: any PortalContext, portalHost: String) {
        self.kind = kind
        self.context = context
        self.portalHost = portalHost
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let host = request.headers[HTTPHeader("Host")].map { h -> String in
            if let colon = h.lastIndex(of: ":"), !h.hasSuffix("]") { return String(h[..<colon]) }
            return h
        }
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
        let portalRequest = PortalRequest(
            method: request.method.rawValue, path: request.path, host: host, query: query, form: form,
            clientIP: clientIP, intercepted: host != portalHost)
        let response = await kind.respond(to: portalRequest, context: context)
        if response.delaySeconds > 0 { try? await Task.sleep(for: .seconds(response.delaySeconds)) }
        var headers = HTTPHeaders()
        for (name, value) in response.headers { headers[HTTPHeader(name)] = value }
        return HTTPResponse(statusCode: HTTPStatusCode(response.status, phrase: phrase(response.status)),
                            headers: headers, body: Data(response.body.utf8))
    }

    /// Listens on `ip:port` (IPv4: FlyingFox's `.loopback` would bind ::1) until cancelled.
    public func run(ip: String, port: UInt16, onListening: @Sendable @escaping () -> Void = {}) async throws {
        let server = HTTPServer(address: try .inet(ip4: ip, port: port), timeout: 120, logger: LineLogger(category: "portal"))
        let handler = self
        await server.appendRoute("*") { request in await handler.handle(request) }
        try await runUntilCancelled(server, onListening: onListening)
    }
}

func runUntilCancelled(_ server: HTTPServer, onListening: @Sendable @escaping () -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.run() }
        group.addTask {
            try await server.waitUntilListening(timeout: 10)
            onListening()
        }
        try await group.next()
        try await group.next()
    }
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
    default: return "Status"
    }
}

/// The lab's "internet": connectivity probe endpoints and a plain web site, on any host name.
public enum InternetServer {
    /// Apple's exact success page.
    public static let appleSuccess = "<HTML><HEAD><TITLE>Success</TITLE></HEAD><BODY>Success</BODY></HTML>"
    public static let generalPage = "<!DOCTYPE html>\n<html><head><title>HotspotLab internet</title></head><body>You reached the lab internet.</body></html>\n"

    public static func respond(path: String, host: String?) -> PortalResponse {
        switch path {
        case "/hotspot-detect.html", "/library/test/success.html":
            return PortalResponse(status: 200, headers: ["Content-Type": "text/html", "Cache-Control": "no-store"], body: appleSuccess)
        case "/generate_204", "/gen_204":
            return PortalResponse(status: 204, headers: ["Cache-Control": "no-store"])
        case "/canonical.html":
            return PortalResponse(status: 200, headers: ["Content-Type": "text/html"],
                                  body: "<meta http-equiv=\"refresh\" content=\"0;url=https://support.mozilla.org/kb/captive-portal\"/>")
        case "/connecttest.txt":
            return PortalResponse(status: 200, headers: ["Content-Type": "text/plain"], body: "Microsoft Connect Test")
        default:
            return PortalResponse(status: 200, headers: ["Content-Type": "text/html"], body: generalPage)
        }
    }

    public static func run(ip: String, port: UInt16, onListening: @Sendable @escaping () -> Void = {}) async throws {
        let server = HTTPServer(address: try .inet(ip4: ip, port: port), timeout: 60, logger: LineLogger(category: "internet"))
        await server.appendRoute("*") { request in
            let response = respond(path: request.path, host: request.headers[HTTPHeader("Host")])
            var headers = HTTPHeaders()
            for (name, value) in response.headers { headers[HTTPHeader(name)] = value }
            return HTTPResponse(statusCode: HTTPStatusCode(response.status, phrase: phrase(response.status)),
                                headers: headers, body: Data(response.body.utf8))
        }
        try await runUntilCancelled(server, onListening: onListening)
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

/// One line to stdout, unbuffered, with a UTC timestamp.
public func logLine(_ text: String) {
    let stamp = ISO8601DateFormatter().string(from: Date())
    FileHandle.standardOutput.write(Data("\(stamp) \(text)\n".utf8))
}
