import Foundation
import HotspotSystem
import Testing
import TestSupport
@testable import LabKit
@testable import LabTopology

/// A real portal that requires its session cookie, on the host kernel (root: netns, veth, nftables; no wifi):
/// https-only form-login with `session-cookie` and `csrf-token`, served by hotspot-portal; curl in the station
/// namespace is refused without the cookie and signs in with it.
@Suite("Session-cookie portal (root, host kernel, veth for the radio)", .serialized, .requiresRoot)
struct SessionCookieRootTests {
    /// curl for https://portal.cafe.example/PATH with `extra` arguments; the headers and body on stdout.
    func https(_ client: LabClient, _ path: String, _ extra: [String]) throws -> (status: Int, head: String, body: String, stderr: String) {
        let name = PortalTLS.hostName(hotspot: client.running.hotspot.name)
        guard let ip = try client.resolve(name) else { throw SystemError("resolve", name, reason: "no answer from \(client.gateway)") }
        let ca = PortalTLS.caFile(labLogDirectory: client.lab.logDirectory)
        let result = try client.run("curl", ["-sS", "-D", "-", "-o", "-", "-w", "\n%{http_code}", "--max-time", "30", "--noproxy", "*",
                                             "--resolve", "\(name):443:\(ip)", "--cacert", ca, "--capath", "/nonexistent"]
                                        + extra + ["https://\(name)\(path)"])
        let text = result.stdout
        let status = Int(text.split(separator: "\n").last ?? "") ?? 0
        let split = text.range(of: "\r\n\r\n")
        let head = split.map { String(text[..<$0.lowerBound]) } ?? ""
        let body = split.map { String(text[$0.upperBound...]) } ?? text
        return (status, head, body, result.stderr)
    }

    @Test("root: https-only form-login with session-cookie and csrf-token: the page sets a Secure, HttpOnly cookie; the sign-in without it is refused, with it the gate opens")
    func cookieRequiredOverHTTPS() throws {
        let settings = ["username": "guest", "password": "croissant", "https-only": "true", "session-cookie": "true", "csrf-token": "true"]
        try withLab(try labTopology(kind: "form-login", settings: settings, session: 30)) { client in
            _ = try client.dhcp()
            let jar = client.lab.logDirectory + "/curl-cookies.txt"
            let page = try https(client, "/", ["-c", jar])
            #expect(page.status == 200, "\(page.stderr) \(page.body)")
            let setCookie = page.head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie:") }.map(String.init) ?? ""
            #expect(setCookie.contains("hotspotlab_session=") && setCookie.hasSuffix("Path=/; Secure; HttpOnly"), "\(page.head)")
            let marker = "name=\"csrf_token\" value=\""
            let start = try #require(page.body.range(of: marker), "\(page.body)")
            let csrf = String(page.body[start.upperBound...].prefix { $0 != "\"" })
            let account = ["--data-urlencode", "username=guest", "--data-urlencode", "password=croissant", "--data-urlencode", "csrf_token=\(csrf)"]
            // The form and the token, no cookie: refused, still captive.
            let bare = try https(client, "/login", account)
            #expect(bare.status == 403 && bare.body.contains("session cookie"), "\(bare.status) \(bare.body)")
            try client.expectCaptiveHTTPS("after a sign-in without the cookie")
            // The cookie, no token: refused.
            let noToken = try https(client, "/login", ["-b", jar, "--data-urlencode", "username=guest", "--data-urlencode", "password=croissant"])
            #expect(noToken.status == 403 && noToken.body.contains("Form expired"), "\(noToken.status) \(noToken.body)")
            try client.expectCaptiveHTTPS("after a sign-in without the token")
            // Both: signed in.
            let ok = try https(client, "/login", ["-b", jar] + account)
            #expect(ok.status == 200 && ok.body.contains("You are online"), "\(ok.status) \(ok.body)")
            try client.expectOnline("after signing in with the cookie")
            let log = readSmallFile(client.lab.logDirectory + "/cafe/portal.log") ?? ""
            #expect(log.contains("POST /login from ") && log.contains("refused: no session cookie") && log.contains("refused: no CSRF token"), "\(log)")
        }
    }

    @Test("root: a session-cookie setting the kind cannot take stops the switch with the setting named")
    func refusedOnASwitch() throws {
        try withLab(try labTopology(kind: "click-through", session: 30)) { client in
            #expect(throws: SystemError.self) {
                try client.lab.switchPortal(hotspot: "cafe", kind: "broken-empty", settings: ["session-cookie": "true"])
            }
            do {
                try client.lab.switchPortal(hotspot: "cafe", kind: "click-through", settings: ["csrf-token": "true"])
                Issue.record("csrf-token without session-cookie was accepted")
            } catch {
                #expect("\(error)".contains("setting `csrf-token`: the CSRF token is tied to the session cookie"), "\(error)")
            }
        }
    }
}
