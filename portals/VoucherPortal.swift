/// A voucher code the user must type (the helper answers uiRequired).
public struct VoucherPortal: PortalKind {
    public static let definition = PortalKindDefinition(
        name: "voucher", login: true,
        settings: [.required("voucher", .nonEmptyText, "the code to type (compared without case)")],
        summary: "a voucher code the user must type")
    let voucher: String

    public init(settings: [String: String]) throws {
        voucher = try Self.definition.validate(settings).required("voucher")
    }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        if request.intercepted { return .redirect(context.portalURL) }
        if let response = await handleLogoff(request, context: context) { return response }
        switch (request.method, request.path) {
        case ("POST", "/voucher"):
            let code = (request.field("code") ?? "").trimmingCharacters(in: .whitespaces).uppercased()
            guard code == voucher.uppercased() else {
                return .html(403, "Voucher refused", "<p>That voucher code is not valid.</p><p><a href=\"/\">Try again</a></p>")
            }
            do { try await context.login(clientIP: request.clientIP) } catch { return loginFailed(error) }
            return .html(200, "You are online", "<p>Voucher accepted. <a href=\"/logoff\">Sign out</a></p>")
        default:
            return .html(200, "Enter your voucher", """
                <form method="post" action="/voucher">
                <input name="code" placeholder="Voucher code"> <button type="submit">Connect</button></form>
                """)
        }
    }
}
