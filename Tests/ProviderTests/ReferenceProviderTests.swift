#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HotspotProtocol
import HotspotSystem
import Testing
import TestSupport

/// The built reference providers as hotspotd runs them: a process with the provider environment, its `@main`.
@Suite("Reference providers as processes", .serialized)
struct ReferenceProviderTests {
    func launch(_ product: String, _ arguments: [String], socket: String, role: String, identifier: String,
                extra: [String: String] = [:]) throws -> Process
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try BuildProducts.locate(product))
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["HOTSPOT_HELPER_SOCKET"] = socket
        environment["HOTSPOT_HELPER_IDENTIFIER"] = identifier
        environment["HOTSPOT_PROVIDER_ROLE"] = role
        environment["HOTSPOT_APP"] = "com.hotspotlab.portal"
        for (k, v) in extra { environment[k] = v }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// register, start, `before`, `command`, stop: what the provider sent.
    func session(_ d: FakeDaemon, _ command: JSON, stop reason: String, before: [JSON] = []) throws -> [JSON] {
        try d.accept()
        var seen = [try d.read()]
        try d.send(["type": "registered", "identifier": seen[0]["identifier"] ?? "", "version": 1])
        try d.send(["type": "start"])
        seen += try d.read(until: "started")
        for c in before {
            try d.send(c)
            seen += try d.read(until: "response")
        }
        try d.send(command)
        seen += try d.read(until: "response")
        try d.send(["type": "stop", "reason": .string(reason)])
        seen += try d.read(until: "stopped")
        return seen
    }

    @Test("each evaluation provider: registers as the evaluation provider of its app, claims its configured SSID and not another, exits 0 after stop",
          arguments: ["portal", "voucher", "captive-api"])
    func evaluation(vendor: String) async throws {
        let d = try FakeDaemon("ref-eval-\(vendor)")
        let app = "com.hotspotlab.\(vendor)"
        let p = try launch("hotspot-provider-\(vendor)-evaluation", ["--network", "Cafe Lumiere"], socket: d.path,
                           role: "evaluationProvider", identifier: app + ".evaluation", extra: ["HOTSPOT_APP": app])
        let seen = try await d.run { d -> [JSON] in
            var seen = try self.session(d, commandJSON(id: 1, type: 2, ssid: "Cafe Lumiere"), stop: "idleTimeout", before: [
                commandJSON(id: 2, type: 2, ssid: "Airport"),
            ])
            seen.removeAll { $0["type"] == "started" }
            return seen
        }
        p.waitUntilExit()
        #expect(seen[0]["role"] == "evaluationProvider")
        #expect(seen[0]["app"] == .string(app))
        #expect(seen[0]["identifier"] == .string(app + ".evaluation"))
        #expect(seen[1]["command"]?.intValue == 2)
        #expect(seen[1]["network"]?["confidence"]?.intValue == 0)
        #expect(seen[2]["command"]?.intValue == 1)
        #expect(seen[2]["network"]?["confidence"]?.intValue == 2)
        #expect(seen.last == ["type": "stopped"])
        #expect(p.terminationReason == .exit)
        #expect(p.terminationStatus == 0)
    }

    @Test("each authentication provider runs its helper's logic (no portal reachable, no API announced), exits 0 after stop",
          arguments: [("portal", 5, "failure"), ("voucher", 5, "failure"), ("captive-api", 3, "unsupportedNetwork")])
    func authentication(vendor: String, commandType: Int, expected: String) async throws {
        let d = try FakeDaemon("ref-auth-\(vendor)")
        let app = "com.hotspotlab.\(vendor)"
        let p = try launch("hotspot-provider-\(vendor)-authentication", ["--http-timeout", "2"], socket: d.path,
                           role: "authenticationProvider", identifier: app + ".authentication",
                           extra: ["HOTSPOT_APP": app, "HOTSPOT_PROBE_URL": "http://127.0.0.1:1/hotspot-detect.html",
                                   "HOTSPOT_DHCP_LEASE": d.directory + "/no-lease"])
        let seen = try await d.run { d in try self.session(d, commandJSON(id: 5, type: commandType, ssid: "Cafe Lumiere"), stop: "configurationDisabled") }
        p.waitUntilExit()
        #expect(seen[0]["role"] == "authenticationProvider")
        #expect(seen[2]["command"]?.intValue == 5)
        #expect(seen[2]["resultName"] == .string(expected))
        #expect(seen.last == ["type": "stopped"])
        #expect(p.terminationStatus == 0)
    }

    @Test("a pair in Apple's spellings only, with @main (Tests/Fixtures/AppleProviderPair), runs as hotspotd launches it",
          arguments: [("evaluation", "evaluationProvider", 2, "success"), ("authentication", "authenticationProvider", 3, "success")])
    func appleFixture(kind: String, role: String, commandType: Int, expected: String) async throws {
        let d = try FakeDaemon("apple-\(kind)")
        let p = try launch("hotspot-apple-\(kind)-fixture", [], socket: d.path, role: role, identifier: "com.example.cafe.\(kind)",
                           extra: ["HOTSPOT_APP": "com.example.cafe"])
        let seen = try await d.run { d in try self.session(d, commandJSON(id: 9, type: commandType, ssid: "Cafe Lumiere"), stop: "userInitiated") }
        p.waitUntilExit()
        #expect(seen[0]["role"] == .string(role))
        #expect(seen[0]["app"] == "com.example.cafe")
        #expect(seen[2]["command"]?.intValue == 9)
        #expect(seen[2]["resultName"] == .string(expected))
        if kind == "evaluation" { #expect(seen[2]["network"]?["confidence"]?.intValue == 2) }
        #expect(seen.last == ["type": "stopped"])
        #expect(p.terminationStatus == 0)
    }

    @Test("a role that is not the extension's: exit status 2 before connecting")
    func wrongRole() throws {
        let p = try launch("hotspot-provider-portal-evaluation", [], socket: "/nonexistent/helper.sock",
                           role: "authenticationProvider", identifier: "com.hotspotlab.portal.evaluation")
        p.waitUntilExit()
        #expect(p.terminationStatus == 2)
    }
}
