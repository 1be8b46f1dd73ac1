/// Accept the terms, get online.
public struct ClickThroughPortal: PortalKind {
    public static let definition = PortalKindDefinition(
        name: "click-through", login: true,
        settings: [.optional("terms", .text, default: "Be nice. No warranty.", "the terms shown above the checkbox")],
        summary: "accept the terms, get online")
    let terms: String

    public init(settings: [String: String]) throws {
        terms = try Self.definition.validate(settings).required("terms")
    }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        if request.intercepted { return .redirect(context.portalURL) }
        if let response = await handleLogoff(request, context: context) { return response }
        switch (request.method, request.path) {
        case ("POST", "/accept"):
            guard request.field("accept") == "yes" else {
                return .html(400, "Terms not accepted", "<p>Tick the box to accept the terms.</p>")
            }
            do { try await context.login(clientIP: request.clientIP) } catch { return loginFailed(error) }
            return .html(200, "You are online", "<p>Enjoy. <a href=\"/logoff\">Sign out</a></p>")
        default:
            return .html(200, "Welcome", """
                <p>\(Markup.escape(terms))</p>
                <form method="post" action="/accept">
                <label><input type="checkbox" name="accept" value="yes"> I accept the terms</label>
                <button type="submit">Connect</button></form>
                """)
        }
    }
}
