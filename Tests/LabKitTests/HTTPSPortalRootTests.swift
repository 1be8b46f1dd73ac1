import Foundation
import HotspotSystem
import Netlink
import Testing
import TestSupport
@testable import LabKit
@testable import LabTopology

/// The https-only portal on the host kernel (root: netns, veth, nftables; no wifi): the station's plain HTTP is only
/// redirected to https://portal.cafe.example/, which the hotspot's dnsmasq resolves to the gateway; TLS on port 443
/// passes the gate before login; the certificate verifies against the lab CA only; signing in over TLS lets the
/// station's own address through the gate (the portal terminates TLS itself).
@Suite("HTTPS-only portal (root, host kernel, veth for the radio)", .serialized, .requiresRoot)
struct HTTPSPortalRootTests {
    /// curl in the station namespace for https://portal.cafe.example/ (resolved through the lab's DNS first).
    func https(_ client: LabClient, _ path: String, ca: String?, form: [String] = []) throws -> LabClient.Reply {
        let name = PortalTLS.hostName(hotspot: client.running.hotspot.name)
        guard let ip = try client.resolve(name) else { throw SystemError("resolve", name, reason: "no answer from \(client.gateway)") }
        var args = ["-sS", "-o", "-", "-w", "\n%{http_code}", "--max-time", "30", "--noproxy", "*", "--resolve", "\(name):443:\(ip)"]
        if let ca { args += ["--cacert", ca, "--capath", "/nonexistent"] }
        for field in form { args += ["--data-urlencode", field] }
        args.append("https://\(name)\(path)")
        return LabClient.reply(try client.run("curl", args))
    }

    func redirect(_ client: LabClient, _ url: String) throws -> String {
        try client.run("curl", ["-sS", "-o", "/dev/null", "-w", "%{redirect_url}", "--max-time", "30", "--noproxy", "*", url]).stdout
    }

    @Test("root: https-only form-login: plain HTTP redirects to https://portal.cafe.example/, TLS verifies with the lab CA, sign-in over TLS opens the gate for the station")
    func httpsOnlyFormLogin() throws {
        let settings = ["username": "guest", "password": "croissant", "https-only": "true"]
        try withLab(try labTopology(kind: "form-login", settings: settings, session: 30)) { client in
            _ = try client.dhcp()
            let ca = PortalTLS.caFile(labLogDirectory: client.lab.logDirectory)
            #expect(FileManager.default.fileExists(atPath: ca))
            #expect(try client.resolve("portal.cafe.example") == client.gateway)
            // Plain HTTP: only redirects (the probe to the portal's entry; the portal's own port keeps the path).
            #expect(try redirect(client, "http://\(client.internetIP)/hotspot-detect.html") == "https://portal.cafe.example/")
            #expect(try redirect(client, "http://\(client.gateway):8080/login?x=1") == "https://portal.cafe.example/login?x=1")
            let plainPost = try client.get("http://\(client.gateway):8080/login", form: ["username=guest", "password=croissant"])
            #expect(plainPost.status == 302, "a plain-HTTP sign-in must not be served: \(plainPost.status) \(plainPost.body)")
            #expect(try client.appleProbe.status == 302, "a sign-in over plain HTTP must not open the gate")
            // TLS: the lab CA verifies the portal; the system store does not know it.
            let page = try https(client, "/", ca: ca)
            #expect(page.status == 200 && page.body.contains("<form method=\"post\" action=\"/login\">"), "\(page.exit) \(page.stderr) \(page.body)")
            let untrusted = try https(client, "/", ca: nil)
            #expect(untrusted.exit == 60, "curl without the lab CA must fail verification (exit 60): \(untrusted.exit) \(untrusted.stderr)")
            // By address, the certificate names the gateway too.
            let byAddress = try client.run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", "--cacert", ca,
                                                    "https://\(client.gateway)/"])
            #expect(byAddress.stdout == "200", "\(byAddress.stdout) \(byAddress.stderr)")
            // Wrong password over TLS: refused, still captive.
            let refused = try https(client, "/login", ca: ca, form: ["username=guest", "password=baguette"])
            #expect(refused.status == 401)
            try client.expectCaptiveHTTPS("after a wrong sign-in")
            // Sign in over TLS: the gate lets the station's own address and MAC through.
            let ok = try https(client, "/login", ca: ca, form: ["username=guest", "password=croissant"])
            #expect(ok.status == 200 && ok.body.contains("You are online"), "\(ok.status) \(ok.body)")
            try client.expectOnline("after signing in over TLS")
            let portalLog = readSmallFile(client.lab.logDirectory + "/cafe/portal.log") ?? ""
            let lease = try client.run("ip", ["-4", "-o", "addr", "show", "dev", client.running.stationInterface!]).stdout
            let stationIP = lease.split(separator: " ").first { $0.hasPrefix("198.51.100.") }.map { String($0.split(separator: "/")[0]) } ?? "?"
            #expect(portalLog.contains("[tls] \(stationIP) POST /login -> 200"), "the portal saw the station as the TLS peer: \(portalLog)")
            #expect(portalLog.contains("login \(stationIP) "), "\(portalLog)")
        }
    }

    @Test("root: switching a running portal to https-only (the scenario portal: step) and back")
    func switchToHTTPSOnlyAndBack() throws {
        try withLab(try labTopology(kind: "click-through", session: 30)) { client in
            _ = try client.dhcp()
            #expect(try redirect(client, "http://\(client.internetIP)/") == "http://198.51.100.1:8080/")
            // Before the switch nobody listens on 443: the gate passes it, the gateway resets.
            let closed = try client.run("curl", ["-sS", "-o", "/dev/null", "--max-time", "30", "https://\(client.gateway)/"])
            #expect(closed.status == .exited(7), "\(closed.status) \(closed.stderr)")
            try client.lab.switchPortal(hotspot: "cafe", kind: "click-through", settings: ["https-only": "true"])
            #expect(try redirect(client, "http://\(client.internetIP)/") == "https://portal.cafe.example/")
            let ca = PortalTLS.caFile(labLogDirectory: client.lab.logDirectory)
            let ok = try https(client, "/accept", ca: ca, form: ["accept=yes"])
            #expect(ok.status == 200, "\(ok.status) \(ok.body) \(ok.stderr)")
            try client.expectOnline("after accepting over TLS")
            #expect(throws: SystemError.self) { try client.lab.switchPortal(hotspot: "cafe", kind: "click-through", settings: ["https-only": "sometimes"]) }
            try client.lab.switchPortal(hotspot: "cafe", kind: "click-through", settings: ["https-only": "false"])
            let plain = try client.run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", "http://\(client.gateway):8080/"]).stdout
            #expect(plain == "200", "back to plain HTTP: \(plain)")
        }
    }
}

extension LabClient {
    /// Captive behind an https-only portal: probes redirected to its https:// entry, other traffic rejected.
    func expectCaptiveHTTPS(_ comment: String) throws {
        let apple = try appleProbe
        #expect(apple.status == 302, "\(comment): apple probe \(apple.status)")
        let location = try run("curl", ["-sS", "-o", "/dev/null", "-w", "%{redirect_url}", "--max-time", "30",
                                        "http://\(internetIP)/hotspot-detect.html"]).stdout
        #expect(location == PortalTLS.url(hotspot: running.hotspot.name), "\(comment): redirect to \(location)")
        #expect(!(try ping(internetIP)), "\(comment): ping \(internetIP) should be rejected")
    }
}
