/// WISPr 1.0: the redirect page carries `<WISPAccessGatewayParam>` XML in an HTML comment; the client
/// posts UserName/Password to LoginURL and gets an AuthenticationReply (120) with ResponseCode 50 or 100;
/// LogoffURL answers a LogoffReply (130) with ResponseCode 150.
public struct WISPrPortal: PortalKind {
    public static let definition = PortalKindDefinition(
        name: "wispr", login: true,
        settings: [
            .required("username", .nonEmptyText, "the WISPr account's user name"),
            .required("password", .nonEmptyText, "the WISPr account's password"),
        ],
        summary: "WISPr 1.0 smart-client login")
    let username: String
    let password: String

    public init(settings: [String: String]) throws {
        let values = try Self.definition.validate(settings)
        username = try values.required("username")
        password = try values.required("password")
    }

    static func page(_ xml: String, title: String) -> PortalResponse {
        PortalResponse(status: 200, headers: ["Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"], body: """
            <!DOCTYPE html>
            <html><head><title>\(title)</title></head><body>
            <!--<?xml version="1.0" encoding="UTF-8"?>
            <WISPAccessGatewayParam xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://www.acmewisp.com/WISPAccessGatewayParam.xsd">
            \(xml)
            </WISPAccessGatewayParam>-->
            <h1>\(title)</h1>
            </body></html>

            """)
    }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        let base = context.portalURL.hasSuffix("/") ? String(context.portalURL.dropLast()) : context.portalURL
        let redirectXML = """
            <Redirect>
            <AccessProcedure>1.0</AccessProcedure>
            <AccessLocation>RunningTopology</AccessLocation>
            <LocationName>RunningTopology WISPr</LocationName>
            <LoginURL>\(base)/wispr/login</LoginURL>
            <AbortLoginURL>\(base)/wispr/abort</AbortLoginURL>
            <MessageType>100</MessageType>
            <ResponseCode>0</ResponseCode>
            </Redirect>
            """
        if request.intercepted {
            var response = Self.page(redirectXML, title: "Sign in")
            response.status = 302
            response.headers["Location"] = context.portalURL
            return response
        }
        switch request.path {
        case "/wispr/login" where request.method == "POST":
            guard request.field("UserName") == username, request.field("Password") == password else {
                return Self.page("""
                    <AuthenticationReply>
                    <MessageType>120</MessageType>
                    <ResponseCode>100</ResponseCode>
                    <ReplyMessage>Invalid username or password</ReplyMessage>
                    </AuthenticationReply>
                    """, title: "Sign-in refused")
            }
            do { try await context.login(clientIP: request.clientIP) } catch {
                return Self.page("""
                    <AuthenticationReply>
                    <MessageType>120</MessageType>
                    <ResponseCode>255</ResponseCode>
                    </AuthenticationReply>
                    """, title: "Gateway error")
            }
            return Self.page("""
                <AuthenticationReply>
                <MessageType>120</MessageType>
                <ResponseCode>50</ResponseCode>
                <LogoffURL>\(base)/wispr/logoff</LogoffURL>
                </AuthenticationReply>
                """, title: "You are online")
        case "/wispr/logoff", "/logoff":
            do { try await context.logoff(clientIP: request.clientIP) } catch {
                return Self.page("<LogoffReply>\n<MessageType>130</MessageType>\n<ResponseCode>255</ResponseCode>\n</LogoffReply>", title: "Gateway error")
            }
            return Self.page("<LogoffReply>\n<MessageType>130</MessageType>\n<ResponseCode>150</ResponseCode>\n</LogoffReply>", title: "Signed out")
        default:
            return Self.page(redirectXML, title: "Sign in")
        }
    }
}
