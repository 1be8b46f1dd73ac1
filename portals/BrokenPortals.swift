/// Broken portals: each answers every request the same broken way, and nobody can log in.

/// Answers only after `delay-seconds` (default 60, beyond the 45 s command deadline).
public struct BrokenSlowPortal: PortalKind {
    public static let name = "broken-slow"
    let delay: Int
    public init(settings: [String: String]) throws {
        guard let delay = Int(settings["delay-seconds"] ?? "60"), delay >= 0 else {
            throw PortalSettingError(kind: Self.name, setting: "delay-seconds", message: "expected a whole number of seconds")
        }
        self.delay = delay
    }
    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        var response = PortalResponse.redirect(context.portalURL)
        if !request.intercepted { response = .html(200, "Sign in", "<p>Eventually.</p>") }
        response.delaySeconds = delay
        return response
    }
}

/// HTTP 500 for everything.
public struct Broken500Portal: PortalKind {
    public static let name = "broken-500"
    public init(settings: [String: String]) throws {}
    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        .html(500, "Internal Server Error", "<p>The portal crashed.</p>")
    }
}

/// RFC 6585's way: intercepted requests (the probes, every web page) answer 511 Network Authentication Required
/// with the sign-in form in the body, instead of redirecting; the portal itself is a form login (username,
/// password). Clients and helpers that only look for a redirect miss it.
public struct Status511Portal: PortalKind {
    public static let name = "status-511"
    let form: FormLoginPortal
    public init(settings: [String: String]) throws { form = try FormLoginPortal(settings: settings) }
    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        if request.intercepted {
            let page = "<p>You must sign in to use this network.</p>"
                + "<form method=\"post\" action=\"\(context.portalURL)login\">"
                + "<input name=\"username\" placeholder=\"Username\"> <input name=\"password\" type=\"password\" placeholder=\"Password\">"
                + "<button type=\"submit\">Sign in</button></form>"
            return .html(511, "Network Authentication Required", page)
        }
        return await form.respond(to: request, context: context)
    }
}

/// Redirects forever: /loop/a -> /loop/b -> /loop/a ...
public struct BrokenRedirectLoopPortal: PortalKind {
    public static let name = "broken-redirect-loop"
    public init(settings: [String: String]) throws {}
    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        let base = context.portalURL.hasSuffix("/") ? String(context.portalURL.dropLast()) : context.portalURL
        return .redirect(base + (request.path == "/loop/a" ? "/loop/b" : "/loop/a"))
    }
}

/// 200 with an empty body (what Android treats as a broken proxy).
public struct BrokenEmptyPortal: PortalKind {
    public static let name = "broken-empty"
    public init(settings: [String: String]) throws {}
    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        PortalResponse(status: 200, headers: ["Content-Type": "text/html"], body: "")
    }
}
