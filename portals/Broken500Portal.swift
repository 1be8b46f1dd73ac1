/// Broken: HTTP 500 for everything; nobody can sign in.
public struct Broken500Portal: PortalKind {
    public static let definition = PortalKindDefinition(name: "broken-500", login: false, summary: "HTTP 500 for everything")

    public init(settings: [String: String]) throws { _ = try Self.definition.validate(settings) }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        .html(500, "Internal Server Error", "<p>The portal crashed.</p>")
    }
}
