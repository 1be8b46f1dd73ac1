/// Broken: answers every request only after `delay-seconds` (default 60, beyond the 45 s command deadline);
/// nobody can sign in.
public struct BrokenSlowPortal: PortalKind {
    public static let definition = PortalKindDefinition(
        name: "broken-slow", login: false,
        settings: [.optional("delay-seconds", .integer(0...86_400), default: "60", "seconds before every answer")],
        summary: "answers every request after a delay")
    let delay: Int

    public init(settings: [String: String]) throws {
        delay = try Self.definition.validate(settings).integer("delay-seconds") ?? 60
    }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        var response = PortalResponse.redirect(context.portalURL)
        if !request.intercepted { response = .html(200, "Sign in", "<p>Eventually.</p>") }
        response.delaySeconds = delay
        return response
    }
}
