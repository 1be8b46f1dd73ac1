import Foundation
import Portals
import Testing
@testable import CaptiveAPIHelper
@testable import HotspotHelper
@testable import PortalHelper
import ReferenceHelperSupport
@testable import VoucherHelper

/// The SDK's cookie jar (`HotspotCookieJar`): RFC 6265's rules as URLSession applies them, without a network.
@Suite struct CookieJarTests {
    func response(_ url: String, _ cookies: [String]) -> HotspotHTTPResponse {
        HotspotHTTPResponse(url: HotspotURL(url)!, status: 200, reason: "OK", headers: cookies.map { ("Set-Cookie", $0) }, body: [])
    }

    @Test func hostOnlyDomainAndPath() {
        let jar = HotspotCookieJar(now: { 1_000_000 })
        jar.store(response("http://portal.cafe.example/signin/page", ["a=1", "b=2; Path=/", "c=3; Domain=cafe.example; Path=/", "d=4; Domain=other.example"]))
        // a: host only, default path /signin; b: host only, /; c: the domain and its subdomains; d: another site's, refused.
        #expect(jar.cookies.map(\.name) == ["a", "b", "c"])
        #expect(jar.cookieHeader(for: HotspotURL("http://portal.cafe.example/signin/post")!) == "a=1; b=2; c=3")
        #expect(jar.cookieHeader(for: HotspotURL("http://portal.cafe.example/signinx")!) == "b=2; c=3")
        #expect(jar.cookieHeader(for: HotspotURL("http://www.cafe.example/")!) == "c=3")
        #expect(jar.cookieHeader(for: HotspotURL("http://cafe.example.evil/")!) == nil)
        #expect(jar.cookieHeader(for: HotspotURL("http://198.51.100.1/")!) == nil)
    }

    @Test func secureOnlyOverHTTPSAndOnlyFromIt() {
        let jar = HotspotCookieJar(now: { 1_000_000 })
        jar.store(response("http://portal.cafe.example/", ["plain=1; Secure"]))   // an http answer cannot set a Secure cookie
        #expect(jar.cookies.isEmpty)
        jar.store(response("https://portal.cafe.example/", ["s=1; Path=/; Secure; HttpOnly"]))
        #expect(jar.cookies.first?.secure == true && jar.cookies.first?.httpOnly == true)
        #expect(jar.cookieHeader(for: HotspotURL("https://portal.cafe.example/login")!) == "s=1")
        #expect(jar.cookieHeader(for: HotspotURL("http://portal.cafe.example/login")!) == nil)
    }

    @Test func expiryAndReplacement() {
        let clock = 784_111_777   // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(HotspotCookieJar.httpDate("Sun, 06 Nov 1994 08:49:37 GMT") == clock)
        #expect(HotspotCookieJar.httpDate("Sunday, 06-Nov-94 08:49:37 GMT") == clock)
        #expect(HotspotCookieJar.httpDate("not a date") == nil)
        let jar = HotspotCookieJar(now: { clock })
        jar.store(response("http://p.example/", ["a=1; Max-Age=60", "b=1; Expires=Sun, 06 Nov 1994 08:49:38 GMT", "c=1; Max-Age=60; Expires=Sun, 06 Nov 1994 08:49:00 GMT"]))
        #expect(jar.cookies.map(\.name) == ["a", "b", "c"], "Max-Age wins over Expires")
        jar.store(response("http://p.example/", ["a=2; Max-Age=60", "b=; Max-Age=0", "c=; Expires=Thu, 01 Jan 1970 00:00:00 GMT"]))
        #expect(jar.cookieHeader(for: HotspotURL("http://p.example/")!) == "a=2")
        let later = HotspotCookieJar(now: { clock + 61 })
        later.store(response("http://p.example/", ["a=1; Max-Age=60"]))
        #expect(later.cookies.count == 1)
    }

    @Test func sendAddsTheCookieAndKeepsTheAnswers() throws {
        let jar = HotspotCookieJar(now: { 1_000_000 })
        var seen: [String] = []
        let server = { (request: HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse in
            seen.append(request.headers.first { $0.name == "Cookie" }?.value ?? "-")
            return HotspotHTTPResponse(url: HotspotURL(request.url)!, status: 200, reason: "OK", headers: [("Set-Cookie", "sid=abc; Path=/")], body: [])
        }
        _ = try jar.send(.get("http://portal.example/"), via: server)
        _ = try jar.send(.postForm("http://portal.example/login", fields: [("a", "b")]), via: server)
        _ = try jar.send(.get("http://portal.example/", headers: [("Cookie", "mine=1")]), via: server)
        #expect(seen == ["-", "sid=abc", "mine=1"])
    }
}

/// The reference helpers on portals that require their session cookie (and the CSRF token of their form): each
/// signs in; the same logic over an HTTP that drops the Cookie header is refused (the control).
@Suite("Reference helpers behind a session cookie (portal kinds on loopback)")
struct SessionCookieHelperTests {
    typealias Outcome = HelperLogicTests.Outcome

    /// `http` without any Cookie header: a helper whose HTTP keeps no cookies.
    static func dropping(_ http: @escaping (HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse)
        -> (HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse
    {
        { (request) throws(HotspotTrafficError) -> HotspotHTTPResponse in
            var r = request
            r.headers.removeAll { $0.name.lowercased() == "cookie" }
            return try http(r)
        }
    }

    @Test(arguments: [("form-login", ["username": "guest", "password": "croissant", "csrf-token": "true"], ["--account", "guest:croissant"]),
                      ("click-through", ["csrf-token": "true"], []),
                      ("email", [:], ["--email", "guest@cafe.example"]),
                      ("wispr", ["username": "guest", "password": "croissant"], ["--account", "guest:croissant"])])
    func portalHelperSendsTheCookieBack(_ kind: String, _ settings: [String: String], _ arguments: [String]) async throws {
        let lab = try await LoopbackPortal.start(kind, settings: settings.merging(["session-cookie": "true"]) { a, _ in a })
        defer { lab.stop() }
        let losing = try HelperLogicTests.portalLogic(arguments)
        let logic = try HelperLogicTests.portalLogic(arguments)
        let (refused, allowedBefore, signed, allowed) = try await blocking {
            let dropping = Self.dropping(lab.http)
            let refused = Outcome(losing.authenticate(dropping, ssid: "Cafe"))
            let before = lab.gate.isAllowed("127.0.0.1")
            return (refused, before, Outcome(logic.authenticate(lab.http, ssid: "Cafe")), lab.gate.isAllowed("127.0.0.1"))
        }
        #expect(refused.result == .failure && refused.reason.contains("403"), "\(kind) without cookies: \(refused)")
        #expect(!allowedBefore)
        #expect(signed.result == .success, "\(kind): \(signed)")
        #expect(allowed)
    }

    @Test func voucherHelperKeepsTheCookieFromAuthenticateToPresentUI() async throws {
        let lab = try await LoopbackPortal.start("voucher", settings: ["voucher": "ROOM-4217", "session-cookie": "true", "csrf-token": "true"])
        defer { lab.stop() }
        let ui = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-ui-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: ui, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: ui) }
        let logic = VoucherLogic(options: try VoucherHelper.VoucherHelperOptions.parse(["--ui", ui]))
        let o = try await blocking { () -> [String: Outcome] in
            var o: [String: Outcome] = [:]
            o["authenticate"] = Outcome(logic.authenticate(lab.http, ssid: "Hotel"))
            try "ROOM-4217\n".write(toFile: ui + "/.typing", atomically: false, encoding: .utf8)
            rename(ui + "/.typing", ui + "/input")
            o["present"] = Outcome(logic.presentUI(lab.http, ssid: "Hotel", cancelled: { false }))
            return o
        }
        #expect(o["authenticate"]?.result == .uiRequired, "\(o["authenticate"]!)")
        #expect(o["present"]?.result == .success, "\(o["present"]!)")
        #expect(lab.gate.isAllowed("127.0.0.1"))
    }

    @Test func captiveAPIHelperSendsTheCookieBack() async throws {
        let lab = try await LoopbackPortal.start("captive-api", settings: ["can-extend-session": "true", "session-cookie": "true"], session: 30)
        defer { lab.stop() }
        let lease = ["opt114": Array((lab.base + "/captive-api").utf8).map { String(format: "%02x", $0) }.joined()]
        let losing = CaptiveAPILogic(options: try CaptiveAPIHelper.CaptiveAPIHelperOptions.parse([]))
        let logic = CaptiveAPILogic(options: try CaptiveAPIHelper.CaptiveAPIHelperOptions.parse([]))
        let o = try await blocking { () -> [String: Outcome] in
            let dropping = Self.dropping(lab.http)
            var o: [String: Outcome] = [:]
            o["refused"] = Outcome(losing.authenticate(dropping, ssid: "Api", lease: lease))
            o["authenticate"] = Outcome(logic.authenticate(lab.http, ssid: "Api", lease: lease))
            o["maintain"] = Outcome(logic.maintain(lab.http, ssid: "Api", lease: lease))
            return o
        }
        #expect(o["refused"]?.result == .failure && o["refused"]?.reason.contains("403") == true, "\(o["refused"]!)")
        #expect(o["authenticate"]?.result == .success, "\(o["authenticate"]!)")
        #expect(o["maintain"]?.reason.contains("extended the session") == true, "POST /extend with the cookie: \(o["maintain"]!)")
    }
}
