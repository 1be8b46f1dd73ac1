/// Username and password form.
public struct FormLoginPortal: PortalKind {
    public static let definition = PortalKindDefinition(
        name: "form-login", login: true,
        settings: [
            .required("username", .nonEmptyText, "the account's user name"),
            .required("password", .nonEmptyText, "the account's password"),
            .optional("login-status", .integer(400...599), "a fault: every sign-in answers this HTTP error status"),
            .optional("login-delay-seconds", .number(0...3600), "a fault: every sign-in answers only after this many seconds"),
        ],
        summary: "username and password form")
    let username: String
    let password: String
    /// A fault: every sign-in answers this HTTP status (the portal's back end is down); nil: normal.
    let loginStatus: Int?
    /// A fault: every sign-in answers only after this many seconds (a back end slower than the deadline).
    let loginDelay: Double

    public init(settings: [String: String]) throws {
        let values = try Self.definition.validate(settings)
        username = try values.required("username")
        password = try values.required("password")
        loginStatus = values.integer("login-status")
        loginDelay = values.number("login-delay-seconds") ?? 0
    }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        if request.intercepted { return .redirect(context.portalURL) }
        if let response = await handleLogoff(request, context: context) { return response }
        switch (request.method, request.path) {
        case ("POST", "/login"):
            if loginDelay > 0 { try? await Task.sleep(for: .milliseconds(Int64(loginDelay * 1000))) }
            if let loginStatus {
                return .html(loginStatus, "Service unavailable", "<p>Sign-in is not available right now. Please try again later.</p>")
            }
            guard request.field("username") == username, request.field("password") == password else {
                return .html(401, "Sign-in refused", "<p>Wrong username or password.</p><p><a href=\"/\">Try again</a></p>")
            }
            do { try await context.login(clientIP: request.clientIP) } catch { return loginFailed(error) }
            return .html(200, "You are online", "<p>Welcome, \(Markup.escape(username)). <a href=\"/logoff\">Sign out</a></p>")
        default:
            return .html(200, "Sign in", """
                <form method="post" action="/login">
                <input name="username" placeholder="Username"> <input name="password" type="password" placeholder="Password">
                <button type="submit">Sign in</button></form>
                """)
        }
    }
}
