/// RFC 6585's way: intercepted requests (the probes, every web page) answer 511 Network Authentication Required
/// with the sign-in form in the body, instead of redirecting; the portal itself is a form login (username,
/// password: form-login's settings). Clients and helpers that only look for a redirect miss it.
public struct Status511Portal: PortalKind {
    public static let definition = PortalKindDefinition(
        name: "status-511", login: true, settings: FormLoginPortal.definition.settings,
        summary: "511 Network Authentication Required with the sign-in form, then a form login")
    let form: FormLoginPortal

    public init(settings: [String: String]) throws {
        _ = try Self.definition.validate(settings)
        form = try FormLoginPortal(settings: settings)
    }

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
