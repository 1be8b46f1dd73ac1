import Foundation
import Testing
@testable import LabKit
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabTopology
import Portals

/// A portal context that remembers who signed in, with a neighbour table of two stations.
final class RecordingContext: PortalContext, @unchecked Sendable {
    let portalURL = "http://198.51.100.1:8080/"
    let sessionSeconds = 60
    private let lock = NSLock()
    private var logins: [String] = []
    let macs = ["198.51.100.10": "02:00:00:00:00:10", "198.51.100.11": "02:00:00:00:00:11"]
    var signedIn: [String] { lock.withLock { logins } }
    func login(clientIP: String) async throws { lock.withLock { logins.append(clientIP) } }
    func logoff(clientIP: String) async throws { lock.withLock { logins.removeAll { $0 == clientIP } } }
    func secondsRemaining(clientIP: String) async -> Int? { nil }
    func clientMAC(clientIP: String) async -> String? { macs[clientIP] }
}

/// The `recorded` kind on the Grand Hotel's definition: redirects the probe with the station's own MAC and IP,
/// serves fresh per-station tokens and cookies, refuses wrong credentials as recorded, and opens the gate only
/// when the station's own token and MAC come back with the right account.
@Suite("Recorded portal kind")
struct HARRecordedPortalTests {
    static let definition = HARImportTests.fixtures + "/grand-hotel-form.portal.json"
    static let settings = ["definition": definition, "username": "guest", "password": "guest-password"]

    static func get(_ path: String, _ ip: String, query: [String: String] = [:], intercepted: Bool = false) -> PortalRequest {
        PortalRequest(method: "GET", path: path, host: intercepted ? "captive.apple.com" : "198.51.100.1", query: query, clientIP: ip, intercepted: intercepted)
    }

    /// The hidden field `name` of a page.
    static func hidden(_ name: String, in html: String) -> String? {
        guard let range = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }

    static func signIn(_ ip: String, token: String?, mac: String?, password: String = "guest-password", cookie: String? = nil) -> PortalRequest {
        var form = ["username": "guest", "password": password]
        form["csrf_token"] = token
        form["client_mac"] = mac
        var request = PortalRequest(method: "POST", path: "/auth", host: "198.51.100.1", form: form, clientIP: ip, intercepted: false)
        if let cookie { request.cookies = ["GHSESSID": cookie] }
        return request
    }

    @Test func servesTheCaptureWithEachStationsOwnValues() async throws {
        let portal = try PortalRegistry.make("recorded", settings: Self.settings)
        let context = RecordingContext()
        let a = "198.51.100.10", b = "198.51.100.11"
        let probe = await portal.respond(to: Self.get("/hotspot-detect.html", a, intercepted: true), context: context)
        #expect(probe.status == 302)
        #expect(probe.headers["Location"] == "http://198.51.100.1:8080/login?client_mac=02:00:00:00:00:10&client_ip=198.51.100.10&ssid=GrandHotel&url=http%3A%2F%2Fcaptive.apple.com%2Fhotspot-detect.html",
                "the station's own MAC (in the capture's upper case) and IP: \(probe.headers)")
        let pageA = await portal.respond(to: Self.get("/login", a), context: context)
        let pageB = await portal.respond(to: Self.get("/login", b), context: context)
        let tokenA = try #require(Self.hidden("csrf_token", in: pageA.body))
        let tokenB = try #require(Self.hidden("csrf_token", in: pageB.body))
        #expect(tokenA.count == 20 && tokenA != tokenB && tokenA != "Zx81kQp2Lm93Tr5vBn47", "fresh per station: \(tokenA) \(tokenB)")
        #expect(Self.hidden("client_mac", in: pageA.body) == "02:00:00:00:00:10")
        let cookieA = try #require(pageA.headers["Set-Cookie"])
        #expect(cookieA.hasPrefix("GHSESSID=") && !cookieA.contains("8f3a9c2e7b1d4f60a5e9") && cookieA != pageB.headers["Set-Cookie"])
        let css = await portal.respond(to: Self.get("/static/style.css", a), context: context)
        #expect(css.status == 200 && css.headers["Content-Type"] == "text/css")
        let unknown = await portal.respond(to: Self.get("/favicon.ico", a), context: context)
        #expect(unknown.status == 404 && unknown.body.contains("not in the capture"))

        // Wrong credentials: the recorded refusal.
        let wrong = await portal.respond(to: Self.signIn(a, token: tokenA, mac: "02:00:00:00:00:10", password: "nope"), context: context)
        #expect(wrong.status == 401 && wrong.body.contains("Invalid e-mail or password"))
        // Another station's token, a foreign MAC, no token, a stale cookie: refused as recorded too.
        for request in [Self.signIn(a, token: tokenB, mac: "02:00:00:00:00:10"), Self.signIn(a, token: tokenA, mac: "02:00:00:00:00:11"),
                        Self.signIn(a, token: nil, mac: "02:00:00:00:00:10"),
                        Self.signIn(a, token: tokenA, mac: "02:00:00:00:00:10", cookie: "8f3a9c2e7b1d4f60a5e9")] {
            let refused = await portal.respond(to: request, context: context)
            #expect(refused.status == 401, "\(request.form) \(request.cookies)")
        }
        #expect(context.signedIn.isEmpty)
        // The station's own token and MAC with the account: the recorded sign-in, and the gate opens.
        let accepted = await portal.respond(to: Self.signIn(a, token: tokenA, mac: "02:00:00:00:00:10"), context: context)
        #expect(accepted.status == 200 && accepted.body.contains("Enjoy your stay, guest."), "\(accepted.body)")
        #expect(context.signedIn == [a])
        // The token is used up: a replay of the same post is refused.
        let replay = await portal.respond(to: Self.signIn(a, token: tokenA, mac: "02:00:00:00:00:10"), context: context)
        #expect(replay.status == 401)
        let logoff = await portal.respond(to: Self.get("/logoff", a), context: context)
        #expect(logoff.status == 200 && context.signedIn.isEmpty)
    }

    @Test func cookiesAreRequiredWhenTheDefinitionSaysSo() async throws {
        var recorded = try RecordedPortalDefinition.load(path: Self.definition)
        recorded.requireCookies = true
        let portal = RecordedPortal(recorded: recorded, settings: ["username": "guest", "password": "guest-password"])
        let context = RecordingContext()
        let ip = "198.51.100.10"
        let page = await portal.respond(to: Self.get("/login", ip), context: context)
        let token = try #require(Self.hidden("csrf_token", in: page.body))
        let setCookie: String = try #require(page.headers["Set-Cookie"])
        let pair: Substring = setCookie.split(separator: ";").first ?? ""
        let cookie = try #require(pair.split(separator: "=").last.map { String($0) })
        let without = await portal.respond(to: Self.signIn(ip, token: token, mac: "02:00:00:00:00:10"), context: context)
        #expect(without.status == 401)
        let with = await portal.respond(to: Self.signIn(ip, token: token, mac: "02:00:00:00:00:10", cookie: cookie), context: context)
        #expect(with.status == 200 && context.signedIn == [ip])
    }

    @Test func topologyResolvesAndChecksTheDefinition() throws {
        let topology = try TopologyParser.load(path: TopologyParserTests.root + "/topologies/recorded-grand-hotel.yaml")
        let portal = try #require(topology.hotspots.first?.gateway.portal)
        #expect(portal.kind == "recorded")
        #expect(portal.settings["definition"] == TopologyParserTests.root + "/Tests/Fixtures/har/grand-hotel-form.portal.json")
        // A broken definition: the topology's file:line:col at the setting, and the definition's own field.
        let folder = NSTemporaryDirectory() + "hotspotlab-recorded-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var broken = try RecordedPortalDefinition.load(path: Self.definition)
        broken.exchanges[1].role = "pagee"
        try broken.encoded().write(to: URL(fileURLWithPath: folder + "/portal.json"))
        let yaml = try String(contentsOfFile: TopologyParserTests.root + "/topologies/recorded-grand-hotel.yaml", encoding: .utf8)
            .replacingOccurrences(of: "../Tests/Fixtures/har/grand-hotel-form.portal.json", with: "portal.json")
        do {
            _ = try TopologyParser.parse(yaml, file: folder + "/t.yaml")
            Issue.record("a broken definition parsed")
        } catch let error as TopologyError {
            let line = (yaml.components(separatedBy: "\n").firstIndex { $0.contains("definition: portal.json") } ?? -1) + 1
            #expect(error.line == line && error.column == 21 && error.field == "hotspots[0].gateway.portal.definition", "\(error)")
            #expect(error.message.contains("exchanges[1].role: expected one of probe, page, asset, sign-in, refusal, found `pagee`"), "\(error)")
        }
        try Data("{\n  \"format\": \"x\",\n  \"source\" \"y\"\n}\n".utf8).write(to: URL(fileURLWithPath: folder + "/portal.json"))
        do {
            _ = try TopologyParser.parse(yaml, file: folder + "/t.yaml")
            Issue.record("a definition that is not JSON parsed")
        } catch let error as TopologyError {
            #expect(error.message.contains("portal.json: not JSON at line 3, column 12"), "\(error)")
        }
    }

    /// `hotspot-lab portal import`'s output: the definition and a topology around it that parses as written.
    @Test func importWritesADefinitionAndATopologyThatParses() throws {
        let folder = NSTemporaryDirectory() + "hotspotlab-import-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let output = try PortalImport.run(har: HARImportTests.fixtures + "/grand-hotel-form.har", out: folder, keep: [])
        #expect(output.report.contains("client MAC: `3C:22:FB:12:34:56` -> `{{mac}}`"), "\(output.report)")
        let topology = try TopologyParser.load(path: output.topologyPath)
        let portal = try #require(topology.hotspots.first?.gateway.portal)
        #expect(portal.kind == "recorded" && portal.settings["definition"] == folder + "/portal.json")
        #expect(portal.settings["username"] == "guest" && portal.settings["password"] == "guest-password")
        #expect(topology.stations.first?.helpers.first?.contains("--account guest:guest-password") == true)
        #expect(PortalImport.defaultOutput(for: "/x/grand-hotel.har") == "portals-local/grand-hotel")
    }

    /// The scenario `portal:` step switches to a recorded portal: its definition from the scenario's folder, checked now.
    @Test func scenarioPortalStepReadsTheDefinition() throws {
        let file = TopologyParserTests.root + "/topologies/scenarios/s.yaml"
        let scenario = try ScenarioParser.parse("""
            topology: ../recorded-grand-hotel.yaml
            steps:
              - portal: {kind: recorded, settings: {definition: ../../Tests/Fixtures/har/grand-hotel-form.portal.json}}
            """, file: file)
        let step = try #require(scenario.steps.first?.action as? PortalStep)
        #expect(step.settings["definition"] == TopologyParserTests.root + "/Tests/Fixtures/har/grand-hotel-form.portal.json")
        #expect(throws: (any Error).self) {
            try ScenarioParser.parse("topology: ../recorded-grand-hotel.yaml\nsteps:\n  - portal: {kind: recorded, settings: {definition: missing.json}}\n", file: file)
        }
    }
}
