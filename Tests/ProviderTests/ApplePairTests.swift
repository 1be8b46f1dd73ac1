import Foundation
import HotspotHelper
import HotspotProtocol
import NEHotspotHelperCompat
import Testing
import TestSupport

@Suite("A provider pair in Apple's spellings", .serialized)
struct ApplePairTests {
    /// Registers one provider, starts it, sends `commands`, stops it; returns every message it sent.
    func drive<P: HotspotProvider>(_ type: P.Type, role: HotspotProviderRole, commands: [JSON]) async throws -> (HotspotProviderExit, [JSON]) {
        let d = try FakeDaemon("apple-\(role)")
        let id = role == .evaluationProvider ? "com.example.cafe.evaluation" : "com.example.cafe.authentication"
        async let exit = HotspotProviderRuntime.run(type, options: HotspotProviderOptions(
            socketPath: d.path, identifier: id, app: "com.example.cafe", role: role), installAsShared: false)
        let seen = try await d.run { d -> [JSON] in
            try d.accept()
            var seen = [try d.read()]
            try d.send(["type": "registered", "identifier": .string(id), "version": 1])
            try d.send(["type": "start"])
            seen += try d.read(until: "started")
            for c in commands {
                try d.send(c)
                seen += try d.read(until: "response")
            }
            try d.send(["type": "stop", "reason": "configurationDisabled"])
            seen += try d.read(until: "stopped")
            return seen
        }
        return (await exit, seen)
    }

    @Test("the evaluation provider claims its SSID and filters the scan list; the authentication provider signs in")
    func pairRuns() async throws {
        let (evalExit, eval) = try await drive(CafeEvaluationProvider.self, role: .evaluationProvider, commands: [
            commandJSON(id: 1, type: 1, list: ["Cafe Lumiere", "Airport"]),
            commandJSON(id: 2, type: 2, ssid: "Cafe Lumiere"),
            commandJSON(id: 3, type: 2, ssid: "Airport"),
        ])
        #expect(evalExit == .stopped(.configurationDisabled))
        #expect(eval[0]["role"] == "evaluationProvider")
        #expect(eval[1] == ["type": "started", "ok": true])
        #expect(eval[2]["networkList"]?.arrayValue?.compactMap { $0["ssid"]?.stringValue } == ["Cafe Lumiere"])
        #expect(eval[3]["network"]?["confidence"]?.intValue == 2)
        #expect(eval[4]["network"]?["confidence"]?.intValue == 0)
        #expect(eval.last == ["type": "stopped"])

        let (authExit, auth) = try await drive(CafeAuthenticationProvider.self, role: .authenticationProvider, commands: [
            commandJSON(id: 4, type: 3, ssid: "Cafe Lumiere"),
            commandJSON(id: 5, type: 5, ssid: "Cafe Lumiere"),
        ])
        #expect(authExit == .stopped(.configurationDisabled))
        #expect(auth[0]["role"] == "authenticationProvider")
        #expect(auth[2]["command"]?.intValue == 4)
        #expect(auth[2]["result"]?.intValue == 0)
        #expect(auth[3]["command"]?.intValue == 5)
    }

    @Test("Apple's types keep Apple's values")
    func spellings() {
        #expect(NEProviderStopReason.idleTimeout.rawValue == 8)
        #expect(NEProviderStopReason.noNetworkAvailable.rawValue == 3)
        #expect(CafeEvaluationProvider.providerRole == .evaluationProvider)
        #expect(CafeAuthenticationProvider.providerRole == .authenticationProvider)
    }
}

@Suite("NEHotspotManager against a fake control socket", .serialized)
struct NEHotspotManagerTests {
    @Test("load, set, save: getManager then setManager with the fields")
    func loadAndSave() async throws {
        let d = try FakeDaemon("manager", file: "control.sock")
        let manager = NEHotspotManager(app: "com.example.cafe", controlSocketPath: d.path)
        async let sent = d.run { d -> [JSON] in
            try d.accept()
            let get = try d.read()
            try d.send(["type": "manager", "app": "com.example.cafe", "isEnabled": false, "evaluatedSSIDs": []])
            d.close()
            try d.accept()
            let set = try d.read()
            try d.send(["type": "ok"])
            return [get, set]
        }
        try await enableCafeProviders(manager)
        let messages = try await sent
        #expect(messages[0] == ["type": "getManager", "app": "com.example.cafe"])
        #expect(messages[1] == ["type": "setManager", "app": "com.example.cafe", "isEnabled": true, "evaluatedSSIDs": ["Cafe Lumiere"],
                                "evaluationProviderBundleIdentifier": "com.example.cafe.evaluation"])
        #expect(manager.isEnabled)
    }

    @Test("save before load is configurationNotLoaded; a third SSID is configurationInvalid naming the field; hotspotd's refusal is passed on")
    func errors() async throws {
        let d = try FakeDaemon("manager-errors", file: "control.sock")
        let manager = NEHotspotManager(app: "com.example.cafe", controlSocketPath: d.path)
        do {
            try await manager.saveToPreferences()
            Issue.record("saved without a load")
        } catch NEHotspotManager.Error.configurationNotLoaded {
        } catch {
            Issue.record("unexpected \(error)")
        }
        async let refused = d.run { d in
            try d.accept()
            _ = try d.read()
            try d.send(["type": "manager", "app": "com.example.cafe", "isEnabled": true, "evaluatedSSIDs": ["A"]])
            d.close()
            try d.accept()
            _ = try d.read()
            try d.send(["type": "error", "code": "invalidField",
                        "message": "evaluationProviderBundleIdentifier: com.other.evaluation is not the evaluation provider com.example.cafe declares"])
        }
        try await manager.loadFromPreferences()
        #expect(manager.evaluatedSSIDs == ["A"])
        manager.evaluatedSSIDs = ["A", "B", "C"]
        do {
            try await manager.saveToPreferences()
            Issue.record("saved three SSIDs")
        } catch let error as NEHotspotManager.Error {
            #expect(error == .configurationInvalid)
            #expect(error.message.contains("evaluatedSSIDs: at most 2 SSIDs, got 3"))
        }
        manager.evaluatedSSIDs = ["A"]
        manager.evaluationProviderBundleIdentifier = "com.other.evaluation"
        do {
            try await manager.saveToPreferences()
            Issue.record("hotspotd's refusal was not thrown")
        } catch let error as NEHotspotManager.Error {
            #expect(error == .configurationInvalid)
            #expect(error.message.contains("invalidField: evaluationProviderBundleIdentifier: com.other.evaluation"))
        }
        try await refused
    }

    @Test("no hotspotd: internalError naming the socket")
    func noDaemon() async {
        let manager = NEHotspotManager(app: "com.example.cafe", controlSocketPath: "/tmp/hsl-providers-none-\(getpid())/control.sock")
        do {
            try await manager.loadFromPreferences()
            Issue.record("loaded without a daemon")
        } catch let error as NEHotspotManager.Error {
            #expect(error.code == .internalError)
            #expect(error.message.contains("connect to hotspotd's control socket /tmp/hsl-providers-none-"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
