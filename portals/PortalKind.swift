import Foundation

/// A request as a portal kind sees it (decoupled from the HTTP server so kinds are unit-testable).
public struct PortalRequest: Sendable {
    public var method: String
    public var path: String
    /// The Host header without the port (nil when absent).
    public var host: String?
    public var query: [String: String]
    /// URL-encoded form fields of a POST body.
    public var form: [String: String]
    /// The client's IPv4 address (the TCP peer).
    public var clientIP: String
    /// True when the request was not addressed to the portal (a redirected probe or general HTTP).
    public var intercepted: Bool
    /// The Cookie header's cookies (the recorded kind checks its own come back).
    public var cookies: [String: String] = [:]

    public init(method: String, path: String, host: String? = nil, query: [String: String] = [:],
                form: [String: String] = [:], clientIP: String, intercepted: Bool) {
        self.method = method
        self.path = path
        self.host = host
        self.query = query
        self.form = form
        self.clientIP = clientIP
        self.intercepted = intercepted
    }

    /// A form field from the body, else the query.
    public func field(_ name: String) -> String? { form[name] ?? query[name] }
}

public struct PortalResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [String: String]
    public var body: String
    /// Wait this long before answering (the broken-slow kind).
    public var delaySeconds: Int

    public init(status: Int, headers: [String: String] = [:], body: String = "", delaySeconds: Int = 0) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delaySeconds = delaySeconds
    }

    public static func html(_ status: Int, _ title: String, _ content: String) -> PortalResponse {
        PortalResponse(status: status, headers: ["Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"],
                       body: "<!DOCTYPE html>\n<html><head><title>\(title)</title></head><body><h1>\(title)</h1>\n\(content)\n</body></html>\n")
    }

    public static func redirect(_ location: String, body: String? = nil) -> PortalResponse {
        PortalResponse(status: 302, headers: ["Location": location, "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"],
                       body: body ?? "<html><body><a href=\"\(location)\">Sign in to the network</a></body></html>\n")
    }
}

/// What a kind may do besides answering: log a client in or out.
public protocol PortalContext: Sendable {
    /// The portal's own base URL, e.g. `http://198.51.100.1:8080/`.
    var portalURL: String { get }
    var sessionSeconds: Int { get }
    /// Lets the client through the gate for the session length. Throws when the gate refuses.
    func login(clientIP: String) async throws
    /// Removes the client from the gate.
    func logoff(clientIP: String) async throws
    /// Seconds left in the client's session; nil when not logged in.
    func secondsRemaining(clientIP: String) async -> Int?
    /// The client's MAC address (the recorded kind puts it where the venue's portal did); nil when unknown.
    func clientMAC(clientIP: String) async -> String?
}

extension PortalContext {
    public func clientMAC(clientIP: String) async -> String? { nil }
}

/// One kind of captive portal. Each kind lives in its own file in `portals/`: its definition (name, settings)
/// and its request handling; adding a kind is that file plus one line in `PortalRegistry.kinds`.
public protocol PortalKind: Sendable {
    /// The kind as data: name, login or not, settings (docs/TOPOLOGY.md).
    static var definition: PortalKindDefinition { get }
    /// `settings` are the topology's kind-specific strings (username, password, voucher, ...). Kinds validate them
    /// with `Self.definition.validate(settings)` first.
    init(settings: [String: String]) throws
    /// Answers one request (intercepted or addressed to the portal).
    func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse
}

extension PortalKind {
    /// The name used in topologies and on the command line (`form-login`).
    public static var name: String { definition.name }

    /// The shared logoff endpoint (`/logoff`) every login kind offers.
    func handleLogoff(_ request: PortalRequest, context: any PortalContext) async -> PortalResponse? {
        guard request.path == "/logoff" else { return nil }
        do {
            try await context.logoff(clientIP: request.clientIP)
            return .html(200, "Signed out", "<p>You are signed out.</p><p><a href=\"\(context.portalURL)\">Sign in again</a></p>")
        } catch {
            return .html(500, "Sign-out failed", "<p>\(Markup.escape("\(error)"))</p>")
        }
    }

    func loginFailed(_ error: any Error) -> PortalResponse {
        .html(500, "Gateway error", "<p>\(Markup.escape("\(error)"))</p>")
    }
}

/// Every portal kind, by name: the one list (the lab's topology parser and scenario steps read it too).
public enum PortalRegistry {
    public static let kinds: [any PortalKind.Type] = [
        ClickThroughPortal.self,
        FormLoginPortal.self,
        VoucherPortal.self,
        WISPrPortal.self,
        CaptiveAPIPortal.self,
        BrokenSlowPortal.self,
        Broken500Portal.self,
        BrokenRedirectLoopPortal.self,
        BrokenEmptyPortal.self,
        Status511Portal.self,
        EmailPortal.self,
        RecordedPortal.self,
    ]

    public static var definitions: [PortalKindDefinition] { kinds.map { $0.definition } }
    public static var names: [String] { kinds.map { $0.name } }
    /// Kinds a person (or helper) can sign in to.
    public static var loginNames: [String] { kinds.filter { $0.definition.login }.map { $0.name } }

    public static func definition(_ name: String) -> PortalKindDefinition? {
        kinds.first { $0.name == name }?.definition
    }

    /// The kind `name` with `settings` checked against its definition (settings of other kinds are ignored).
    public static func make(_ name: String, settings: [String: String]) throws -> any PortalKind {
        guard let type = kinds.first(where: { $0.name == name }) else {
            throw PortalSettingError(kind: name, setting: "kind", message: "unknown; expected one of \(names.joined(separator: ", "))")
        }
        _ = try type.definition.validate(settings)
        return try type.init(settings: settings)
    }
}

/// Text made safe inside HTML or XML, in element content and in quoted attributes (`&`, `<`, `>`, `"`, `'`): the
/// package's one escaper, for the portals' pages, the lab's HTML reports and its JUnit XML. It lives here, in the
/// lowest layer that needs it (PortalKinds depends on nothing; LabKit and the CLI sit above it).
public enum Markup {
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }
}

/// Parses a Cookie header (`a=1; b=2`).
public func parseCookies(_ header: String?) -> [String: String] {
    var result: [String: String] = [:]
    for pair in (header ?? "").split(separator: ";") {
        let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard let name = parts.first?.trimmingCharacters(in: .whitespaces), !name.isEmpty else { continue }
        result[name] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
    }
    return result
}

/// Parses `a=1&b=two+words` (application/x-www-form-urlencoded).
public func parseForm(_ text: String) -> [String: String] {
    var result: [String: String] = [:]
    for pair in text.split(separator: "&") {
        let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let decode = { (s: Substring) in String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(s) }
        guard let key = parts.first else { continue }
        result[decode(key)] = parts.count > 1 ? decode(parts[1]) : ""
    }
    return result
}
