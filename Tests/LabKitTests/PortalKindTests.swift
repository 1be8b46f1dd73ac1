import Testing
import Foundation
import LabKit
@testable import Portals

/// Portal kinds answer as documented, without a network: a recording gate stands in for nftables.
actor RecordingGate: PortalGate {
    var allowed: [String] = []
    var revoked: [String] = []
    func allow(mac: String, ip: String, seconds: Int) async throws { allowed.append("\(mac) \(ip) \(seconds)") }
    func revoke(mac: String, ip: String) async throws { revoked.append("\(mac) \(ip)") }
}

struct FixedNeighbours: NeighbourLookup {
    func mac(for ip: String) -> String? { ip == "198.51.100.10" ? "02:00:00:00:00:0a" : nil }
}

final class FakeClock: @unchecked Sendable {
    var now: Double = 1000
}

@Suite struct PortalKindTests {
    let gate = RecordingGate()
    let clock = FakeClock()
    var sessions: PortalSessions {
        let clock = self.clock
        return PortalSessions(portalURL: "http://198.51.100.1:8080/", sessionSeconds: 30, gate: gate,
                              neighbours: FixedNeighbours(), now: { clock.now })
    }

    func req(_ method: String, _ path: String, form: [String: String] = [:], intercepted: Bool = false) -> PortalRequest {
        PortalRequest(method: method, path: path, form: form, clientIP: "198.51.100.10", intercepted: intercepted)
    }

    @Test func catalogMatchesRegistry() {
        #expect(PortalRegistry.names == PortalCatalog.kinds)
    }

    @Test func formLoginRightAndWrong() async throws {
        let kind = try FormLoginPortal(settings: ["username": "guest", "password": "croissant"])
        let s = sessions
        let redirect = await kind.respond(to: req("GET", "/hotspot-detect.html", intercepted: true), context: s)
        #expect(redirect.status == 302 && redirect.headers["Location"] == "http://198.51.100.1:8080/")
        let wrong = await kind.respond(to: req("POST", "/login", form: ["username": "guest", "password": "nope"]), context: s)
        #expect(wrong.status == 401)
        #expect(await gate.allowed.isEmpty)
        let right = await kind.respond(to: req("POST", "/login", form: ["username": "guest", "password": "croissant"]), context: s)
        #expect(right.status == 200)
        #expect(await gate.allowed == ["02:00:00:00:00:0a 198.51.100.10 30"])
        let off = await kind.respond(to: req("GET", "/logoff"), context: s)
        #expect(off.status == 200)
        #expect(await gate.revoked == ["02:00:00:00:00:0a 198.51.100.10"])
        #expect(throws: PortalSettingError.self) { try FormLoginPortal(settings: ["username": "x"]) }
    }

    @Test func voucherAndClickThrough() async throws {
        let s = sessions
        let voucher = try VoucherPortal(settings: ["voucher": "ROOM-1"])
        #expect(await voucher.respond(to: req("POST", "/voucher", form: ["code": "ROOM-2"]), context: s).status == 403)
        #expect(await voucher.respond(to: req("POST", "/voucher", form: ["code": " room-1 "]), context: s).status == 200)
        let click = try ClickThroughPortal(settings: [:])
        #expect(await click.respond(to: req("POST", "/accept"), context: s).status == 400)
        #expect(await click.respond(to: req("POST", "/accept", form: ["accept": "yes"]), context: s).status == 200)
        #expect(await gate.allowed.count == 2)
    }

    @Test func wisprCodes() async throws {
        let s = sessions
        let kind = try WISPrPortal(settings: ["username": "member", "password": "pw"])
        let redirect = await kind.respond(to: req("GET", "/hotspot-detect.html", intercepted: true), context: s)
        #expect(redirect.body.contains("<!--<?xml"))
        #expect(redirect.body.contains("<LoginURL>http://198.51.100.1:8080/wispr/login</LoginURL>"))
        #expect(redirect.body.contains("<MessageType>100</MessageType>"))
        let failed = await kind.respond(to: req("POST", "/wispr/login", form: ["UserName": "member", "Password": "x"]), context: s)
        #expect(failed.body.contains("<ResponseCode>100</ResponseCode>"))
        let ok = await kind.respond(to: req("POST", "/wispr/login", form: ["UserName": "member", "Password": "pw"]), context: s)
        #expect(ok.body.contains("<MessageType>120</MessageType>") && ok.body.contains("<ResponseCode>50</ResponseCode>"))
        #expect(ok.body.contains("<LogoffURL>http://198.51.100.1:8080/wispr/logoff</LogoffURL>"))
        let off = await kind.respond(to: req("GET", "/wispr/logoff"), context: s)
        #expect(off.body.contains("<MessageType>130</MessageType>") && off.body.contains("<ResponseCode>150</ResponseCode>"))
    }

    @Test func captiveAPIAndExpiry() async throws {
        let s = sessions
        let kind = try CaptiveAPIPortal(settings: ["can-extend-session": "true"])
        let before = await kind.respond(to: req("GET", "/captive-api"), context: s)
        #expect(before.headers["Content-Type"] == "application/captive+json")
        #expect(before.body == #"{"captive":true,"user-portal-url":"http:\/\/198.51.100.1:8080\/"}"#)
        _ = await kind.respond(to: req("POST", "/accept"), context: s)
        clock.now += 10
        let after = await kind.respond(to: req("GET", "/captive-api"), context: s)
        #expect(after.body.contains(#""captive":false"#) && after.body.contains(#""seconds-remaining":20"#))
        #expect(after.body.contains(#""can-extend-session":true"#))
        #expect(await kind.respond(to: req("POST", "/extend"), context: s).status == 200)
        let extended = await kind.respond(to: req("GET", "/captive-api"), context: s)
        #expect(extended.body.contains(#""seconds-remaining":30"#), "after extend: \(extended.body)")
        let fixed = try CaptiveAPIPortal(settings: [:])
        #expect(await fixed.respond(to: req("POST", "/extend"), context: s).status == 403)
        clock.now += 35
        #expect(await kind.respond(to: req("POST", "/extend"), context: s).status == 403)
        let expired = await kind.respond(to: req("GET", "/captive-api"), context: s)
        #expect(expired.body.contains(#""captive":true"#))
    }

    @Test func brokenKinds() async throws {
        let s = sessions
        let slow = await (try BrokenSlowPortal(settings: [:])).respond(to: req("GET", "/", intercepted: true), context: s)
        #expect(slow.delaySeconds == 60)
        #expect(await (try Broken500Portal(settings: [:])).respond(to: req("GET", "/"), context: s).status == 500)
        let loop = await (try BrokenRedirectLoopPortal(settings: [:])).respond(to: req("GET", "/loop/a"), context: s)
        #expect(loop.status == 302 && loop.headers["Location"] == "http://198.51.100.1:8080/loop/b")
        let empty = await (try BrokenEmptyPortal(settings: [:])).respond(to: req("GET", "/", intercepted: true), context: s)
        #expect(empty.status == 200 && empty.body.isEmpty)
    }

    @Test func emailSignIn() async throws {
        let s = sessions
        let kind = try EmailPortal(settings: [:])
        let redirect = await kind.respond(to: req("GET", "/hotspot-detect.html", intercepted: true), context: s)
        #expect(redirect.status == 302 && redirect.headers["Location"] == "http://198.51.100.1:8080/")
        let page = await kind.respond(to: req("GET", "/"), context: s)
        #expect(page.status == 200 && page.body.contains(#"<form method="post" action="/email">"#) && page.body.contains(#"name="email""#))
        for bad in ["", "guest", "guest@", "@example.com", "guest@example", "gu est@example.com", "guest@@example.com", "guest@exa_mple.com"] {
            let refused = await kind.respond(to: req("POST", "/email", form: ["email": bad]), context: s)
            #expect(refused.status == 400, "`\(bad)` answered \(refused.status)")
        }
        #expect(await gate.allowed.isEmpty)
        let ok = await kind.respond(to: req("POST", "/email", form: ["email": " ana.b+wifi@example.com "]), context: s)
        #expect(ok.status == 200 && ok.body.contains("Signed in as ana.b+wifi@example.com"), "\(ok.body)")
        #expect(await gate.allowed == ["02:00:00:00:00:0a 198.51.100.10 30"])
        #expect(await kind.respond(to: req("GET", "/logoff"), context: s).status == 200)
        #expect(await gate.revoked == ["02:00:00:00:00:0a 198.51.100.10"])
        // With `domain`, only addresses there get in.
        let staff = try EmailPortal(settings: ["domain": "Staff.Example"])
        #expect(await staff.respond(to: req("POST", "/email", form: ["email": "ana@example.com"]), context: s).status == 403)
        #expect(await staff.respond(to: req("POST", "/email", form: ["email": "ana@staff.example"]), context: s).status == 200)
        #expect(await gate.allowed.count == 2)
        #expect(throws: PortalSettingError(kind: "email", setting: "domain", message: "expected a domain name such as example.com, found `@staff`")) {
            try EmailPortal(settings: ["domain": "@staff"])
        }
    }

    @Test func emailAddressShape() {
        for good in ["a@b.co", "first.last+tag@sub.example.org", "x@xn--bcher-kva.example", "O'Brien@example.ie"] {
            #expect(EmailAddress.isValid(good), "\(good)")
        }
        for bad in ["a@b", "a.@b.co", ".a@b.co", "a..b@b.co", "a@-b.co", "a@b-.co", "a@.co", "a@b..co", "a b@c.co", "a@b.co ",
                    "<a>@b.co", String(repeating: "a", count: 65) + "@b.co", "a@" + String(repeating: "b", count: 64) + ".co", "ü@b.co"] {
            #expect(!EmailAddress.isValid(bad), "\(bad)")
        }
    }

    /// The portal server validates from the same definitions as the topology parser: errors name the kind at fault.
    @Test func definitionsValidateAtRunTime() throws {
        #expect(throws: PortalSettingError(kind: "status-511", setting: "username", message: "missing; expected a non-empty string")) {
            try PortalRegistry.make("status-511", settings: ["password": "p"])
        }
        #expect(throws: PortalSettingError(kind: "form-login", setting: "login-status", message: "expected a whole number 400...599, found `teapot`")) {
            try PortalRegistry.make("form-login", settings: ["username": "u", "password": "p", "login-status": "teapot"])
        }
        #expect(throws: PortalSettingError(kind: "status-511", setting: "login-status", message: "expected a whole number 400...599, found `teapot`")) {
            try Status511Portal(settings: ["username": "u", "password": "p", "login-status": "teapot"])
        }
        #expect(throws: PortalSettingError.self) { try PortalRegistry.make("broken-slow", settings: ["delay-seconds": "soon"]) }
        #expect(throws: PortalSettingError.self) { try PortalRegistry.make("captive-api", settings: ["can-extend-session": "maybe"]) }
        #expect(throws: PortalSettingError.self) { try PortalRegistry.make("telepathy", settings: [:]) }
        // A portal switched at run time gets the topology's settings of another kind: those are ignored.
        _ = try PortalRegistry.make("click-through", settings: ["username": "u", "password": "p"])
    }

    /// Every definition is usable: unique names, defaults valid for their types, required settings without defaults;
    /// each kind starts from its required settings alone and refuses to start without any one of them.
    @Test(arguments: PortalRegistry.kinds.map { $0.name })
    func everyDefinitionIsConsistent(_ name: String) throws {
        let definition = try #require(PortalRegistry.definition(name))
        #expect(PortalRegistry.names.filter { $0 == name }.count == 1)
        #expect(Set(definition.settingNames).count == definition.settings.count)
        var minimal: [String: String] = [:]
        for setting in definition.settings {
            if let value = setting.defaultValue { #expect(setting.type.problem(value) == nil, "\(name).\(setting.name) default `\(value)`") }
            #expect(!(setting.required && setting.defaultValue != nil), "\(name).\(setting.name) is required and has a default")
            #expect(!setting.help.isEmpty)
            if setting.required { minimal[setting.name] = Self.sample(setting.type) }
            // The recorded kind reads its definition file when it starts: a real one.
            if name == RecordedPortal.name, setting.name == "definition" { minimal[setting.name] = HARRecordedPortalTests.definition }
        }
        _ = try PortalRegistry.make(name, settings: minimal)
        for key in minimal.keys {
            var without = minimal
            without[key] = nil
            #expect(throws: PortalSettingError(kind: name, setting: key, message: "missing; expected \(definition.setting(key)?.type.expected ?? "")")) {
                try PortalRegistry.make(name, settings: without)
            }
        }
        #expect(PortalCatalog.loginKinds.contains(name) == definition.login)
    }

    static func sample(_ type: PortalSettingType) -> String {
        switch type {
        case .text, .nonEmptyText: return "x"
        case .flag: return "true"
        case .integer(let range): return String(range.lowerBound)
        case .number(let range): return String(range.lowerBound)
        case .oneOf(let values): return values.first ?? ""
        case .domain: return "example.com"
        }
    }

    @Test func settingTypes() {
        #expect(PortalSettingType.integer(1...5).problem("5") == nil && PortalSettingType.integer(1...5).problem("6") == "expected a whole number 1...5, found `6`")
        #expect(PortalSettingType.number(0...3600).problem("0.5") == nil && PortalSettingType.number(0...3600).problem("nan") != nil)
        #expect(PortalSettingType.number(0...3600).problem("-1") == "expected a number 0...3600, found `-1`")
        #expect(PortalSettingType.oneOf(["a", "b"]).problem("c") == "expected one of a, b, found `c`")
        #expect(PortalSettingType.nonEmptyText.problem("") == "expected a non-empty string, found ``")
        #expect(PortalSettingType.text.problem("") == nil)
    }

    @Test func internetProbes() {
        #expect(InternetServer.respond(path: "/hotspot-detect.html", host: "captive.apple.com").body
                == "<HTML><HEAD><TITLE>Success</TITLE></HEAD><BODY>Success</BODY></HTML>")
        #expect(InternetServer.respond(path: "/generate_204", host: nil).status == 204)
    }

    @Test func neighbourTableParse() {
        let text = """
            IP address       HW type     Flags       HW address            Mask     Device
            198.51.100.11    0x1         0x0         00:00:00:00:00:00     *        lan0
            198.51.100.10    0x1         0x2         02:AA:00:00:00:0a     *        lan0
            """
        #expect(ProcNeighbourTable.parse(text, ip: "198.51.100.10") == "02:aa:00:00:00:0a")
        #expect(ProcNeighbourTable.parse(text, ip: "198.51.100.11") == nil)
        #expect(parseForm("a=1&b=two+words&c=%41") == ["a": "1", "b": "two words", "c": "A"])
    }
}

/// The https-only portal's pieces that need no network: where plain HTTP redirects, how a request read off TLS
/// is parsed and handed to the kind with the TCP peer as the client.
@Suite struct HTTPSOnlyPortalTests {
    @Test func plainHTTPRedirectsToHTTPS() {
        let base = "https://portal.cafe.example/"
        #expect(HTTPSRedirect.location(httpsURL: base, path: "/hotspot-detect.html", query: "", intercepted: true) == base)
        #expect(HTTPSRedirect.location(httpsURL: base, path: "/login", query: "a=1&b=2", intercepted: false)
                == "https://portal.cafe.example/login?a=1&b=2")
        #expect(HTTPSRedirect.location(httpsURL: "https://p.example:8443", path: "/", query: "", intercepted: false) == "https://p.example:8443/")
    }

    @Test func requestHeadParses() throws {
        let r = try #require(RawHTTPRequest.parseHead("POST /login?x=1 HTTP/1.1\r\nHost: portal.cafe.example:443\r\nContent-Length: 7"))
        #expect(r.method == "POST" && r.path == "/login" && r.query == "x=1")
        #expect(r.host == "portal.cafe.example" && r.header("content-length") == "7")
        #expect(RawHTTPRequest.parseHead("GET / HTTP/1.1\nHost: a") != nil, "bare LF line ends are accepted")
        #expect(RawHTTPRequest.parseHead("\u{16}\u{03}\u{01} not http") == nil)
        #expect(RawHTTPRequest.parseHead("GET / HTTP/1.1\r\nno colon here") == nil)
    }

    /// The kind sees the TLS peer as the client (so the gate lets that address through) and requests to the
    /// portal's name or its address as addressed to it (others as intercepted).
    @Test func tlsRequestsReachTheKindWithThePeer() async throws {
        let gate = RecordingGate()
        let sessions = PortalSessions(portalURL: "https://portal.cafe.example/", sessionSeconds: 30, gate: gate, neighbours: FixedNeighbours())
        let server = PortalServer(kind: try ClickThroughPortal(settings: [:]), context: sessions, portalHost: "portal.cafe.example",
                                  otherPortalHosts: ["198.51.100.1"])
        let page = await server.handle(RawHTTPRequest(method: "GET", path: "/", query: "", headers: [("Host", "portal.cafe.example")], body: []),
                                       peer: "198.51.100.10")
        #expect(page.status == 200 && page.body.contains("action=\"/accept\""))
        let other = await server.handle(RawHTTPRequest(method: "GET", path: "/", query: "", headers: [("Host", "www.example.com")], body: []),
                                        peer: "198.51.100.10")
        #expect(other.status == 302 && other.headers["Location"] == "https://portal.cafe.example/")
        let login = await server.handle(RawHTTPRequest(method: "POST", path: "/accept", query: "", headers: [("Host", "198.51.100.1")],
                                                       body: Array("accept=yes".utf8)), peer: "198.51.100.10")
        #expect(login.status == 200, "\(login.body)")
        #expect(await gate.allowed == ["02:00:00:00:00:0a 198.51.100.10 30"])
    }
}

/// The portals' log timestamps, made without ICU (`utcTimestamp`), read as Foundation's ISO8601DateFormatter writes
/// them (what the portals wrote before, and what a reader of their logs parses).
@Suite struct LogTimestampTests {
    @Test("utcTimestamp writes what ISO8601DateFormatter writes, for instants across the calendar's edges")
    func sameTextAsFoundation() {
        let formatter = ISO8601DateFormatter()
        // The epoch, a leap day, the last second of a year, the first of the next, 2038's 32-bit edge, an early
        // year (zero-padded), now.
        let instants = [0, 951_782_400, 1_798_761_599, 1_798_761_600, 2_147_483_647, 2_147_483_648, -2_000_000_000,
                        Int(Date().timeIntervalSince1970)]
        for seconds in instants {
            #expect(utcTimestamp(seconds) == formatter.string(from: Date(timeIntervalSince1970: Double(seconds))), "at \(seconds)")
        }
        #expect(utcTimestamp(951_782_400) == "2000-02-29T00:00:00Z")
    }
}
