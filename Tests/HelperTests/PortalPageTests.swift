import Foundation
import HotspotHelper
import Portals
import Testing
@testable import CaptiveAPIHelper
@testable import PortalHelper
@testable import VoucherHelper

/// A portal context that logs nobody in (renders pages only).
struct RenderContext: PortalContext {
    let portalURL = "http://198.51.100.1:8080/"
    let sessionSeconds = 30
    var remaining: Int?
    func login(clientIP: String) async throws {}
    func logoff(clientIP: String) async throws {}
    func secondsRemaining(clientIP: String) async -> Int? { remaining }
}

/// What each portal kind of the lab renders: the redirect a probe gets and the portal's own page.
struct RenderedPortal: Sendable {
    var kind: String
    var redirect: PortalResponse
    var page: PortalResponse

    static let settings: [String: [String: String]] = [
        "form-login": ["username": "guest", "password": "croissant"],
        "status-511": ["username": "guest", "password": "croissant"],
        "voucher": ["voucher": "ROOM-4217"],
        "wispr": ["username": "member", "password": "lounge-pass"],
        "captive-api": ["can-extend-session": "true"],
        "broken-slow": ["delay-seconds": "1"],
        "recorded": ["definition": HARHelperTests.fixtures + "/grand-hotel-form.portal.json", "username": "guest", "password": "guest-password"],
    ]

    static func render(_ kind: String) async throws -> RenderedPortal {
        let portal = try PortalRegistry.make(kind, settings: settings[kind] ?? [:])
        let context = RenderContext()
        let redirect = await portal.respond(
            to: PortalRequest(method: "GET", path: "/hotspot-detect.html", host: "captive.apple.com", clientIP: "198.51.100.10", intercepted: true),
            context: context)
        let page = await portal.respond(
            to: PortalRequest(method: "GET", path: "/", host: "198.51.100.1", clientIP: "198.51.100.10", intercepted: false), context: context)
        return RenderedPortal(kind: kind, redirect: redirect, page: page)
    }
}

/// The helpers' page recognizers on the real HTML of every portal kind (PortalRegistry).
@Suite("Portal page recognizers (every portal kind of the lab)")
struct PortalPageTests {
    @Test func everyKindIsCovered() {
        #expect(Set(PortalRegistry.names) == ["click-through", "form-login", "voucher", "wispr", "captive-api",
                                              "broken-slow", "broken-500", "broken-redirect-loop", "broken-empty", "status-511", "email", "recorded"],
                "a new portal kind: decide what the reference helpers make of it")
    }

    /// hotspot-helper-portal claims form-login, click-through, e-mail and WISPr, and nothing else.
    @Test(arguments: PortalRegistry.names)
    func portalHelperRecognizer(_ kind: String) async throws {
        let rendered = try await RenderedPortal.render(kind)
        let onRedirect = PortalHelper.PortalPage.recognize(rendered.redirect.body)
        let onPage = PortalHelper.PortalPage.recognize(rendered.page.body)
        switch kind {
        case "form-login":
            guard case .formLogin(let form, let user, let password)? = onPage else {
                Issue.record("form-login page not recognized: \(String(describing: onPage))")
                return
            }
            #expect(user == "username" && password == "password")
            #expect(form.action == "/login" && form.method == "post")
            #expect(onRedirect == nil)
        case "click-through":
            guard case .clickThrough(let form)? = onPage else {
                Issue.record("click-through page not recognized: \(String(describing: onPage))")
                return
            }
            #expect(form.action == "/accept" && form.method == "post")
            #expect(form.defaultSubmission.map { "\($0.name)=\($0.value)" } == ["accept=yes"])
            #expect(onRedirect == nil)
        case "status-511":
            // RFC 6585: no redirect, a 511 whose page holds the sign-in form; the portal page is a form login.
            #expect(rendered.redirect.status == 511)
            guard case .formLogin(let form, _, _)? = onRedirect, case .formLogin(let pageForm, _, _)? = onPage else {
                Issue.record("status-511 not recognized as a form login: \(String(describing: onRedirect)), \(String(describing: onPage))")
                return
            }
            #expect(form.action.hasSuffix("/login") && form.method == "post")
            #expect(pageForm.action == "/login")
        case "email":
            // One e-mail field: signed in with --email (without it, evaluate says "not mine": HelperLogicTests).
            guard case .email(let form, let field)? = onPage else {
                Issue.record("email page not recognized: \(String(describing: onPage))")
                return
            }
            #expect(field == "email" && form.action == "/email" && form.method == "post")
            #expect(onRedirect == nil)
        case "wispr":
            // WISPr puts the XML in the redirect itself (and on the portal page).
            #expect(rendered.redirect.status == 302)
            #expect(onRedirect == .wispr(loginURL: "http://198.51.100.1:8080/wispr/login"))
            #expect(onPage == .wispr(loginURL: "http://198.51.100.1:8080/wispr/login"))
        case "recorded":
            // The Grand Hotel's capture: the redirect carries the station's MAC and IP; its page (at /login, `/` is not in
            // the capture) is a form login with the station's fresh token and MAC as hidden fields.
            #expect(rendered.redirect.status == 302 && onRedirect == nil)
            #expect(rendered.page.status == 404 && onPage == nil)
            let login = await (try PortalRegistry.make(kind, settings: RenderedPortal.settings[kind] ?? [:])).respond(
                to: PortalRequest(method: "GET", path: "/login", host: "198.51.100.1", clientIP: "198.51.100.10", intercepted: false), context: RenderContext())
            guard case .formLogin(let form, let user, let password)? = PortalHelper.PortalPage.recognize(login.body) else {
                Issue.record("the recorded form page is not recognized: \(login.body)")
                return
            }
            #expect(user == "username" && password == "password" && form.action == "/auth")
            #expect(form.defaultSubmission.map(\.name) == ["csrf_token", "client_mac"])
        default:
            #expect(onPage == nil, "\(kind): the portal helper must claim nothing else, recognized \(String(describing: onPage))")
            #expect(onRedirect == nil, "\(kind): recognized the redirect as \(String(describing: onRedirect))")
        }
    }

    /// hotspot-helper-voucher claims the voucher page only.
    @Test(arguments: PortalRegistry.names)
    func voucherHelperRecognizer(_ kind: String) async throws {
        let rendered = try await RenderedPortal.render(kind)
        let onPage = VoucherHelper.VoucherPage.recognize(rendered.page.body)
        let onRedirect = VoucherHelper.VoucherPage.recognize(rendered.redirect.body)
        #expect(onRedirect == nil)
        if kind == "voucher" {
            let page = try #require(onPage)
            #expect(page.codeField == "code" && page.form.action == "/voucher" && page.form.method == "post")
            #expect(page.submission(code: "ROOM-4217").map { "\($0.name)=\($0.value)" } == ["code=ROOM-4217"])
        } else {
            #expect(onPage == nil, "\(kind): the voucher helper must claim nothing else")
        }
    }

    /// The email kind: a form with one e-mail field and no password. No reference helper claims it (the portal
    /// helper leaves forms with a field to type that is not a password; the voucher helper wants a code field).
    @Test func emailPage() async throws {
        let rendered = try await RenderedPortal.render("email")
        #expect(rendered.redirect.status == 302 && rendered.redirect.headers["Location"] == "http://198.51.100.1:8080/")
        #expect(rendered.page.status == 200)
        #expect(rendered.page.body.contains(#"<form method="post" action="/email">"#))
        #expect(rendered.page.body.contains(#"<input name="email" type="email""#))
        let portal = try PortalRegistry.make("email", settings: ["domain": "staff.example"])
        let signIn = { (address: String) async in
            await portal.respond(to: PortalRequest(method: "POST", path: "/email", host: "198.51.100.1", form: ["email": address],
                                                   clientIP: "198.51.100.10", intercepted: false), context: RenderContext())
        }
        #expect(await signIn("guest@staff.example").status == 200)
        #expect(await signIn("guest@example.com").status == 403)
        #expect(await signIn("guest").status == 400)
    }

    /// hotspot-helper-captive-api reads what the captive-api kind's RFC 8908 API answers.
    @Test func captiveAPIState() async throws {
        let portal = try PortalRegistry.make("captive-api", settings: ["can-extend-session": "true", "venue-info-url": "http://198.51.100.1:8080/venue"])
        let request = PortalRequest(method: "GET", path: "/captive-api", host: "198.51.100.1", clientIP: "198.51.100.10", intercepted: false)
        let before = await portal.respond(to: request, context: RenderContext(remaining: nil))
        #expect(before.headers["Content-Type"] == "application/captive+json")
        let captive = try #require(CaptiveAPIHelper.CaptiveAPIState.parse(Array(before.body.utf8)))
        #expect(captive == CaptiveAPIState(captive: true, userPortalURL: "http://198.51.100.1:8080/", venueInfoURL: "http://198.51.100.1:8080/venue",
                                           secondsRemaining: nil, canExtendSession: false))
        let after = await portal.respond(to: request, context: RenderContext(remaining: 42))
        let online = try #require(CaptiveAPIHelper.CaptiveAPIState.parse(Array(after.body.utf8)))
        #expect(online.captive == false && online.secondsRemaining == 42 && online.canExtendSession)
        #expect(CaptiveAPIHelper.CaptiveAPIState.parse(Array("{\"captive\":\"yes\"}".utf8)) == nil)
        #expect(CaptiveAPIHelper.CaptiveAPIState.parse(Array("<html>".utf8)) == nil)
        #expect(CaptiveAPIHelper.CaptiveAPIState.parse([]) == nil)
        // The user portal's form: POST /accept.
        let page = await portal.respond(
            to: PortalRequest(method: "GET", path: "/", host: "198.51.100.1", clientIP: "198.51.100.10", intercepted: false), context: RenderContext())
        let form = try #require(CaptiveAPIHelper.CaptiveAPI.acceptForm(in: page.body, page: HotspotURL("http://198.51.100.1:8080/")!))
        #expect(form.url.description == "http://198.51.100.1:8080/accept")
        #expect(form.fields.map { "\($0.name)=\($0.value)" } == ["accept=yes"])
    }

    @Test func oddPagesNeverCrashTheRecognizers() {
        let odd = ["", "<", "<form", "<form action=", "<form action=\"/x\"><input name=", "<input type=password>",
                   "<!-- <WISPAccessGatewayParam> no end", "<WISPAccessGatewayParam><LoginURL></LoginURL></WISPAccessGatewayParam>",
                   "<form method=post action='/login'><input name=u><input type=password name=p></form>",
                   String(repeating: "<form><input ", count: 500), "\u{0}\u{1}<FORM ACTION=/a METHOD=POST><INPUT TYPE=CHECKBOX NAME=agree>I agree</FORM>"]
        for html in odd {
            _ = PortalHelper.PortalPage.recognize(html)
            _ = VoucherHelper.VoucherPage.recognize(html)
            _ = CaptiveAPIHelper.CaptiveAPIState.parse(Array(html.utf8))
        }
        guard case .formLogin(_, "u", "p")? = PortalHelper.PortalPage.recognize(odd[8]) else {
            Issue.record("unquoted attributes")
            return
        }
        guard case .clickThrough(let form)? = PortalHelper.PortalPage.recognize(odd[10]) else {
            Issue.record("upper-case tags")
            return
        }
        #expect(form.action == "/a" && form.defaultSubmission.map { "\($0.name)=\($0.value)" } == ["agree=on"])
    }

    @Test func optionsParse() throws {
        let o = try PortalHelper.PortalHelperOptions.parse(["--account", "guest:crois:sant", "--network", "Cafe", "--network=Home:secret pw",
                                                           "--name", "Cafe Login", "--http-timeout", "2.5"])
        #expect(o.account?.username == "guest" && o.account?.password == "crois:sant")
        #expect(o.networks.map { "\($0.ssid)|\($0.password ?? "-")" } == ["Cafe|-", "Home|secret pw"])
        #expect(o.displayName == "Cafe Login" && o.httpTimeout == .milliseconds(2500))
        #expect(throws: PortalHelper.PortalHelperOptions.UsageError.self) { try PortalHelper.PortalHelperOptions.parse(["--name", "Sixteen chars!!!"]) }
        #expect(throws: PortalHelper.PortalHelperOptions.UsageError.self) { try PortalHelper.PortalHelperOptions.parse(["--account", "nocolon"]) }
        #expect(throws: PortalHelper.PortalHelperOptions.UsageError.self) { try PortalHelper.PortalHelperOptions.parse(["--account"]) }
        #expect(throws: PortalHelper.PortalHelperOptions.UsageError.self) { try PortalHelper.PortalHelperOptions.parse(["--frobnicate", "1"]) }
        let v = try VoucherHelper.VoucherHelperOptions.parse(["--ui", "/tmp/ui", "--network", "Hotel"])
        #expect(v.uiDirectory == "/tmp/ui" && v.networks.count == 1)
        #expect(throws: CaptiveAPIHelper.CaptiveAPIHelperOptions.UsageError.self) { try CaptiveAPIHelper.CaptiveAPIHelperOptions.parse(["stray"]) }
    }
}
