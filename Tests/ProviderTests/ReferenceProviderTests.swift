#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HotspotProtocol
import HotspotSystem
import Testing

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

    /// register, start, `command`, stop: what the provider sent.
    func session(_ d: FakeDaemon, _ command: JSON, stop reason: String) throws -> [JSON] {
        try d.accept()
        var seen = [try d.read()]
        try d.send(["type": "registered", "identifier": seen[0]["identifier"] ?? "", "version": 1])
        try d.send(["type": "start"])
        seen += try d.read(until: "started")
        try d.send(command)
        seen += try d.read(until: "response")
        try d.send(["type": "stop", "reason": .string(reason)])
        seen += try d.read(until: "stopped")
        return seen
    }

    @Test("hotspot-provider-portal-evaluation: registers as the evaluation provider, claims its configured SSID, exits 0 after stop")
    func evaluation() async throws {
        let d = try FakeDaemon("ref-eval")
        let p = try launch("hotspot-provider-portal-evaluation", ["--network", "Cafe Lumiere"], socket: d.path,
                           role: "evaluationProvider", identifier: "com.hotspotlab.portal.evaluation")
        let seen = try await d.run { d in try self.session(d, commandJSON(id: 1, type: 2, ssid: "Cafe Lumiere"), stop: "idleTimeout") }
        p.waitUntilExit()
        #expect(seen[0]["role"] == "evaluationProvider")
        #expect(seen[0]["app"] == "com.hotspotlab.portal")
        #expect(seen[0]["identifier"] == "com.hotspotlab.portal.evaluation")
        #expect(seen[1] == ["type": "started", "ok": true])
        #expect(seen[2]["command"]?.intValue == 1)
        #expect(seen[2]["network"]?["confidence"]?.intValue == 2)
        #expect(seen.last == ["type": "stopped"])
        #expect(p.terminationReason == .exit)
        #expect(p.terminationStatus == 0)
    }

    @Test("hotspot-provider-portal-authentication: the portal helper's logic (maintain with the probe unreachable: failure), exits 0 after stop")
    func authentication() async throws {
        let d = try FakeDaemon("ref-auth")
        let p = try launch("hotspot-provider-portal-authentication", ["--account", "guest:guest", "--http-timeout", "2"], socket: d.path,
                           role: "authenticationProvider", identifier: "com.hotspotlab.portal.authentication",
                           extra: ["HOTSPOT_PROBE_URL": "http://127.0.0.1:1/hotspot-detect.html"])
        let seen = try await d.run { d in try self.session(d, commandJSON(id: 5, type: 5, ssid: "Cafe Lumiere"), stop: "configurationDisabled") }
        p.waitUntilExit()
        #expect(seen[0]["role"] == "authenticationProvider")
        #expect(seen[2]["command"]?.intValue == 5)
        #expect(seen[2]["resultName"] == "failure")
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
