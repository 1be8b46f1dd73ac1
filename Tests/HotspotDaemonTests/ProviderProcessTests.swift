import Foundation
import HotspotClient
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Testing

/// hotspotd launching real provider processes (the Python helper in provider mode, speaking the raw protocol).
@Suite("hotspotd provider processes", .serialized)
struct ProviderProcessTests {
    /// Writes an apps file declaring the Python helper as both providers of one app (extra arguments per role).
    static func appsFile(evaluation: [String], authentication: [String]) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-apps-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try UnixSocket.makeDirectory(dir, mode: 0o700)
        let py = ["/usr/bin/python3", Products.pythonHelper]
        let app = AppDeclaration(
            bundleIdentifier: "com.example.py", displayName: "Py",
            evaluationProvider: ProviderDeclaration(identifier: "com.example.py.evaluation", command: py + evaluation),
            authenticationProvider: ProviderDeclaration(identifier: "com.example.py.authentication", command: py + authentication))
        let path = dir + "/apps.json"
        try AtomicFile.write(AppsFile.render([app]), to: path)
        return path
    }

    @Test("launched on demand (the evaluation provider in a netns with only lo: its traffic fails), started, answers, stopped when idle, exits",
          .enabled(if: getuid() == 0, "needs root: the evaluation provider's sandbox unshares a network namespace"))
    func lifecycleWithRealProcesses() throws {
        let apps = try Self.appsFile(evaluation: ["--probe-network", "192.0.2.1:80"], authentication: [])
        // The idle timeout this test waits out, 1 s; the commands' deadlines iOS's 45 s (the harness's, unscaled).
        let d = try DaemonUnderTest(name: "providers", extra: ["--apps", apps, "--provider-idle-timeout", "1"])
        defer { d.kill9() }
        try d.control.request(.setManager(app: "com.example.py", ManagerConfiguration(isEnabled: true)))
        #expect(d.records("providerLaunched").isEmpty, "nothing is launched before a command needs it")
        try d.join(HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:00:01"))
        try d.waitForState(.authenticated, timeout: .seconds(30))
        let started = d.records("providerStarted")
        #expect(started.map { $0["role"]?.stringValue } == ["evaluationProvider", "authenticationProvider"])
        #expect(started.allSatisfy { $0["ok"]?.boolValue == true && ($0["latencyMs"]?.doubleValue ?? 0) > 0 })
        #expect(try d.control.status()["bestHelper"]?.stringValue == "com.example.py")
        // Idle (1 s): both are stopped and exit.
        _ = try d.control.waitForStatus(timeout: .seconds(20), "both providers stopped and gone") { s in
            s["apps"]?.arrayValue?.first?["providers"]?.arrayValue?.allSatisfy { $0["state"]?.stringValue == "notRunning" } ?? false
        }
        try waitUntil(d, timeout: .seconds(10)) { d.records("providerExited").count == 2 }
        #expect(d.records("providerStopped").map { $0["reason"]?.stringValue } == ["idleTimeout", "idleTimeout"])
        #expect(d.records("providerExited").allSatisfy { $0["status"]?.intValue == 0 })
        // The sandbox: the evaluation provider's connection attempt failed (no route), and it still reached hotspotd.
        #expect(d.child.output.contains("probe failed 101"), "ENETUNREACH in the evaluation provider's netns:\n\(d.child.output)")
    }

    @Test("a provider that crashes mid-authenticate counts as no answer at once")
    func crashMidAuthenticate() throws {
        let apps = try Self.appsFile(evaluation: [], authentication: ["--authenticate", "crash"])
        // A large scale: the authenticate deadline (45 s) would not pass during the test.
        let d = try DaemonUnderTest(name: "providers-crash", extra: ["--apps", apps, "--evaluation-sandbox", "none"], timeScale: "1")
        defer { d.kill9() }
        try d.control.request(.setManager(app: "com.example.py", ManagerConfiguration(isEnabled: true)))
        try d.join(HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:00:01"))
        try waitUntil(d, timeout: .seconds(30)) { !d.records("providerNoAnswer").isEmpty }
        let r = try #require(d.records("providerNoAnswer").first)
        #expect(r["role"]?.stringValue == "authenticationProvider")
        try waitUntil(d, timeout: .seconds(10)) { d.records("providerExited").contains { $0["role"]?.stringValue == "authenticationProvider" } }
        #expect(d.records("providerExited").first { $0["role"]?.stringValue == "authenticationProvider" }?["status"]?.intValue == 9)
        #expect(d.records("command").filter { $0["commandType"]?.stringValue == "authenticate" }.count == 1)
        #expect(d.records("irregular").contains { $0["irregularity"]?.stringValue == "noAnswer" && $0["commandType"]?.stringValue == "authenticate" })
    }

    @Test("hotspotd refuses to start on a bad apps file, naming the file and the JSON path")
    func badAppsFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-badapps-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try UnixSocket.makeDirectory(dir, mode: 0o700)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/apps.json"
        try AtomicFile.write(Array(#"{"apps":[{"bundleIdentifier":"a","displayName":"A","authenticationProvider":{"identifier":"a.a"}}]}"#.utf8), to: path)
        let r = try ProcessRunner.run(ProcessConfiguration(try Products.path("hotspotd"), ["--run-dir", dir + "/run", "--apps", path]),
                                      timeout: .seconds(30))
        #expect(r.status == .exited(1))
        #expect(r.stderr.contains("\(path): apps[0].authenticationProvider.command: expected a non-empty array of strings"), "\(r.stderr)")
    }
}

/// Waits until `condition` (a question about `d`'s trace) holds or `timeout` passes (then fails the test).
/// Event-based: a subscription to `d`'s trace wakes the wait at each new record, and hotspotd writes a record
/// to the trace file before sending it to subscribers, so every record the condition could see wakes it.
func waitUntil(_ d: DaemonUnderTest, timeout: Duration, _ condition: () -> Bool) throws {
    let watcher = try ControlClient.connect(path: d.controlSocket, timeout: .seconds(5))
    try watcher.request(.subscribeTrace)
    let deadline = SystemMonotonicClock.read() + timeout
    while !condition() {
        let left = deadline - SystemMonotonicClock.read()
        guard left > .zero else { throw ClientError("condition not met within \(timeout)") }
        _ = try watcher.nextTraceRecord(timeout: left)
    }
}
