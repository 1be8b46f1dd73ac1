import Foundation
import HotspotClient
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import NEHotspotHelperCompat
import Testing
import TestSupport

/// The real hotspotd launching the SDK's providers: the portal app's evaluation provider (its `@main`, the SDK
/// runtime) and the Apple-spelled authentication fixture, declared in an apps file.
@Suite("hotspotd launching the SDK's reference providers", .serialized)
struct ReferenceProviderDaemonTests {
    static func appsFile(evaluation: [String], authentication: [String]) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-sdkapps-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try UnixSocket.makeDirectory(dir, mode: 0o700)
        let app = AppDeclaration(
            bundleIdentifier: "com.hotspotlab.portal", displayName: "Portal Login",
            evaluationProvider: ProviderDeclaration(identifier: "com.hotspotlab.portal.evaluation", command: evaluation),
            authenticationProvider: ProviderDeclaration(identifier: "com.hotspotlab.portal.authentication", command: authentication))
        let path = dir + "/apps.json"
        try AtomicFile.write(AppsFile.render([app]), to: path)
        return path
    }

    @Test("launched on demand, started, the configured SSID claimed and authenticated, stopped when idle, exit status 0")
    func referencePairUnsandboxed() throws { try referencePair(sandbox: "none") }

    @Test("the same with the evaluation provider in a network namespace with only lo (unsharing it needs root)",
          .requiresRoot("needs root: the evaluation provider's sandbox unshares a network namespace"))
    func referencePairInNetns() throws { try referencePair(sandbox: "netns") }

    func referencePair(sandbox: String) throws {
        let apps = try Self.appsFile(
            evaluation: [try Products.path("hotspot-provider-portal-evaluation"), "--network", "Cafe"],
            authentication: [try Products.path("hotspot-apple-authentication-fixture")])
        // The idle timeout this test waits out, 1 s; the commands' deadlines iOS's 45 s (the harness's, unscaled).
        let d = try DaemonUnderTest(name: "sdk-providers-\(sandbox)", extra: ["--apps", apps, "--evaluation-sandbox", sandbox, "--provider-idle-timeout", "1"])
        defer { d.kill9() }
        try d.control.request(.setManager(app: "com.hotspotlab.portal", ManagerConfiguration(isEnabled: true)))
        try d.join(HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:00:01"))
        let s = try d.waitForState(.authenticated, timeout: .seconds(30))
        #expect(s["bestHelper"]?.stringValue == "com.hotspotlab.portal")
        let started = d.records("providerStarted")
        #expect(started.map { $0["role"]?.stringValue } == ["evaluationProvider", "authenticationProvider"])
        #expect(started.allSatisfy { $0["ok"]?.boolValue == true })
        // Idle (1 s): both stopped, both exit 0 (the SDK answers stop, then exits).
        try waitUntil(d, timeout: .seconds(20)) { d.records("providerExited").count == 2 }
        #expect(d.records("providerStopped").map { $0["reason"]?.stringValue } == ["idleTimeout", "idleTimeout"])
        #expect(d.records("providerExited").allSatisfy { $0["status"]?.intValue == 0 }, "\(d.records("providerExited"))")
    }

    @Test("NEHotspotManager against the real hotspotd: default not enabled, save after load, another app's evaluation provider and an unknown app refused with hotspotd's message")
    func managerAgainstHotspotd() async throws {
        let apps = try Self.appsFile(evaluation: ["/bin/false"], authentication: ["/bin/false"])
        let d = try DaemonUnderTest(name: "sdk-manager", extra: ["--apps", apps, "--evaluation-sandbox", "none"])
        defer { d.kill9() }
        let manager = NEHotspotManager(app: "com.hotspotlab.portal", controlSocketPath: d.controlSocket)
        try await manager.loadFromPreferences()
        #expect(!manager.isEnabled, "a declared app never configured is not enabled")
        manager.isEnabled = true
        manager.evaluatedSSIDs = ["Cafe"]
        manager.evaluationProviderBundleIdentifier = "com.hotspotlab.portal.evaluation"
        try await manager.saveToPreferences()
        let reloaded = NEHotspotManager(app: "com.hotspotlab.portal", controlSocketPath: d.controlSocket)
        try await reloaded.loadFromPreferences()
        #expect(reloaded.isEnabled)
        #expect(reloaded.evaluatedSSIDs == ["Cafe"])
        #expect(reloaded.evaluationProviderBundleIdentifier == "com.hotspotlab.portal.evaluation")

        reloaded.evaluationProviderBundleIdentifier = "com.other.evaluation"
        do {
            try await reloaded.saveToPreferences()
            Issue.record("hotspotd accepted another app's evaluation provider")
        } catch let error as NEHotspotManager.Error {
            #expect(error == .configurationInvalid, "\(error)")
            #expect(error.message.contains("evaluationProviderBundleIdentifier"), "\(error)")
        }
        let unknown = NEHotspotManager(app: "com.unknown.app", controlSocketPath: d.controlSocket)
        do {
            try await unknown.loadFromPreferences()
            try await unknown.saveToPreferences()
            Issue.record("hotspotd accepted an unknown app")
        } catch let error as NEHotspotManager.Error {
            #expect(error == .configurationInvalid, "\(error)")
            #expect(error.message.contains("com.unknown.app"), "\(error)")
        }
    }
}
