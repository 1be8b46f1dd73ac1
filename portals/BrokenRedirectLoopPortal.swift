/// Broken: redirects forever, /loop/a -> /loop/b -> /loop/a ...; nobody can sign in.
public struct BrokenRedirectLoopPortal: PortalKind {
    public static let definition = PortalKindDefinition(name: "broken-redirect-loop", login: false, summary: "redirects forever")

    public init(settings: [String: String]) throws { _ = try Self.definition.validate(settings) }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        let base = context.portalURL.hasSuffix("/") ? String(context.portalURL.dropLast()) : context.portalURL
        return .redirect(base + (request.path == "/loop/a" ? "/loop/b" : "/loop/a"))
    }
}
