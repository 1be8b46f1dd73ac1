/// Broken: 200 with an empty body (what Android treats as a broken proxy); nobody can sign in.
public struct BrokenEmptyPortal: PortalKind {
    public static let definition = PortalKindDefinition(name: "broken-empty", login: false, summary: "200 with an empty body")

    public init(settings: [String: String]) throws { _ = try Self.definition.validate(settings) }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        PortalResponse(status: 200, headers: ["Content-Type": "text/html"], body: "")
    }
}
