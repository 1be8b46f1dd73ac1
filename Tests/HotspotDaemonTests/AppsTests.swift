import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Testing

/// Apps and providers (issue 15) on `EmbeddedDaemon` and a `ManualClock`: registration roles, routing by
/// role, the manager configuration, evaluatedSSIDs, and the provider lifecycle.
@Suite("hotspotd apps and providers (embedded)")
struct AppsTests {
    static let app = AppDeclaration(
        bundleIdentifier: "com.example.portal", displayName: "Example",
        evaluationProvider: ProviderDeclaration(identifier: "com.example.portal.evaluation", command: ["/opt/eval", "-v"]),
        authenticationProvider: ProviderDeclaration(identifier: "com.example.portal.authentication", command: ["/opt/auth"]))
    static let cafe = HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:00:01")

    func daemon(apps: [AppDeclaration] = [app], enabled: Bool = true, evaluatedSSIDs: [String] = [],
                state: PersistentState? = nil) throws -> (EmbeddedDaemon, EmbeddedDaemon.Peer)
    {
        var o = DaemonOptions(runDirectory: "/embedded")
        o.apps = apps
        o.appsFile = "/embedded/apps.json"
        o.evaluationSandbox = ["/nsexec", "--new-netns", "--"]
        let d = EmbeddedDaemon(options: o, state: state)
        let ctl = d.control()
        if enabled {
            for a in apps {
                let r = try ctl.request(.setManager(app: a.bundleIdentifier, ManagerConfiguration(isEnabled: true, evaluatedSSIDs: evaluatedSSIDs)))
                #expect(r?["type"]?.stringValue == "ok", "setManager: \(String(describing: r))")
            }
        }
        return (d, ctl)
    }

    /// A provider process connecting: registers, gets `registered` and `start`, answers `started`.
    func provider(_ d: EmbeddedDaemon, _ role: ProviderRole, app: AppDeclaration = app, ok: Bool = true) throws -> EmbeddedDaemon.Peer {
        let p = d.connect(.helper)
        let id = try #require(app.provider(role)).identifier
        p.send(Registration(identifier: id, displayName: "Example", version: protocolVersion, role: role, app: app.bundleIdentifier).json)
        let got = try p.read().compactMap { $0["type"]?.stringValue }
        #expect(got == ["registered", "start"])
        p.send(LifecycleMessage.started(ok: ok).json)
        return p
    }

    @Test("a provider is launched on demand, in its sandbox, started, then gets the commands of its role only")
    func launchOnDemandAndRouting() throws {
        let (d, ctl) = try daemon()
        #expect(d.launches.isEmpty, "nothing launched before a command needs it")
        try d.join(ctl, Self.cafe)
        let launch = try #require(d.launches.first)
        #expect(d.launches.count == 1)
        #expect(launch.key == ProviderKey(app: "com.example.portal", role: .evaluationProvider))
        #expect(launch.argv == ["/nsexec", "--new-netns", "--", "/opt/eval", "-v"], "the evaluation provider runs in a fresh netns")
        #expect(launch.environment["HOTSPOT_HELPER_IDENTIFIER"] == "com.example.portal.evaluation")
        #expect(launch.environment["HOTSPOT_PROVIDER_ROLE"] == "evaluationProvider")
        #expect(launch.environment["HOTSPOT_APP"] == "com.example.portal")
        #expect(launch.environment["HOTSPOT_HELPER_SOCKET"] == d.core.options.helperSocket)
        #expect(d.records("providerLaunched").first?["pid"]?.intValue == 5001)
        d.advance(by: .milliseconds(40))
        let eval = try provider(d, .evaluationProvider)
        let started = try #require(d.records("providerStarted").first)
        #expect(started["ok"]?.boolValue == true)
        #expect(started["latencyMs"]?.doubleValue == 40)
        let cmd = try eval.command()
        #expect(cmd["commandName"]?.stringValue == "evaluate")
        #expect(cmd["helper"]?.stringValue == "com.example.portal", "the machine's helper is the app")
        try eval.answer(cmd, confidence: .high)
        // authenticate goes to the authentication provider, launched now, not to the evaluation provider.
        #expect(d.launches.count == 2)
        #expect(d.launches[1].argv == ["/opt/auth"], "the authentication provider has no netns sandbox")
        #expect(try eval.read().filter { $0["type"]?.stringValue == "command" }.isEmpty)
        let auth = try provider(d, .authenticationProvider)
        let a = try auth.command()
        #expect(a["commandName"]?.stringValue == "authenticate")
        try auth.answer(a)
        #expect(d.machine.state == .authenticated)
        #expect(d.machine.bestHelper == "com.example.portal")
        let s = try d.status(ctl)
        let app = try #require(s["apps"]?.arrayValue?.first)
        #expect(app["isEnabled"]?.boolValue == true)
        #expect(app["providers"]?.arrayValue?.map { $0["state"]?.stringValue } == ["running", "running"])
    }

    @Test("the authentication provider never gets filterScanList or a network list")
    func authenticationProviderNeverGetsScanList() throws {
        let (d, ctl) = try daemon()
        let auth = try provider(d, .authenticationProvider)
        #expect(try ctl.request(.showScanList([Self.cafe], repeating: false))?["type"]?.stringValue == "ok")
        #expect(d.launches.map(\.key.role) == [.evaluationProvider], "filterScanList launches the evaluation provider")
        let eval = try provider(d, .evaluationProvider)
        let f = try eval.command()
        #expect(f["commandName"]?.stringValue == "filterScanList")
        #expect(f["networkList"] != nil)
        try eval.answer(f)
        try d.join(ctl, Self.cafe)
        try eval.answer(try eval.command(), confidence: .high)
        let a = try auth.command()
        #expect(a["commandName"]?.stringValue == "authenticate")
        try auth.answer(a)
        for m in try auth.read() + [a] {
            #expect(m["commandName"]?.stringValue != "filterScanList")
            #expect(m["networkList"] == nil)
        }
        let toAuth = d.commands().filter { $0["commandType"]?.stringValue == "filterScanList" }
        #expect(toAuth.count == 1)
    }

    @Test("a provider answering the other role's command is refused")
    func wrongRoleResponse() throws {
        let (d, ctl) = try daemon()
        let auth = try provider(d, .authenticationProvider)
        try d.join(ctl, Self.cafe)
        let eval = try provider(d, .evaluationProvider)
        let cmd = try eval.command()
        try auth.answer(cmd)
        let e = try #require(try auth.read(type: "error"))
        #expect(e["code"]?.stringValue == "rejectedResponse")
        #expect(e["message"]?.stringValue?.contains("evaluationProvider") == true)
        #expect(d.machine.state == .evaluating)
        // A rejected response gets its error on the provider's own connection.
        try eval.answer(cmd, confidence: .none)
        try eval.answer(cmd, confidence: .none)
        let dup = try #require(try eval.read(type: "error"))
        #expect(dup["code"]?.stringValue == "rejectedResponse")
        #expect(d.records("rejected").last?["reason"]?.stringValue == "duplicateResponse")
    }

    @Test("registration errors: unknown app, undeclared role, another identifier, a second provider of a role, a legacy helper under an app's name")
    func registrationErrors() throws {
        let evalOnly = AppDeclaration(bundleIdentifier: "com.example.eval", displayName: "EvalOnly",
                                      evaluationProvider: ProviderDeclaration(identifier: "com.example.eval.e", command: ["/e"]))
        let (d, _) = try daemon(apps: [Self.app, evalOnly])
        func register(_ r: Registration) throws -> JSON? {
            let p = d.connect(.helper)
            p.send(r.json)
            return try p.read().first
        }
        let unknown = try #require(try register(Registration(identifier: "x.e", displayName: "X", version: 1, role: .evaluationProvider, app: "com.nobody")))
        #expect(unknown["code"]?.stringValue == "unknownApp")
        #expect(unknown["message"]?.stringValue?.contains("com.nobody") == true)
        #expect(unknown["message"]?.stringValue?.contains("/embedded/apps.json") == true)
        let role = try #require(try register(Registration(identifier: "com.example.eval.a", displayName: "X", version: 1,
                                                            role: .authenticationProvider, app: "com.example.eval")))
        #expect(role["code"]?.stringValue == "undeclaredRole")
        #expect(role["message"]?.stringValue?.hasPrefix("role:") == true)
        let ident = try #require(try register(Registration(identifier: "com.example.other", displayName: "X", version: 1,
                                                             role: .evaluationProvider, app: "com.example.eval")))
        #expect(ident["code"]?.stringValue == "undeclaredRole")
        #expect(ident["message"]?.stringValue == "identifier: app \"com.example.eval\" declares its evaluationProvider as \"com.example.eval.e\", got \"com.example.other\"")
        _ = try provider(d, .evaluationProvider)
        let second = try #require(try register(Registration(identifier: "com.example.portal.evaluation", displayName: "X", version: 1,
                                                              role: .evaluationProvider, app: "com.example.portal")))
        #expect(second["code"]?.stringValue == "alreadyRegistered")
        #expect(second["message"]?.stringValue?.contains("com.example.portal") == true)
        #expect(second["message"]?.stringValue?.contains("evaluationProvider") == true)
        let legacy = try #require(try register(Registration(identifier: "com.example.portal", displayName: "X", version: 1)))
        #expect(legacy["code"]?.stringValue == "undeclaredRole")
        let noApp = d.connect(.helper)
        noApp.send(["type": "register", "identifier": "a", "displayName": "A", "version": 1, "role": "evaluationProvider"])
        #expect(try noApp.read().first?["message"]?.stringValue == "app: missing (a evaluationProvider names its app's bundle identifier)")
    }

    @Test("setManager errors name the field: a third evaluatedSSID, an unknown app, an empty SSID, another evaluation provider")
    func managerErrors() throws {
        let (d, ctl) = try daemon(enabled: false)
        defer { withExtendedLifetime(d) {} }
        let third = try #require(try ctl.request(json: ["type": "setManager", "app": "com.example.portal", "isEnabled": true,
                                                         "evaluatedSSIDs": ["A", "B", "C"]], requestID: 7))
        #expect(third["code"]?.stringValue == "invalidField")
        #expect(third["message"]?.stringValue == "evaluatedSSIDs: at most 2 SSIDs, got 3")
        #expect(third["requestID"]?.intValue == 7)
        let unknown = try #require(try ctl.request(.setManager(app: "com.nobody", ManagerConfiguration(isEnabled: true))))
        #expect(unknown["code"]?.stringValue == "unknownApp")
        #expect(unknown["message"]?.stringValue?.hasPrefix("app: \"com.nobody\"") == true)
        let empty = try #require(try ctl.request(json: ["type": "setManager", "app": "com.example.portal", "isEnabled": true, "evaluatedSSIDs": [""]]))
        #expect(empty["message"]?.stringValue == "evaluatedSSIDs[0]: expected an SSID of 1 to 32 bytes")
        let other = try #require(try ctl.request(.setManager(app: "com.example.portal", ManagerConfiguration(
            isEnabled: true, evaluationProviderBundleIdentifier: "com.example.portal.authentication"))))
        #expect(other["code"]?.stringValue == "invalidField")
        #expect(other["message"]?.stringValue?.hasPrefix("evaluationProviderBundleIdentifier:") == true)
        let get = try #require(try ctl.request(.getManager(app: "com.example.portal")))
        #expect(get["type"]?.stringValue == "manager")
        #expect(get["isEnabled"]?.boolValue == false, "never configured: disabled; the refused requests changed nothing")
        #expect(try ctl.request(.getManager(app: "com.nobody"))?["code"]?.stringValue == "unknownApp")
    }

    @Test("isEnabled false: no provider is ever started, the network is Authenticated unclaimed")
    func disabledAppNeverStarts() throws {
        let (d, ctl) = try daemon(enabled: false)
        try d.join(ctl, Self.cafe)
        #expect(try ctl.request(.showScanList([Self.cafe], repeating: false))?["type"]?.stringValue == "ok")
        #expect(d.launches.isEmpty)
        #expect(d.machine.state == .authenticated)
        #expect(d.machine.bestHelper == nil)
        #expect(d.commands().isEmpty)
    }

    @Test("an evaluatedSSID is claimed at high confidence at once: the evaluation provider is not launched for it")
    func evaluatedSSIDClaimsHigh() throws {
        let (d, ctl) = try daemon(evaluatedSSIDs: ["Cafe"])
        try d.join(ctl, Self.cafe)
        #expect(d.launches.map(\.key.role) == [.authenticationProvider], "only the authentication provider is launched")
        let rec = try #require(d.records("evaluatedSSID").first)
        #expect(rec["app"]?.stringValue == "com.example.portal")
        #expect(rec["ssid"]?.stringValue == "Cafe")
        #expect(d.machine.state == .authenticating)
        #expect(d.machine.bestHelper == "com.example.portal")
        let auth = try provider(d, .authenticationProvider)
        try auth.answer(try auth.command())
        #expect(d.machine.state == .authenticated)
        // Another SSID is evaluated by the provider.
        try d.join(ctl, HotspotNetwork(ssid: "Airport", bssid: "02:00:00:00:00:02"))
        #expect(d.launches.map(\.key.role).last == .evaluationProvider)
    }

    @Test("the manager configuration is persisted and loaded; status shows it")
    func managerPersisted() throws {
        let (d, _) = try daemon(evaluatedSSIDs: ["Cafe", "Bar"])
        let saved = try #require(d.storage.saved)
        #expect(saved.managers["com.example.portal"] == ManagerConfiguration(isEnabled: true, evaluatedSSIDs: ["Cafe", "Bar"]))
        let back = try PersistentState(json: saved.json, file: "state.json")
        #expect(back == saved)
        let (d2, ctl2) = try daemon(enabled: false, state: saved)
        #expect(d2.machine.isRegistered("com.example.portal"), "an enabled app is a helper of the machine from the start")
        #expect(try ctl2.request(.getManager(app: "com.example.portal"))?["evaluatedSSIDs"]?.arrayValue?.count == 2)
        #expect(PersistentState().json["managers"] == nil, "no managers: the file is as before")
    }

    @Test("stop with a reason: idle, manager disabled, network gone; never a command after stop")
    func stopReasons() throws {
        let (d, ctl) = try daemon()
        try d.join(ctl, Self.cafe)
        let eval = try provider(d, .evaluationProvider)
        try eval.answer(try eval.command(), confidence: .none)
        #expect(d.machine.state == .authenticated)
        let idle = d.timing.scaled(d.core.options.providerIdleTimeout)
        d.advance(by: idle - .milliseconds(1))
        #expect(d.records("providerStopped").isEmpty, "not before the idle time")
        d.advance(by: .milliseconds(1))
        #expect(try eval.read(type: "stop")?["reason"]?.stringValue == "idleTimeout")
        #expect(d.records("providerStopped").last?["reason"]?.stringValue == "idleTimeout")
        // A command while it stops waits for it to end, then a new process gets it.
        try d.join(ctl, HotspotNetwork(ssid: "Airport", bssid: "02:00:00:00:00:02"))
        #expect(try eval.read().filter { $0["type"]?.stringValue == "command" }.isEmpty, "no command after stop")
        #expect(d.launches.count == 1)
        eval.send(LifecycleMessage.stopped.json)
        #expect(eval.isClosed)
        d.providerExited(pid: 5001)
        #expect(d.launches.count == 2, "launched again for the held command")
        let eval2 = try provider(d, .evaluationProvider)
        #expect(try eval2.command()["commandName"]?.stringValue == "evaluate")
        // Network gone.
        #expect(try ctl.request(.disassociate)?["type"]?.stringValue == "ok")
        #expect(try eval2.read(type: "stop")?["reason"]?.stringValue == "noNetworkAvailable")
        eval2.send(LifecycleMessage.stopped.json)
        d.providerExited(pid: 5002)
        // Manager disabled.
        try d.join(ctl, Self.cafe)
        let eval3 = try provider(d, .evaluationProvider)
        _ = try eval3.command()
        #expect(try ctl.request(.setManager(app: "com.example.portal", ManagerConfiguration(isEnabled: false)))?["type"]?.stringValue == "ok")
        #expect(try eval3.read(type: "stop")?["reason"]?.stringValue == "configurationDisabled")
        #expect(!d.machine.isRegistered("com.example.portal"))
        // A provider that ignores stop: closed after the grace, killed 2 s later.
        d.advance(by: d.core.options.providerStopGrace)
        #expect(eval3.isClosed)
        d.advance(by: d.core.options.providerKillGrace)
        #expect(d.kills == [5003])
    }

    @Test("a provider that crashes, does not start, or answers start false: its commands count as no answer at once")
    func crashAndFailedStart() throws {
        let (d, ctl) = try daemon()
        try d.join(ctl, Self.cafe)
        // Exits before it ever connects.
        d.providerExited(pid: 5001, status: nil, signal: 11)
        let gone = try #require(d.records("providerNoAnswer").first)
        #expect(gone["cause"]?.stringValue?.contains("exited before it started") == true)
        #expect(d.records("irregular").first?["irregularity"]?.stringValue == "noAnswer")
        #expect(d.machine.state == .authenticated, "no claim: authenticated unclaimed, without waiting for the deadline")
        #expect(d.records("providerExited").first?["signal"]?.intValue == 11)
        // start() returns false.
        try d.join(ctl, HotspotNetwork(ssid: "Airport", bssid: "02:00:00:00:00:02"))
        let bad = try provider(d, .evaluationProvider, ok: false)
        #expect(try bad.read(type: "stop")?["reason"]?.stringValue == "providerFailed")
        #expect(d.records("providerNoAnswer").last?["cause"]?.stringValue == "start() returned false")
        #expect(d.machine.state == .authenticated)
        bad.send(LifecycleMessage.stopped.json)
        d.providerExited(pid: 5002)
        // Crashes mid-authenticate.
        let (d2, ctl2) = try daemon(evaluatedSSIDs: ["Cafe"])
        try d2.join(ctl2, Self.cafe)
        let auth = try provider(d2, .authenticationProvider)
        _ = try auth.command()
        #expect(d2.machine.state == .authenticating)
        auth.close()
        #expect(d2.records("providerNoAnswer").first?["cause"]?.stringValue?.hasPrefix("provider disconnected") == true)
        #expect(d2.machine.state != .authenticating, "the authenticate counted as no answer at once")
        // Spawn fails.
        let (d3, ctl3) = try daemon()
        d3.spawnFailure = "posix_spawn /opt/eval: No such file or directory"
        try d3.join(ctl3, Self.cafe)
        #expect(d3.records("providerNoAnswer").first?["cause"]?.stringValue?.contains("No such file") == true)
        #expect(d3.machine.state == .authenticated)
    }

    @Test("an app without a provider of the command's role: no answer at once; a launched provider that never connects is killed when idle")
    func missingProviderAndSilentLaunch() throws {
        let authOnly = AppDeclaration(bundleIdentifier: "com.example.auth", displayName: "AuthOnly",
                                      authenticationProvider: ProviderDeclaration(identifier: "com.example.auth.a", command: ["/a"]))
        let (d, ctl) = try daemon(apps: [authOnly], evaluatedSSIDs: ["Cafe"])
        try d.join(ctl, HotspotNetwork(ssid: "Airport", bssid: "02:00:00:00:00:02"))
        let r = try #require(d.records("providerNoAnswer").first)
        #expect(r["cause"]?.stringValue == "app \"com.example.auth\" declares no evaluationProvider")
        #expect(d.machine.state == .authenticated, "unclaimed at once")
        #expect(d.launches.isEmpty)
        // A provider launched for a command that then stops waiting (disassociation) and never connects.
        try d.join(ctl, Self.cafe)
        #expect(d.launches.count == 1)
        #expect(try ctl.request(.disassociate)?["type"]?.stringValue == "ok")
        d.advance(by: d.timing.scaled(d.core.options.providerIdleTimeout))
        #expect(d.records("providerStopped").last?["reason"]?.stringValue == "idleTimeout")
        #expect(d.kills == [5001])
        d.providerExited(pid: 5001, status: nil, signal: 9)
        let s = try d.status(ctl)
        #expect(s["apps"]?.arrayValue?.first?["providers"]?.arrayValue?.first?["state"]?.stringValue == "notRunning")
    }

    @Test("started or stopped from a connection that is not a provider is refused")
    func lifecycleFromNonProvider() throws {
        let (d, _) = try daemon()
        let legacy = try d.helper("com.legacy")
        legacy.send(LifecycleMessage.started(ok: true).json)
        let e = try #require(try legacy.read(type: "error"))
        #expect(e["code"]?.stringValue == "invalidField")
        #expect(e["message"]?.stringValue?.contains("only a registered provider") == true)
    }

    @Test("mixed: a legacy helper and an app's providers on one station")
    func mixedLegacyAndProviders() throws {
        let (d, ctl) = try daemon()
        let legacy = try d.helper("com.legacy")
        try d.join(ctl, Self.cafe)
        let eval = try provider(d, .evaluationProvider)
        try legacy.answer(try legacy.command(), confidence: .low)
        try eval.answer(try eval.command(), confidence: .high)
        #expect(d.machine.bestHelper == "com.example.portal")
    }

    @Test("the new messages round-trip through their JSON")
    func messagesRoundTrip() throws {
        for m in [LifecycleMessage.start, .stop(.idleTimeout), .started(ok: false), .stopped] {
            #expect(try LifecycleMessage(json: m.json) == m)
        }
        #expect(throws: ProtocolError.self) { _ = try LifecycleMessage(json: ["type": "stop", "reason": "bored"]) }
        #expect(try LifecycleMessage(json: ["type": "response"]) == nil, "not a lifecycle message")
        let requests: [ControlRequest] = [
            .setManager(app: "a", ManagerConfiguration(isEnabled: true, evaluatedSSIDs: ["X", "Y"], evaluationProviderBundleIdentifier: "a.e")),
            .setManager(app: "a", ManagerConfiguration(isEnabled: false)), .getManager(app: "a"),
        ]
        for r in requests { #expect(try ControlRequest(json: r.json) == r) }
        let reg = Registration(identifier: "a.e", displayName: "A", version: 1, role: .evaluationProvider, app: "a")
        #expect(try Registration(json: reg.json) == reg)
        #expect(try HelperMessage(json: reg.json) == .register(identifier: "a.e", displayName: "A", version: 1),
                "a legacy reader sees a plain register")
        #expect(ProviderStopReason.allCases.count == 17)
    }

    @Test("the apps file: parse errors name the file and the JSON path; render then parse is the identity")
    func appsFile() throws {
        let bytes = AppsFile.render([Self.app])
        #expect(try AppsFile.parse(bytes, file: "apps.json") == [Self.app])
        func error(_ text: String) -> String? {
            do {
                _ = try AppsFile.parse(Array(text.utf8), file: "/x/apps.json")
                return nil
            } catch { return error.message }
        }
        #expect(error(#"{"apps":[{"bundleIdentifier":"a","displayName":"A","evaluationProvider":{"identifier":"a.e","command":"/bin/x"}}]}"#)
            == "/x/apps.json: apps[0].evaluationProvider.command: expected a non-empty array of strings (an argv, no shell)")
        #expect(error(#"{"apps":[{"displayName":"A"}]}"#) == "/x/apps.json: apps[0].bundleIdentifier: expected a string of 1 to 255 bytes")
        #expect(error(#"{"apps":{}}"#) == "/x/apps.json: apps: missing or not an array")
        #expect(error(#"{"apps":[{"bundleIdentifier":"a","displayName":"A"},{"bundleIdentifier":"a","displayName":"B"}]}"#)
            == "/x/apps.json: apps[1].bundleIdentifier: \"a\" is declared twice")
    }
}

extension EmbeddedDaemon {
    var machine: HotspotMachine { core.machine }
    var timing: Timing { core.options.timing }
}

extension EmbeddedDaemon.Peer {
    /// Sends a raw control request and returns its reply.
    func request(json: JSON, requestID: JSON? = nil) throws(ProtocolError) -> JSON? {
        var j = json
        if let requestID, case .object(var o) = j {
            o["requestID"] = requestID
            j = .object(o)
        }
        send(j)
        return try read().last { $0["type"]?.stringValue != "trace" }
    }
}
