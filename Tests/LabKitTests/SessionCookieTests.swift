import Testing
import LabKit
@testable import Portals

/// The `session-cookie` and `csrf-token` portal settings (portals/SessionCookie.swift): every login kind behind its
/// session cookie, without a network (a recording gate stands in for nftables), and the topology's errors.
@Suite struct SessionCookiePortalTests {
    let gate = RecordingGate()
    var sessions: PortalSessions {
        PortalSessions(portalURL: "http://198.51.100.1:8080/", sessionSeconds: 30, gate: gate, neighbours: FixedNeighbours(), now: { 1000 })
    }

    func req(_ method: String, _ path: String, form: [String: String] = [:], cookies: [String: String] = [:],
             client: String = "198.51.100.10", intercepted: Bool = false) -> PortalRequest {
        var r = PortalRequest(method: method, path: path, form: form, clientIP: client, intercepted: intercepted)
        r.cookies = cookies
        return r
    }

    /// The value of `hotspotlab_session` in a Set-Cookie header.
    func token(_ response: PortalResponse) -> String? {
        guard let header = response.headers["Set-Cookie"], header.hasPrefix(SessionCookie.cookieName + "=") else { return nil }
        return String(header.dropFirst(SessionCookie.cookieName.count + 1).prefix { $0 != ";" })
    }

    /// The sign-in of each login kind that can require the cookie: its path and form (the right answer).
    static let signIns: [(kind: String, settings: [String: String], path: String, form: [String: String])] = [
        ("form-login", ["username": "guest", "password": "croissant"], "/login", ["username": "guest", "password": "croissant"]),
        ("click-through", [:], "/accept", ["accept": "yes"]),
        ("voucher", ["voucher": "ROOM-1"], "/voucher", ["code": "ROOM-1"]),
        ("email", [:], "/email", ["email": "someone@example.com"]),
        ("wispr", ["username": "member", "password": "pw"], "/wispr/login", ["UserName": "member", "Password": "pw"]),
        ("captive-api", [:], "/accept", [:]),
    ]

    @Test("every login kind that can require it refuses its sign-in without the cookie the page set, and takes it with",
          arguments: Self.signIns.map(\.kind))
    func everyLoginKindRequiresTheCookie(_ name: String) async throws {
        let signIn = try #require(Self.signIns.first { $0.kind == name })
        let settings = signIn.settings.merging(["session-cookie": "true"]) { a, _ in a }
        let kind = try SessionCookie.guarded(try PortalRegistry.make(name, settings: settings), settings: settings, secure: false)
        let s = sessions
        // No cookie: refused, the gate untouched.
        let bare = await kind.respond(to: req("POST", signIn.path, form: signIn.form), context: s)
        #expect(bare.status == 403, "\(name): \(bare)")
        // A made-up cookie: refused.
        let forged = await kind.respond(to: req("POST", signIn.path, form: signIn.form, cookies: [SessionCookie.cookieName: "0123"]), context: s)
        #expect(forged.status == 403)
        #expect(await gate.allowed.isEmpty)
        // The sign-in page sets it (Path=/; not Secure over plain HTTP).
        let page = await kind.respond(to: req("GET", "/"), context: s)
        #expect(page.status == 200)
        #expect(page.headers["Set-Cookie"]?.hasSuffix("; Path=/") == true, "\(page.headers)")
        let cookie = try #require(token(page))
        // Another client with that cookie: refused (the cookie belongs to the client it was given to).
        let stolen = await kind.respond(to: req("POST", signIn.path, form: signIn.form, cookies: [SessionCookie.cookieName: cookie], client: "198.51.100.11"), context: s)
        #expect(stolen.status == 403)
        // With it: the kind decides as without the setting.
        let signed = await kind.respond(to: req("POST", signIn.path, form: signIn.form, cookies: [SessionCookie.cookieName: cookie]), context: s)
        #expect(signed.status == 200, "\(name): \(signed.body)")
        #expect(await gate.allowed == ["02:00:00:00:00:0a 198.51.100.10 30"])
        // A page fetched with the cookie does not set another.
        #expect(await kind.respond(to: req("GET", "/", cookies: [SessionCookie.cookieName: cookie]), context: s).headers["Set-Cookie"] == nil)
    }

    @Test func withoutTheSettingNothingChanges() async throws {
        let settings = ["username": "guest", "password": "croissant", "session-cookie": "false"]
        let kind = try SessionCookie.guarded(try PortalRegistry.make("form-login", settings: settings), settings: settings, secure: false)
        #expect(kind is FormLoginPortal)
        let s = sessions
        #expect(await kind.respond(to: req("GET", "/"), context: s).headers["Set-Cookie"] == nil)
        #expect(await kind.respond(to: req("POST", "/login", form: ["username": "guest", "password": "croissant"]), context: s).status == 200)
    }

    @Test func httpsOnlyCookieIsSecureAndHttpOnly() async throws {
        let settings = ["username": "guest", "password": "croissant", "session-cookie": "true"]
        let kind = try SessionCookie.guarded(try PortalRegistry.make("form-login", settings: settings), settings: settings, secure: true)
        let page = await kind.respond(to: req("GET", "/"), context: sessions)
        let header = try #require(page.headers["Set-Cookie"])
        #expect(header.hasPrefix(SessionCookie.cookieName + "=") && header.hasSuffix("; Path=/; Secure; HttpOnly"), "\(header)")
    }

    @Test func csrfTokenFromThePageIsRequired() async throws {
        let settings = ["username": "guest", "password": "croissant", "session-cookie": "true", "csrf-token": "true"]
        let kind = try SessionCookie.guarded(try PortalRegistry.make("form-login", settings: settings), settings: settings, secure: false)
        let s = sessions
        let page = await kind.respond(to: req("GET", "/"), context: s)
        let cookie = try #require(token(page))
        // The token is a hidden field of the page's form (what a browser, or the reference helpers, submit).
        let marker = "name=\"\(SessionCookie.csrfField)\" value=\""
        let start = try #require(page.body.range(of: marker))
        let csrf = String(page.body[start.upperBound...].prefix { $0 != "\"" })
        #expect(csrf.count == 32)
        #expect(page.body.contains("<form method=\"post\" action=\"/login\"><input type=\"hidden\""))
        let account = ["username": "guest", "password": "croissant"]
        let noToken = await kind.respond(to: req("POST", "/login", form: account, cookies: [SessionCookie.cookieName: cookie]), context: s)
        #expect(noToken.status == 403 && noToken.body.contains("Form expired"))
        let wrong = await kind.respond(to: req("POST", "/login", form: account.merging([SessionCookie.csrfField: "x"]) { a, _ in a },
                                               cookies: [SessionCookie.cookieName: cookie]), context: s)
        #expect(wrong.status == 403)
        // The token without the cookie: refused for the cookie.
        let noCookie = await kind.respond(to: req("POST", "/login", form: account.merging([SessionCookie.csrfField: csrf]) { a, _ in a }), context: s)
        #expect(noCookie.status == 403 && noCookie.body.contains("session cookie"))
        #expect(await gate.allowed.isEmpty)
        let right = await kind.respond(to: req("POST", "/login", form: account.merging([SessionCookie.csrfField: csrf]) { a, _ in a },
                                               cookies: [SessionCookie.cookieName: cookie]), context: s)
        #expect(right.status == 200)
        #expect(await gate.allowed.count == 1)
    }

    @Test func interceptedRequestsOnlyLeadToThePortal() async throws {
        // WISPr puts its XML in the redirect; behind the cookie the XML is on the portal page, where the cookie is set.
        let settings = ["username": "member", "password": "pw", "session-cookie": "true"]
        let kind = try SessionCookie.guarded(try PortalRegistry.make("wispr", settings: settings), settings: settings, secure: false)
        let s = sessions
        let redirect = await kind.respond(to: req("GET", "/hotspot-detect.html", intercepted: true), context: s)
        #expect(redirect.status == 302 && redirect.headers["Location"] == "http://198.51.100.1:8080/")
        #expect(!redirect.body.contains("WISPAccessGatewayParam") && redirect.headers["Set-Cookie"] == nil)
        let page = await kind.respond(to: req("GET", "/"), context: s)
        #expect(page.body.contains("<LoginURL>") && token(page) != nil)
    }

    @Test func settingsAreChecked() throws {
        func problem(_ kind: String, _ settings: [String: String]) -> String? {
            SessionCookie.problem(settings, kind: PortalRegistry.definition(kind)!).map { "\($0.setting): \($0.message)" }
        }
        #expect(problem("form-login", ["session-cookie": "true", "csrf-token": "true"]) == nil)
        #expect(problem("form-login", ["session-cookie": "yes"]) == "session-cookie: expected \"true\" or \"false\", found `yes`")
        #expect(problem("form-login", ["csrf-token": "true"])?.hasPrefix("csrf-token: the CSRF token is tied to the session cookie") == true)
        #expect(problem("broken-empty", ["session-cookie": "true"])?.hasPrefix("session-cookie: the broken-empty portal has no sign-in") == true)
        #expect(problem("status-511", ["session-cookie": "true"])?.hasPrefix("session-cookie: not for the status-511 portal") == true)
        #expect(problem("wispr", ["session-cookie": "true", "csrf-token": "true"])?.hasPrefix("csrf-token: the wispr portal's sign-in is WISPr XML") == true)
        #expect(problem("wispr", ["session-cookie": "true"]) == nil)
        #expect(throws: PortalSettingError.self) {
            try SessionCookie.guarded(try PortalRegistry.make("status-511", settings: ["username": "u", "password": "p"]),
                                      settings: ["session-cookie": "true"], secure: false)
        }
    }
}

/// The settings in a topology: `file:line:column` errors at the value at fault.
@Suite struct SessionCookieTopologyTests {
    static let base = TopologyParserTests.base

    func failure(_ yaml: String) -> TopologyError? {
        do {
            _ = try TopologyParser.parse(yaml, file: "bad.yaml")
            return nil
        } catch {
            return error as? TopologyError
        }
    }

    @Test func parsesAndRefusesWithPositions() throws {
        let on = try TopologyParser.parse(Self.base + "\n        session-cookie: \"true\"\n        csrf-token: \"true\"\n        https-only: \"true\"", file: "on.yaml")
        let settings = try #require(on.hotspots[0].gateway.portal?.settings)
        #expect(settings["session-cookie"] == "true" && settings["csrf-token"] == "true" && settings["https-only"] == "true")

        let bad = try #require(failure(Self.base + "\n        session-cookie: maybe"))
        #expect(bad.field == "hotspots[0].gateway.portal.session-cookie")
        #expect(bad.line == 13 && bad.column == 25, "\(bad)")
        #expect(bad.message == "expected \"true\" or \"false\", found `maybe`")

        let alone = try #require(failure(Self.base + "\n        csrf-token: \"true\""))
        #expect(alone.field == "hotspots[0].gateway.portal.csrf-token")
        #expect(alone.line == 13 && alone.column == 21, "\(alone)")
        #expect(alone.message.hasPrefix("the CSRF token is tied to the session cookie"))

        let broken = try #require(failure(TopologyParserTests.portal("        kind: broken-empty\n        session-cookie: \"true\"")))
        #expect(broken.field == "hotspots[0].gateway.portal.session-cookie")
        #expect(broken.line == 11 && broken.column == 25, "\(broken)")
        #expect(broken.message.hasPrefix("the broken-empty portal has no sign-in; expected a login kind (click-through, form-login"), "\(broken)")
    }
}
