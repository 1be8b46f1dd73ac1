import Foundation
import Testing
@testable import LabKit
import Portals

/// HAR captures: clear errors naming the entry and field; the import finds the probe, the portal, the sign-in and
/// the refusal, and lists and removes every personal value.
@Suite("HAR import")
struct HARImportTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/har").path

    static func har(_ name: String) throws -> HARDocument { try HARDocument.read(path: "\(fixtures)/\(name).har") }

    static func error(_ text: String) -> HARError? {
        do {
            _ = try HARDocument.parse(Data(text.utf8), file: "x.har")
            return nil
        } catch let error as HARError {
            return error
        } catch {
            return nil
        }
    }

    static let goodEntry = """
        {"request": {"method": "GET", "url": "http://captive.apple.com/hotspot-detect.html", "headers": []},
         "response": {"status": 302, "headers": [{"name": "Location", "value": "http://portal.example/"}], "content": {"mimeType": "text/html", "text": ""}}}
        """

    @Test func badInputNamesTheEntryAndField() throws {
        #expect(Self.error("<html>not json</html>")?.message.hasPrefix("not JSON") == true)
        #expect(Self.error("{\"log\": {\"version\": \"1.1\", \"entries\": []}}").map { "\($0.field): \($0.message)" }?
            .hasPrefix("log.version: HAR version 1.1 is not read") == true)
        #expect(Self.error("{\"log\": {\"version\": \"1.2\", \"entries\": []}}").map { "\($0.field): \($0.message)" }?
            .hasPrefix("log.entries: no entries") == true)
        let noStatus = Self.error("{\"log\": {\"version\": \"1.2\", \"entries\": [\(Self.goodEntry), {\"request\": {\"method\": \"GET\", \"url\": \"http://a.example/\", \"headers\": []}, \"response\": {\"headers\": [], \"content\": {}}}]}}")
        #expect(noStatus?.field == "log.entries[1].response.status" && noStatus?.message == "missing", "\(String(describing: noStatus))")
        let badType = Self.error("{\"log\": {\"version\": \"1.2\", \"entries\": [{\"request\": {\"method\": \"GET\", \"url\": \"http://a.example/\", \"headers\": []}, \"response\": {\"status\": \"ok\", \"headers\": [], \"content\": {}}}]}}")
        #expect(badType?.field == "log.entries[0].response.status" && badType?.message == "expected a whole number", "\(String(describing: badType))")
        let relative = Self.error("{\"log\": {\"version\": \"1.2\", \"entries\": [{\"request\": {\"method\": \"GET\", \"url\": \"/x\", \"headers\": []}, \"response\": {\"status\": 200, \"headers\": [], \"content\": {}}}]}}")
        #expect(relative?.field == "log.entries[0].request.url", "\(String(describing: relative))")
        // A base64 body: text is decoded; binary is refused, naming the entry.
        let text = Data("<p>hi</p>".utf8).base64EncodedString()
        let decoded = try HARDocument.parse(Data("{\"log\": {\"version\": \"1.2\", \"entries\": [{\"request\": {\"method\": \"GET\", \"url\": \"http://a.example/\", \"headers\": []}, \"response\": {\"status\": 200, \"headers\": [], \"content\": {\"text\": \"\(text)\", \"encoding\": \"base64\"}}}]}}".utf8))
        #expect(decoded.log.entries[0].response.content.text == "<p>hi</p>")
        let binary = Data([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe, 0x00]).base64EncodedString()
        let withBody = { (mime: String) in
            "{\"log\": {\"version\": \"1.2\", \"entries\": [\(Self.goodEntry), {\"request\": {\"method\": \"GET\", \"url\": \"http://portal.example/logo.png\", \"headers\": []}, \"response\": {\"status\": 200, \"headers\": [], \"content\": {\"mimeType\": \"\(mime)\", \"text\": \"\(binary)\", \"encoding\": \"base64\"}}}]}}"
        }
        let page = Self.error(withBody("application/octet-stream"))
        #expect(page?.field == "log.entries[1].response.content.text" && page?.message.contains("not UTF-8 text") == true, "\(String(describing: page))")
        // A binary image is an asset the text-only portal cannot serve: kept out, and the import says so.
        let image = try HARDocument.parse(Data(withBody("image/png").utf8))
        #expect(image.log.entries[1].response.content.omittedBytes == 7 && image.log.entries[1].response.content.text == nil)
        let imported = try HARImport.convert(image, source: "i.har")
        #expect(!imported.definition.exchanges.contains { $0.request.path == "/logo.png" })
        #expect(imported.warnings.contains { $0.hasPrefix("log.entries[1]: a binary image/png of 7 bytes is not kept") }, "\(imported.warnings)")
    }

    @Test func truncatedAndHugeFilesAreRefused() throws {
        #expect(throws: HARError.self) { try Self.har("truncated") }
        do { _ = try Self.har("truncated") } catch let error as HARError {
            let lines = try String(contentsOfFile: "\(Self.fixtures)/truncated.har", encoding: .utf8).components(separatedBy: "\n")
            #expect(error.description.contains("truncated.har: not JSON at line \(lines.count), column \((lines.last?.utf8.count ?? 0) + 1)"), "\(error)")
        }
        // 50 MB (sparse: nothing is written, the size is refused before reading).
        let path = NSTemporaryDirectory() + "hotspotlab-huge-\(UUID().uuidString).har"
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        defer { unlink(path) }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 50 * 1024 * 1024)
        try handle.close()
        do {
            _ = try HARDocument.read(path: path)
            Issue.record("a 50 MB file was read")
        } catch let error as HARError {
            #expect(error.message.contains("the file is 50 MB"), "\(error)")
        }
    }

    @Test func noProbeFound() throws {
        let document = try HARDocument.parse(Data("{\"log\": {\"version\": \"1.2\", \"entries\": [{\"request\": {\"method\": \"GET\", \"url\": \"http://news.example/\", \"headers\": []}, \"response\": {\"status\": 200, \"headers\": [], \"content\": {\"text\": \"news\"}}}]}}".utf8))
        do {
            _ = try HARImport.convert(document, source: "x.har")
            Issue.record("imported a capture without a probe")
        } catch let error as HARError {
            #expect(error.field == "log.entries" && error.message.hasPrefix("no probe found"), "\(error)")
        }
    }

    /// The Done-when capture: a form portal with a token, a cookie and the client MAC in the query.
    @Test func formPortalImportsWithItsPersonalValuesListedAndRemoved() throws {
        let result = try HARImport.convert(try Self.har("grand-hotel-form"), source: "grand-hotel-form.har")
        let found = Dictionary(result.personal.map { ($0.value, $0) }, uniquingKeysWith: { a, _ in a })
        let expected: [(String, String, String)] = [
            ("3C:22:FB:12:34:56", "client MAC", "{{mac}}"), ("10.20.0.57", "client IP", "{{ip}}"),
            ("8f3a9c2e7b1d4f60a5e9", "cookie", "{{cookie-ghsessid}}"), ("Zx81kQp2Lm93Tr5vBn47", "token", "{{token-csrf-token}}"),
            ("jane.doe@mail.example", "credential", "{{setting:username}}"), ("Sunset-412", "credential", "{{setting:password}}"),
            ("Sunrise-411", "credential (refused)", "wrong-password"), ("reception@grandhotel.example", "e-mail", "person1@example.com"),
        ]
        for (value, kind, replacement) in expected {
            #expect(found[value]?.kind == kind && found[value]?.replacement == replacement, "\(value): \(String(describing: found[value]))")
        }
        let written = String(decoding: try result.definition.encoded(), as: UTF8.self)
        for (value, _, _) in expected {
            #expect(!written.contains(value), "\(value) is in the definition")
            #expect(!written.contains(Template.urlEncode(value)), "\(value) (encoded) is in the definition")
        }
        #expect(result.warnings.allSatisfy { !$0.contains("still in the definition") }, "\(result.warnings)")
        #expect(result.settings == ["username": "guest", "password": "guest-password"])
        #expect(result.probeEntry == 0 && result.signInEntry == 4 && result.refusalEntry == 3)
        let roles = result.definition.exchanges.map { "\($0.role) \($0.request.method) \($0.request.path) \($0.response.status)" }
        #expect(roles == ["probe GET * 302", "page GET /login 200", "asset GET /static/style.css 200", "refusal POST /auth 401", "sign-in POST /auth 200"])
        let signIn = try #require(result.definition.signIn)
        #expect(signIn.request.fields == ["csrf_token": "{{token-csrf-token}}", "client_mac": "{{mac}}",
                                          "username": "{{setting:username}}", "password": "{{setting:password}}"])
        #expect(result.definition.probe?.response.headers["Location"]
            == "{{portal}}/login?client_mac={{mac}}&client_ip={{ip}}&ssid=GrandHotel&url=http%3A%2F%2Fcaptive.apple.com%2Fhotspot-detect.html")
        // --keep leaves a listed value on purpose.
        let kept = try HARImport.convert(try Self.har("grand-hotel-form"), source: "g.har", keep: ["reception@grandhotel.example"])
        #expect(kept.personal.first { $0.value == "reception@grandhotel.example" }?.kept == true)
        #expect(String(decoding: try kept.definition.encoded(), as: UTF8.self).contains("reception@grandhotel.example"))
    }

    /// The definition the CI scenario serves is what the import makes of the fixture today.
    @Test func shippedDefinitionIsTheImportOfTheFixture() throws {
        let result = try HARImport.convert(try Self.har("grand-hotel-form"), source: "\(Self.fixtures)/grand-hotel-form.har")
        let shipped = try RecordedPortalDefinition.load(path: "\(Self.fixtures)/grand-hotel-form.portal.json")
        #expect(shipped == result.definition, "regenerate: hotspot-lab portal import Tests/Fixtures/har/grand-hotel-form.har --out DIR; cp DIR/portal.json Tests/Fixtures/har/grand-hotel-form.portal.json")
    }

    @Test func twoHostChainWisprAndJavaScriptOnly() throws {
        let chain = try HARImport.convert(try Self.har("two-hosts-chain"), source: "c.har")
        #expect(chain.definition.portalHosts == ["gw.venue.example", "login.provider.example"])
        #expect(chain.definition.exchanges.first { $0.request.path == "/start" }?.response.headers["Location"] == "{{portal}}/portal?sid={{session-sid}}")
        #expect(chain.definition.variables.first { $0.name == "mac" }?.alphabet == "AA-BB-CC-DD-EE-FF")
        #expect(chain.definition.signIn?.request.fields["sid"] == "{{session-sid}}")
        let wispr = try HARImport.convert(try Self.har("wispr"), source: "w.har")
        #expect(wispr.definition.probe?.response.body.contains("<LoginURL>{{portal}}/wispr/login</LoginURL>") == true)
        #expect(wispr.definition.signIn?.request.fields["Password"] == "{{setting:password}}")
        let js = try HARImport.convert(try Self.har("javascript-only"), source: "j.har")
        #expect(js.definition.exchanges.map(\.role) == ["probe", "page", "asset", "sign-in"])
        #expect(js.warnings.contains { $0.contains("carries no credential field") })
    }

    @Test func matcherAndTemplates() {
        let matcher = RequestMatcher([
            .init(method: "GET", path: "/login"),
            .init(method: "POST", path: "/portal/{{session-sid}}/auth"),
            .init(method: "GET", path: "/step", fields: ["n": "1"]),
            .init(method: "GET", path: "/step", fields: ["n": "2"]),
        ])
        #expect(matcher.match(method: "get", path: "/login", fields: ["x": "y"]) == 0)
        #expect(matcher.match(method: "POST", path: "/login", fields: [:]) == nil)
        #expect(matcher.match(method: "POST", path: "/portal/abc123/auth", fields: [:]) == 1)
        #expect(matcher.match(method: "GET", path: "/step", fields: ["n": "2"]) == 3)
        #expect(matcher.match(method: "GET", path: "/step", fields: ["n": "3"]) == nil)
        #expect(Template.match("{{portal}}/x?mac={{mac|url}}", "http://a/x?mac=02%3A00") == ["portal": "http://a", "mac": "02:00"])
        #expect(Template.render("m={{mac|url}}&i={{ip}}&k={{other}}") { ["mac": "02:00", "ip": "10.0.0.1"][$0] } == "m=02%3A00&i=10.0.0.1&k={{other}}")
    }
}
