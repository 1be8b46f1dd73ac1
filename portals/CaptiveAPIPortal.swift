import Foundation

/// RFC 8908: the API at `/captive-api` (announced through DHCP option 114) answers
/// `application/captive+json`; the user portal is a click-through page. With `can-extend-session`,
/// `POST /extend` restarts a logged-in client's session.
public struct CaptiveAPIPortal: PortalKind {
    public static let definition = PortalKindDefinition(
        name: "captive-api", login: true,
        settings: [
            .optional("can-extend-session", .flag, default: "false", "a logged-in client may restart its session (POST /extend)"),
            .optional("venue-info-url", .nonEmptyText, "the API's venue-info-url"),
        ],
        summary: "RFC 8908 API plus a click-through user portal")
    let canExtend: Bool
    let venueInfoURL: String?

    public init(settings: [String: String]) throws {
        let values = try Self.definition.validate(settings)
        canExtend = values.flag("can-extend-session")
        venueInfoURL = values.text("venue-info-url")
    }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        if request.intercepted { return .redirect(context.portalURL) }
        if let response = await handleLogoff(request, context: context) { return response }
        switch (request.method, request.path) {
        case ("GET", "/captive-api"):
            let remaining = await context.secondsRemaining(clientIP: request.clientIP)
            var object: [String: Any] = ["captive": remaining == nil, "user-portal-url": context.portalURL]
            if let remaining {
                object["seconds-remaining"] = remaining
                object["can-extend-session"] = canExtend
            }
            if let venueInfoURL { object["venue-info-url"] = venueInfoURL }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
            return PortalResponse(status: 200, headers: ["Content-Type": "application/captive+json", "Cache-Control": "private"],
                                  body: String(decoding: data, as: UTF8.self))
        case ("POST", "/extend"):
            // can-extend-session: a logged-in client may restart its session.
            guard canExtend, await context.secondsRemaining(clientIP: request.clientIP) != nil else {
                return .html(403, "Cannot extend", "<p>This session cannot be extended.</p>")
            }
            do { try await context.login(clientIP: request.clientIP) } catch { return loginFailed(error) }
            return .html(200, "Session extended", "<p>Your session was extended.</p>")
        case ("POST", "/accept"):
            do { try await context.login(clientIP: request.clientIP) } catch { return loginFailed(error) }
            return .html(200, "You are online", "<p><a href=\"/logoff\">Sign out</a></p>")
        default:
            return .html(200, "Welcome", """
                <form method="post" action="/accept"><button type="submit">Connect</button></form>
                """)
        }
    }
}
