import Foundation
import Synchronization

/// The lab settings `session-cookie: "true"` and `csrf-token: "true"` (any login kind whose sign-in page the portal
/// serves, docs/TOPOLOGY.md "Session cookies"): the portal sets a session cookie on its pages and refuses every
/// POST (the sign-in) that does not bring it back; with `csrf-token`, the page's forms also carry a hidden token
/// the POST must return. With `https-only` the cookie is `Secure; HttpOnly`. As most venue portals do: a helper
/// whose HTTP keeps no cookies is refused.
public enum SessionCookie {
    /// The setting that turns it on.
    public static let setting = "session-cookie"
    /// The setting that adds the CSRF token (needs `session-cookie`).
    public static let csrfSetting = "csrf-token"
    public static let settings = [setting, csrfSetting]
    /// The cookie's name.
    public static let cookieName = "hotspotlab_session"
    /// The hidden form field that carries the CSRF token.
    public static let csrfField = "csrf_token"

    /// Kinds that cannot require a cookie, and why: their sign-in does not start from a page the portal serves.
    public static let refusedKinds: [String: String] = [
        "status-511": "its sign-in form is the intercepted answer itself, served under the probe's host name, where the portal cannot set its cookie",
        "recorded": "it replays the venue's own cookies from the capture",
    ]

    /// True when the settings ask for the cookie.
    public static func isOn(_ settings: [String: String]) -> Bool { settings[setting] == "true" }

    /// The first problem of the settings for `kind` (which setting, what is wrong), nil when they can be used:
    /// values `true`/`false`, a login kind, `csrf-token` only with `session-cookie` and on a kind with a form.
    public static func problem(_ settings: [String: String], kind: PortalKindDefinition) -> (setting: String, message: String)? {
        for name in Self.settings {
            if let value = settings[name], value != "true", value != "false" {
                return (name, "expected \"true\" or \"false\", found `\(value)`")
            }
        }
        let csrf = settings[csrfSetting] == "true"
        if isOn(settings) || csrf {
            let name = isOn(settings) ? setting : csrfSetting
            guard kind.login else {
                return (name, "the \(kind.name) portal has no sign-in; expected a login kind (\(loginKinds.joined(separator: ", ")))")
            }
            if let why = refusedKinds[kind.name] {
                return (name, "not for the \(kind.name) portal: \(why); expected one of \(loginKinds.joined(separator: ", "))")
            }
        }
        if csrf {
            guard isOn(settings) else {
                return (csrfSetting, "the CSRF token is tied to the session cookie; expected `session-cookie: \"true\"` with it")
            }
            if kind.name == "wispr" {
                return (csrfSetting, "the wispr portal's sign-in is WISPr XML, with no HTML form to carry a token; expected a kind with a form")
            }
        }
        return nil
    }

    /// The login kinds that can require the cookie.
    public static var loginKinds: [String] { PortalRegistry.loginNames.filter { refusedKinds[$0] == nil } }

    /// `kind` behind the cookie check when `settings` ask for it (checked first); `kind` itself otherwise. `secure`:
    /// the portal is served over HTTPS only (the cookie is `Secure; HttpOnly`).
    public static func guarded(_ kind: any PortalKind, settings: [String: String], secure: Bool) throws -> any PortalKind {
        let definition = type(of: kind).definition
        if let (name, message) = problem(settings, kind: definition) {
            throw PortalSettingError(kind: definition.name, setting: name, message: message)
        }
        guard isOn(settings) else { return kind }
        return SessionCookiePortal(kind, csrf: settings[csrfSetting] == "true", secure: secure)
    }
}

/// A login kind behind its session cookie (`SessionCookie`). Not a kind of its own: `SessionCookie.guarded` puts
/// it in front of one.
public struct SessionCookiePortal: PortalKind {
    public static let definition = PortalKindDefinition(
        name: "session-cookie", login: true, summary: "a login kind that requires its session cookie (a wrapper, not a kind)")
    public let kind: any PortalKind
    public let csrf: Bool
    public let secure: Bool
    let store: SessionCookieStore

    public init(_ kind: any PortalKind, csrf: Bool, secure: Bool, store: SessionCookieStore = SessionCookieStore()) {
        self.kind = kind
        self.csrf = csrf
        self.secure = secure
        self.store = store
    }

    public init(settings: [String: String]) throws {
        throw PortalSettingError(kind: "session-cookie", setting: "kind", message: "not a kind; it guards one (SessionCookie.guarded)")
    }

    /// The `Set-Cookie` header value for a new session.
    public func setCookie(_ token: String) -> String {
        "\(SessionCookie.cookieName)=\(token); Path=/" + (secure ? "; Secure; HttpOnly" : "")
    }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        if request.intercepted {
            // The way to the portal only: the sign-in starts from its page, where the cookie is set (WISPr's XML,
            // which the kind puts in the redirect, is on that page too).
            let response = await kind.respond(to: request, context: context)
            if (300...399).contains(response.status), let location = response.headers["Location"] { return .redirect(location) }
            return response
        }
        let session = request.cookies[SessionCookie.cookieName].flatMap { store.session($0, clientIP: request.clientIP) }
        if request.method != "GET" && request.method != "HEAD" {
            guard let session else {
                let why = request.cookies[SessionCookie.cookieName] == nil ? "no session cookie" : "an unknown session cookie"
                logLine("\(request.method) \(request.path) from \(request.clientIP) refused: \(why) (\(SessionCookie.cookieName), set by the sign-in page)")
                return .html(403, "Session expired", "<p>Your browser did not send back the session cookie this page set. "
                    + "Enable cookies and <a href=\"/\">sign in again</a>.</p>")
            }
            if csrf, request.field(SessionCookie.csrfField) != session.csrf {
                logLine("\(request.method) \(request.path) from \(request.clientIP) refused: "
                    + (request.field(SessionCookie.csrfField) == nil ? "no CSRF token" : "a wrong CSRF token") + " (\(SessionCookie.csrfField), from the page's form)")
                return .html(403, "Form expired", "<p>The form was not the one this page gave you. <a href=\"/\">Sign in again</a>.</p>")
            }
            return await kind.respond(to: request, context: context)
        }
        var response = await kind.respond(to: request, context: context)
        let current = session ?? store.issue(clientIP: request.clientIP)
        if session == nil { response.headers["Set-Cookie"] = setCookie(current.token) }
        if csrf { response.body = Self.insertToken(current.csrf, into: response.body) }
        return response
    }

    /// Puts `<input type="hidden" name="csrf_token" value="...">` first in every form of the page.
    public static func insertToken(_ token: String, into html: String) -> String {
        var out = ""
        var rest = html[...]
        while let open = rest.range(of: "<form", options: .caseInsensitive), let end = rest[open.upperBound...].firstIndex(of: ">") {
            out += rest[...end]
            out += "<input type=\"hidden\" name=\"\(SessionCookie.csrfField)\" value=\"\(token)\">"
            rest = rest[rest.index(after: end)...]
        }
        return out + rest
    }
}

/// The sessions a cookie portal handed out: token -> the client it was given to and its CSRF token. A portal
/// that restarts (a switch of kind) forgets them, so an old cookie is refused and the page sets a new one.
public final class SessionCookieStore: Sendable {
    public struct Session: Sendable, Equatable {
        public var token: String
        public var clientIP: String
        public var csrf: String
    }

    private let sessions = Synchronization.Mutex<[String: Session]>([:])

    public init() {}

    /// A new session for `clientIP` (random tokens).
    public func issue(clientIP: String) -> Session {
        let session = Session(token: Self.random(), clientIP: clientIP, csrf: Self.random())
        sessions.withLock { sessions in
            if sessions.count > 10_000 { sessions.removeAll() }   // a bound: a lab portal sees a few clients
            sessions[session.token] = session
        }
        return session
    }

    /// The session of `token` when it was given to `clientIP`.
    public func session(_ token: String, clientIP: String) -> Session? {
        sessions.withLock { $0[token] }.flatMap { $0.clientIP == clientIP ? $0 : nil }
    }

    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
