/// Sign in with an e-mail address only (the café that wants your address for its newsletter): the page asks for
/// one, the portal checks its shape (`someone@example.com`) and, with `domain`, that it is at that domain.
public struct EmailPortal: PortalKind {
    public static let definition = PortalKindDefinition(
        name: "email", login: true,
        settings: [.optional("domain", .domain, "only addresses at this domain are let in (e.g. staff.example)")],
        summary: "an e-mail address, checked for shape, is the sign-in")
    let domain: String?

    public init(settings: [String: String]) throws {
        domain = try Self.definition.validate(settings).text("domain")?.lowercased()
    }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        if request.intercepted { return .redirect(context.portalURL) }
        if let response = await handleLogoff(request, context: context) { return response }
        switch (request.method, request.path) {
        case ("POST", "/email"):
            let address = (request.field("email") ?? "").trimmingCharacters(in: .whitespaces)
            guard EmailAddress.isValid(address) else {
                return .html(400, "Not an e-mail address", "<p>Type an address such as someone@example.com.</p><p><a href=\"/\">Try again</a></p>")
            }
            if let domain, address.split(separator: "@").last?.lowercased() != domain {
                return .html(403, "Address refused", "<p>Only addresses at \(Markup.escape(domain)) may sign in here.</p><p><a href=\"/\">Try again</a></p>")
            }
            do { try await context.login(clientIP: request.clientIP) } catch { return loginFailed(error) }
            return .html(200, "You are online", "<p>Signed in as \(Markup.escape(address)). <a href=\"/logoff\">Sign out</a></p>")
        default:
            return .html(200, "Sign in with your e-mail", """
                <form method="post" action="/email">
                <input name="email" type="email" placeholder="you@example.com"> <button type="submit">Connect</button></form>
                """)
        }
    }
}

/// The shape of an e-mail address (what the `email` portal accepts): `local@domain.tld`, no spaces.
public enum EmailAddress {
    /// True for `someone@example.com`: one `@`, a local part of 1...64 printable ASCII characters without spaces
    /// or `<>()[],;:"\` (and no leading, trailing or double dot), and a domain name; at most 254 characters.
    public static func isValid(_ text: String) -> Bool {
        guard text.utf8.count <= 254 else { return false }
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...64).contains(parts[0].utf8.count) else { return false }
        let forbidden = Set("<>()[],;:\"\\ ".unicodeScalars)
        guard parts[0].unicodeScalars.allSatisfy({ $0.value > 32 && $0.value < 127 && !forbidden.contains($0) }),
              !parts[0].hasPrefix("."), !parts[0].hasSuffix("."), !parts[0].contains("..") else { return false }
        return DomainName.isValid(String(parts[1]))
    }
}
