#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import HotspotHelper
import HotspotCore
import HotspotProtocol
import HotspotSystem
import Testing
import TestSupport

/// What the test providers saw, in order (the suite is serialized: one provider runs at a time).
final class Journal: @unchecked Sendable {
    static let shared = Journal()
    private let lock = NSLock()
    private var entries: [String] = []
    var startResult = true
    let release = DispatchSemaphore(value: 0)
    let entered = DispatchSemaphore(value: 0)

    func reset(startResult: Bool = true) { lock.withLock { entries = []; self.startResult = startResult } }
    func add(_ s: String) { lock.withLock { entries.append(s) } }
    var all: [String] { lock.withLock { entries } }
}

/// Claims "Cafe" high; on "Rogue" it also calls deliver() itself (a rule it must not break); on "Slow" it waits
/// for the test to release it.
final class JournalEvaluation: HotspotEvaluationProvider {
    init() { Journal.shared.add("init") }
    func start() async -> Bool {
        Journal.shared.add("start")
        return Journal.shared.startResult
    }
    func stop(reason: HotspotProviderStopReason) async { Journal.shared.add("stop \(reason)") }
    func handleCommand(_ command: HotspotHelperCommand) async -> HotspotHelperResponse {
        Journal.shared.add("\(command.commandType) \(command.identifier)")
        if command.commandType == .filterScanList {
            let response = command.createResponse(.success)
            response.setNetworkList((command.networkList ?? []).filter { $0.ssid == "Cafe" })
            return response
        }
        let network = command.network
        if network?.ssid == "Slow" {
            Journal.shared.entered.signal()
            await HotspotHelper.blocking { Journal.shared.release.wait() }
        }
        if network?.ssid == "Nosy" {
            let outcome = Result { () throws(HotspotTrafficError) in try command.http(.get("http://127.0.0.1:1/probe")) }
            Journal.shared.add("http: \((try? outcome.get()) == nil ? "failed" : "answered")")
        }
        network?.setConfidence(network?.ssid == "Cafe" || network?.ssid == "Rogue" ? .high : .none)
        let response = command.createResponse(.success)
        if let network { response.setNetwork(network) }
        if network?.ssid == "Rogue" { Journal.shared.add("own deliver() returned \(response.deliver())") }
        return response
    }
}

final class JournalAuthentication: HotspotAuthenticationProvider {
    init() {}
    func start() async -> Bool { true }
    func stop(reason: HotspotProviderStopReason) async {}
    func handleCommand(_ command: HotspotHelperCommand) async -> HotspotHelperResponse { command.createResponse(.success) }
}

@Suite("Provider runtime against a fake hotspotd", .serialized)
struct ProviderRuntimeTests {
    func options(_ d: FakeDaemon, app: String = "com.example.portal", id: String = "com.example.portal.evaluation") -> HotspotProviderOptions {
        HotspotProviderOptions(socketPath: d.path, identifier: id, app: app, role: .evaluationProvider, registrationTimeout: .seconds(5))
    }

    @Test("register with role and app, start/started, commands answered by the runtime, deliver() refused and reported, stop/stopped")
    func lifecycle() async throws {
        Journal.shared.reset()
        let d = try FakeDaemon("life")
        async let exit = HotspotProviderRuntime.run(JournalEvaluation.self, options: options(d), installAsShared: false)
        let seen = try await d.run { d -> [JSON] in
            try d.accept()
            var seen: [JSON] = []
            let register = try d.read()
            seen.append(register)
            try d.send(["type": "registered", "identifier": "com.example.portal.evaluation", "version": 1])
            try d.send(["type": "start"])
            seen += try d.read(until: "started")
            try d.send(commandJSON(id: 1, type: 2, ssid: "Cafe"))
            seen += try d.read(until: "response")
            try d.send(commandJSON(id: 2, type: 1, list: ["Cafe", "Elsewhere"]))
            seen += try d.read(until: "response")
            try d.send(commandJSON(id: 3, type: 2, ssid: "Rogue"))
            seen += try d.read(until: "response")
            try d.send(["type": "stop", "reason": "idleTimeout"])
            seen += try d.read(until: "stopped")
            return seen
        }
        #expect(await exit == .stopped(.idleTimeout))
        try #require(seen.count == 7, "register, started, 3 responses, 1 report, stopped: \(seen)")
        let register = seen[0]
        #expect(register["type"] == "register")
        #expect(register["role"] == "evaluationProvider")
        #expect(register["app"] == "com.example.portal")
        #expect(register["identifier"] == "com.example.portal.evaluation")
        #expect(register["displayName"] == "portal")
        #expect(seen[1] == ["type": "started", "ok": true])
        // evaluate: the framework delivered what handleCommand returned.
        #expect(seen[2]["command"]?.intValue == 1)
        #expect(seen[2]["result"]?.intValue == 0)
        #expect(seen[2]["network"]?["confidence"]?.intValue == 2)
        // filterScanList: the list it returned.
        #expect(seen[3]["command"]?.intValue == 2)
        #expect(seen[3]["networkList"]?.arrayValue?.compactMap { $0["ssid"]?.stringValue } == ["Cafe"])
        // The provider's own deliver() was refused and reported; the one response is the framework's.
        #expect(seen[4]["type"] == "report")
        #expect(seen[4]["kind"] == "deliverCalledByProvider")
        #expect(seen[4]["command"]?.intValue == 3)
        #expect(seen[4]["message"]?.stringValue?.contains("deliver() called by the evaluationProvider com.example.portal.evaluation") == true)
        #expect(seen[5]["type"] == "response")
        #expect(seen[5]["command"]?.intValue == 3)
        #expect(seen[6] == ["type": "stopped"])
        #expect(Journal.shared.all == ["init", "start", "evaluate 1", "filterScanList 2", "evaluate 3",
                                       "own deliver() returned false", "stop idleTimeout"])
    }

    @Test("an evaluation provider's attempt at the network is reported (networkFromEvaluationProvider) and the command still answered")
    func evaluationTrafficReported() async throws {
        Journal.shared.reset()
        let d = try FakeDaemon("nosy")
        async let exit = HotspotProviderRuntime.run(JournalEvaluation.self, options: options(d), installAsShared: false)
        let seen = try await d.run { d -> [JSON] in
            try d.accept()
            _ = try d.read()
            try d.send(["type": "registered", "identifier": "com.example.portal.evaluation", "version": 1])
            try d.send(["type": "start"])
            _ = try d.read(until: "started")
            try d.send(commandJSON(id: 4, type: 2, ssid: "Nosy"))
            var seen = try d.read(until: "response")
            try d.send(["type": "stop", "reason": "idleTimeout"])
            seen += try d.read(until: "stopped")
            return seen
        }
        #expect(await exit == .stopped(.idleTimeout))
        try #require(seen.count == 3, "\(seen)")
        #expect(seen[0]["type"] == "report")
        #expect(seen[0]["kind"] == "networkFromEvaluationProvider")
        #expect(seen[0]["command"]?.intValue == 4)
        #expect(seen[0]["message"]?.stringValue?.contains("tried GET http://127.0.0.1:1/probe for evaluate command 4") == true)
        #expect(seen[1]["type"] == "response")
        #expect(Journal.shared.all.contains("http: failed"))
    }

    @Test("no command is handled before start, after start() returned false, or after stop")
    func noHandlingOutsideStarted() async throws {
        Journal.shared.reset(startResult: false)
        let d = try FakeDaemon("nostart")
        async let exit = HotspotProviderRuntime.run(JournalEvaluation.self, options: options(d), installAsShared: false)
        let seen = try await d.run { d -> [JSON] in
            try d.accept()
            _ = try d.read()
            try d.send(["type": "registered", "identifier": "com.example.portal.evaluation", "version": 1])
            try d.send(commandJSON(id: 1, type: 2))       // before start
            try d.send(["type": "start"])
            var seen = try d.read(until: "started")
            try d.send(commandJSON(id: 2, type: 2))       // start() said false
            // stop, then a command hotspotd must never send: neither is handled.
            try d.send(["type": "stop", "reason": "providerFailed"])
            try d.send(commandJSON(id: 3, type: 2))
            seen += try d.read(until: "stopped")
            return seen
        }
        #expect(await exit == .stopped(.providerFailed))
        #expect(seen == [["type": "started", "ok": false], ["type": "stopped"]])
        #expect(Journal.shared.all == ["init", "start", "stop providerFailed"])
    }

    @Test("stop is answered while a command is still being handled (its response is left to the delivery gate)")
    func responseAfterStopDropped() async throws {
        Journal.shared.reset()
        let d = try FakeDaemon("late")
        async let exit = HotspotProviderRuntime.run(JournalEvaluation.self, options: options(d), installAsShared: false)
        _ = try await d.run { d in
            try d.accept()
            _ = try d.read()
            try d.send(["type": "registered", "identifier": "com.example.portal.evaluation", "version": 1])
            try d.send(["type": "start"])
            _ = try d.read(until: "started")
            try d.send(commandJSON(id: 7, type: 2, ssid: "Slow"))
            guard Journal.shared.entered.wait(timeout: .now() + 10) == .success else { throw FakeDaemonError("the provider never got command 7") }
            try d.send(["type": "stop", "reason": "noNetworkAvailable"])
            _ = try d.read(until: "stopped")
        }
        #expect(await exit == .stopped(.noNetworkAvailable))
        Journal.shared.release.signal()
        #expect(Journal.shared.all.contains("evaluate 7"))
    }

    @Test("the delivery gate: after stop nothing is sent; another command's response is reported, not delivered")
    func deliveryGate() async throws {
        let d = try FakeDaemon("gate")
        let socket = try UnixSocket.connect(path: d.path)
        try d.accept()
        let client = HelperClient(socket: socket, queue: DispatchQueue(label: "gate"), identifier: "com.example.portal.evaluation", handler: { _ in })
        let gate = ProviderDeliveryGate(describe: "evaluationProvider com.example.portal.evaluation of com.example.portal", role: .evaluationProvider, client: client)
        client.deliveryGate = gate
        let network = HotspotCore.HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:01:00")
        let one = HotspotHelperCommand(Command(id: 1, type: .evaluate, helper: "app", network: network, deadline: nil), client: client)
        let two = HotspotHelperCommand(Command(id: 2, type: .evaluate, helper: "app", network: network, deadline: nil), client: client)
        // Another command's response: reported, not delivered.
        gate.deliver(two.createResponse(.success), for: one)
        // A normal delivery goes through.
        gate.deliver(one.createResponse(.success), for: one)
        // After stop: nothing.
        gate.stop()
        gate.deliver(two.createResponse(.success), for: two)
        client.send(json: ["type": "sentinel"])
        let seen = try await d.run { d in try d.read(until: "sentinel") }
        #expect(seen.count == 3, "\(seen)")
        #expect(seen[0]["type"] == "report")
        #expect(seen[0]["kind"] == "invalidField")
        #expect(seen[0]["command"]?.intValue == 1)
        #expect(seen[1]["type"] == "response")
        #expect(seen[1]["command"]?.intValue == 1)
        #expect(seen[2]["type"] == "sentinel")
        socket.close()
    }

    @Test("a refused registration names the cause; a role the type does not have is refused before connecting")
    func registrationErrors() async throws {
        let d = try FakeDaemon("refused")
        async let exit = HotspotProviderRuntime.run(JournalEvaluation.self, options: options(d), installAsShared: false)
        try await d.run { d in
            try d.accept()
            _ = try d.read()
            try d.send(["type": "error", "code": "undeclaredRole",
                        "message": "role: com.example.portal declares no evaluationProvider"])
        }
        let result = await exit
        guard case .registrationFailed(let why) = result else {
            Issue.record("expected registrationFailed, got \(result)")
            return
        }
        #expect(why.contains("undeclaredRole"))
        #expect(why.contains("role: com.example.portal declares no evaluationProvider"))
        #expect(why.contains("evaluationProvider com.example.portal.evaluation of com.example.portal"))
        #expect(result.exitCode == 2)

        var wrong = options(d)
        wrong.role = .authenticationProvider
        let mismatch = await HotspotProviderRuntime.run(JournalEvaluation.self, options: wrong, installAsShared: false)
        #expect(mismatch.description.contains("HOTSPOT_PROVIDER_ROLE is authenticationProvider but JournalEvaluation is an evaluationProvider"))
    }

    @Test("a connection lost before stop ends the run with exit status 1")
    func disconnected() async throws {
        let d = try FakeDaemon("gone")
        async let exit = HotspotProviderRuntime.run(JournalAuthentication.self,
            options: HotspotProviderOptions(socketPath: d.path, identifier: "com.example.portal.authentication", app: "com.example.portal"),
            installAsShared: false)
        let register = try await d.run { d -> JSON in
            try d.accept()
            let r = try d.read()
            try d.send(["type": "registered", "identifier": "com.example.portal.authentication", "version": 1])
            d.close()
            return r
        }
        #expect(register["role"] == "authenticationProvider")
        let result = await exit
        #expect(result == .disconnected("hotspotd closed the connection before stop"))
        #expect(result.exitCode == 1)
    }

    @Test("the environment: HOTSPOT_APP and HOTSPOT_HELPER_IDENTIFIER required, HOTSPOT_PROVIDER_ROLE checked")
    func environment() {
        func with(_ vars: [String: String?], _ body: () -> Void) {
            for (k, v) in vars { if let v { setenv(k, v, 1) } else { unsetenv(k) } }
            body()
            for k in vars.keys { unsetenv(k) }
        }
        with(["HOTSPOT_APP": nil, "HOTSPOT_HELPER_IDENTIFIER": "x"]) {
            guard case .failure(let e) = HotspotProviderOptions.fromEnvironment() else { Issue.record("accepted without HOTSPOT_APP"); return }
            #expect(e.description.hasPrefix("HOTSPOT_APP is not set"))
        }
        with(["HOTSPOT_APP": "com.example.portal", "HOTSPOT_HELPER_IDENTIFIER": "com.example.portal.evaluation",
              "HOTSPOT_PROVIDER_ROLE": "helper", "HOTSPOT_HELPER_SOCKET": "/tmp/x.sock"]) {
            guard case .failure(let e) = HotspotProviderOptions.fromEnvironment() else { Issue.record("accepted role helper"); return }
            #expect(e.description == "HOTSPOT_PROVIDER_ROLE is \"helper\": expected evaluationProvider or authenticationProvider")
        }
        with(["HOTSPOT_APP": "com.example.portal", "HOTSPOT_HELPER_IDENTIFIER": "com.example.portal.evaluation",
              "HOTSPOT_PROVIDER_ROLE": "evaluationProvider", "HOTSPOT_HELPER_SOCKET": "/tmp/x.sock"]) {
            guard case .success(let o) = HotspotProviderOptions.fromEnvironment() else { Issue.record("refused a good environment"); return }
            #expect(o.app == "com.example.portal")
            #expect(o.identifier == "com.example.portal.evaluation")
            #expect(o.role == .evaluationProvider)
            #expect(o.socketPath == "/tmp/x.sock")
        }
    }

    @Test("stop reasons: Apple's raw values and the wire names of the contract")
    func stopReasons() {
        #expect(HotspotProviderStopReason.allCases.count == 17)
        #expect(HotspotProviderStopReason.idleTimeout.rawValue == 8)
        #expect(HotspotProviderStopReason.configurationDisabled.rawValue == 9)
        #expect(HotspotProviderStopReason.appUpdate.rawValue == 16)
        for r in HotspotProviderStopReason.allCases { #expect(HotspotProviderStopReason(name: r.name) == r) }
        #expect(HotspotProviderStopReason(name: "bogus") == nil)
        // The wire's names (HotspotProtocol) and Apple's cases are the same set.
        #expect(Set(ProviderStopReason.allCases.map(\.rawValue)) == Set(HotspotProviderStopReason.allCases.map(\.name)))
        #expect(HotspotProviderRole.authenticationProvider.commandTypes == [.authenticate, .maintain, .presentUI, .logoff])
    }
}
