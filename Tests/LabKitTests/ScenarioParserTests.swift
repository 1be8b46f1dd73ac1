import Foundation
import HotspotProtocol
import Testing
@testable import LabKit
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabServices
@testable import LabTopology

/// Scenario files: every shipped one parses (and its topology); errors name file:line:column, the field and
/// what was expected; --shard splits a suite into disjoint parts whose union is the suite.
@Suite("Scenario files (no root)")
struct ScenarioParserTests {
    static let folder = "topologies/scenarios"

    func failure(_ yaml: String) -> TopologyError? {
        do {
            _ = try ScenarioParser.parse(yaml, file: "s.yaml")
            return nil
        } catch let error as TopologyError {
            return error
        } catch {
            return nil
        }
    }

    @Test("every shipped scenario parses, names an existing topology with a station, and has steps")
    func shippedScenariosParse() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder).filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(Set(["captive.yaml", "not-captive.yaml", "cached.yaml", "ui-required.yaml"]).isSubset(of: Set(files)))
        for file in files {
            let scenario = try ScenarioParser.load(path: Self.folder + "/" + file)
            #expect(!scenario.steps.isEmpty)
            let topology = try TopologyParser.load(path: scenario.topologyPath)
            #expect(!topology.stations.isEmpty, "\(file): its topology has no station")
        }
    }

    @Test("steps carry their line and a one-line text; arguments are read")
    func stepsAndArguments() throws {
        let scenario = try ScenarioParser.parse("""
            topology: captive.yaml
            maintain-interval: 4
            steps:
              - join: Cafe Lumiere
              - wait-state: {state: Maintaining, timeout: 15}
              - expect-states: [Evaluating, Authenticated]
              - expect-command: {command: maintain, result: success, did-just-join: true}
              - leave
              - application: blocked
              - portal: {kind: click-through, settings: {https-only: "true"}}
            """, file: "dir/s.yaml")
        #expect(scenario.topologyPath == "dir/captive.yaml")
        #expect(scenario.maintainInterval == 4)
        #expect(scenario.steps.map(\.line) == [4, 5, 6, 7, 8, 9, 10])
        #expect(scenario.steps[1].text == "wait-state: {state: Maintaining, timeout: 15}")
        #expect(scenario.steps[4].text == "leave")
        let wait = try #require(scenario.steps[1].action as? WaitStateStep, "wait-state")
        #expect(wait.state == "Maintaining")
        #expect(wait.timeout == 15)
        let command = try #require(scenario.steps[3].action as? ExpectCommandStep, "expect-command: \(scenario.steps[3].action)")
        #expect(command.command == "maintain" && command.result == "success" && command.helper == nil && command.didJustJoin == true
                && !command.absent && command.signal == nil && command.count == nil, "expect-command: \(command)")
        let application = try #require(scenario.steps[5].action as? ApplicationStep, "application")
        #expect(application.expect == .blocked && application.url == nil)
        let portal = try #require(scenario.steps[6].action as? PortalStep, "portal")
        #expect(portal.kind == "click-through" && portal.hotspot == nil)
        #expect(portal.settings == ["https-only": "true"])
    }

    @Test("signal, roam, and expect-command's signal strength bounds and count")
    func signalAndRoam() throws {
        let scenario = try ScenarioParser.parse("""
            topology: roaming.yaml
            steps:
              - signal: {hotspot: cafe, dbm: -50}
              - signal: {bssid: "02:00:00:00:01:0A", dbm: normal}
              - roam: "02:00:00:00:01:01"
              - roam: {bssid: "02:00:00:00:01:01", timeout: 5}
              - expect-command: {command: maintain, max-signal-strength: 0.7}
              - expect-command: {command: evaluate, count: 1, min-signal-strength: 0.5}
            """, file: "s.yaml")
        let signal = try #require(scenario.steps[0].action as? SignalStep, "signal: \(scenario.steps[0].action)")
        #expect(signal.hotspot == "cafe" && signal.bssid == nil && signal.dbm == -50, "signal: \(signal)")
        let normal = try #require(scenario.steps[1].action as? SignalStep, "signal normal: \(scenario.steps[1].action)")
        #expect(normal.hotspot == nil && normal.bssid == "02:00:00:00:01:0a" && normal.dbm == nil, "signal normal: \(normal)")
        let roam = try #require(scenario.steps[2].action as? RoamStep, "roam: \(scenario.steps[2].action)")
        #expect(roam.bssid == "02:00:00:00:01:01" && roam.timeout == 30, "roam: \(roam)")
        let roamTimeout = try #require(scenario.steps[3].action as? RoamStep, "roam timeout: \(scenario.steps[3].action)")
        #expect(roamTimeout.bssid == "02:00:00:00:01:01" && roamTimeout.timeout == 5, "roam timeout: \(roamTimeout)")
        let high = try #require(scenario.steps[4].action as? ExpectCommandStep, "max-signal-strength: \(scenario.steps[4].action)")
        #expect(high.command == "maintain" && high.result == nil && high.helper == nil && high.didJustJoin == nil && !high.absent
                && high.signal == 0...0.7 && high.count == nil, "max-signal-strength: \(high)")
        let low = try #require(scenario.steps[5].action as? ExpectCommandStep, "count, min-signal-strength: \(scenario.steps[5].action)")
        #expect(low.command == "evaluate" && low.result == nil && low.helper == nil && low.didJustJoin == nil && !low.absent
                && low.signal == 0.5...1 && low.count == 1, "count, min-signal-strength: \(low)")
        // A replay (--to-scenario) writes each step as its one-line text: it parses back to the same step.
        for step in scenario.steps.prefix(4) {
            let again = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - \(step.text)\n", file: "replay.yaml").steps[0]
            #expect(String(describing: again.action) == String(describing: step.action), "\(step.text)")
        }
    }

    @Test("signal, roam and signal-strength errors name file:line:column, the field and what was expected")
    func signalAndRoamErrors() throws {
        let tooWeak = try #require(failure("topology: t.yaml\nsteps:\n  - signal: {hotspot: cafe, dbm: -75}\n"))
        #expect(tooWeak.line == 3 && tooWeak.column == 34)
        #expect(tooWeak.field == "steps[0].signal.dbm")
        #expect(tooWeak.message == "expected a received signal in -50...-30 dBm (mac80211_hwsim gives -50 dBm + the access point's tx power, 0 to 20 dBm) or `normal`, found scalar `-75`")
        let noDBM = try #require(failure("topology: t.yaml\nsteps:\n  - signal: {hotspot: cafe}\n"))
        #expect(noDBM.field == "steps[0].signal" && noDBM.message == "missing key `dbm`")
        let scalar = try #require(failure("topology: t.yaml\nsteps:\n  - signal: -40\n"))
        #expect(scalar.message.hasPrefix("expected a mapping with keys hotspot, bssid, dbm"))
        let badBSSID = try #require(failure("topology: t.yaml\nsteps:\n  - roam: 02:00:00:00:01\n"))
        #expect(badBSSID.field == "steps[0].roam")
        #expect(badBSSID.message == "expected a unicast MAC address such as 02:00:00:00:01:01, found `02:00:00:00:01`")
        let multicast = try #require(failure("topology: t.yaml\nsteps:\n  - signal: {bssid: \"01:00:5e:00:00:01\", dbm: -40}\n"))
        #expect(multicast.field == "steps[0].signal.bssid")
        let badTimeout = try #require(failure("topology: t.yaml\nsteps:\n  - roam: {bssid: \"02:00:00:00:01:01\", timeout: 0}\n"))
        #expect(badTimeout.field == "steps[0].roam.timeout" && badTimeout.message.hasPrefix("expected a number in 1.0...600.0"))
        let range = try #require(failure("topology: t.yaml\nsteps:\n  - expect-command: {command: maintain, min-signal-strength: 0.8, max-signal-strength: 0.2}\n"))
        #expect(range.field == "steps[0].expect-command.max-signal-strength")
        #expect(range.message == "expected max-signal-strength >= min-signal-strength (0.8), found 0.2")
        let strength = try #require(failure("topology: t.yaml\nsteps:\n  - expect-command: {command: maintain, max-signal-strength: 2}\n"))
        #expect(strength.message == "expected a number in 0.0...1.0, found 2.0")
        let count = try #require(failure("topology: t.yaml\nsteps:\n  - expect-command: {command: maintain, count: 0}\n"))
        #expect(count.field == "steps[0].expect-command.count")
    }

    @Test("errors name file:line:column, the field and what was expected")
    func errors() throws {
        let unknownStep = try #require(failure("topology: t.yaml\nsteps:\n  - jump: Cafe\n"))
        #expect(unknownStep.description.hasPrefix("s.yaml:3:5: steps[0]: unknown step `jump`; expected one of: ap, application, auto-join"))
        let badState = try #require(failure("topology: t.yaml\nsteps:\n  - wait-state: Authenticatd\n"))
        #expect(badState.line == 3 && badState.column == 17)
        #expect(badState.field == "steps[0].wait-state")
        #expect(badState.message.hasPrefix("unknown state `Authenticatd`; expected one of: Inactive, Evaluating"))
        let badResult = try #require(failure("topology: t.yaml\nsteps:\n  - expect-command: {command: maintain, result: sucess}\n"))
        #expect(badResult.field == "steps[0].expect-command.result")
        #expect(badResult.message.contains("unknown result `sucess`"))
        let badKey = try #require(failure("topology: t.yaml\nstep: []\n"))
        #expect(badKey.message.hasPrefix("unknown key `step`"))
        let missing = try #require(failure("steps:\n  - leave\n"))
        #expect(missing.message == "missing key `topology`")
        let badTimeout = try #require(failure("topology: t.yaml\nsteps:\n  - wait-state: {state: Inactive, timeout: soon}\n"))
        #expect(badTimeout.field == "steps[0].wait-state.timeout")
        #expect(badTimeout.message.contains("expected a number"))
        let twoKeys = try #require(failure("topology: t.yaml\nsteps:\n  - {join: Cafe, leave: null}\n"))
        #expect(twoKeys.message.hasPrefix("expected one step per list item"))
        let https = try #require(failure("topology: t.yaml\nsteps:\n  - portal: {kind: form-login, settings: {https-only: yes-please}}\n"))
        #expect(https.field == "steps[0].portal.settings.https-only")
        #expect(https.message == "expected \"true\" or \"false\", found `yes-please`")
        let empty = try #require(failure("topology: t.yaml\nsteps: []\n"))
        #expect(empty.message == "expected at least one step")
    }

    @Test("fault steps: link sides and DNS modes are read; unknown ones are named")
    func faultSteps() throws {
        let scenario = try ScenarioParser.parse("""
            topology: captive.yaml
            steps:
              - link: {side: radio, loss-percent: 100}
              - link: {latency-ms: 300, jitter-ms: 50}
              - dns: servfail
              - dns: {mode: private, hotspot: cafe}
            """, file: "s.yaml")
        let radio = try #require(scenario.steps[0].action as? LinkQualityStep, "\(scenario.steps[0].action)")
        #expect(radio.hotspot == nil && radio.side == .radio && radio.latencyMS == 0 && radio.jitterMS == 0 && radio.lossPercent == 100
                && radio.rateKbit == 0, "\(radio)")
        let uplink = try #require(scenario.steps[1].action as? LinkQualityStep, "\(scenario.steps[1].action)")
        #expect(uplink.hotspot == nil && uplink.side == .uplink && uplink.latencyMS == 300 && uplink.jitterMS == 50 && uplink.lossPercent == 0
                && uplink.rateKbit == 0, "\(uplink)")
        let servfail = try #require(scenario.steps[2].action as? DNSStep, "\(scenario.steps[2].action)")
        #expect(servfail.mode == "servfail" && servfail.hotspot == nil)
        let privateDNS = try #require(scenario.steps[3].action as? DNSStep, "\(scenario.steps[3].action)")
        #expect(privateDNS.mode == "private" && privateDNS.hotspot == "cafe")
        let side = try #require(failure("topology: t.yaml\nsteps:\n  - link: {side: air, loss-percent: 5}\n"))
        #expect(side.field == "steps[0].link.side")
        #expect(side.message == "unknown link side `air`; expected one of: uplink, radio")
        let mode = try #require(failure("topology: t.yaml\nsteps:\n  - dns: nxdomain\n"))
        #expect(mode.message == "unknown DNS mode `nxdomain`; expected one of: no-answer, normal, refused, hijack, servfail, private")
    }

    @Test("--shard K/N: disjoint shards whose union is the suite, in any N")
    func shards() throws {
        let items = (1...11).map { "s\($0).yaml" }
        for n in 1...5 {
            let parts = try (1...n).map { try Shard.parse("\($0)/\(n)").select(items) }
            #expect(parts.flatMap { $0 }.sorted() == items.sorted())
            #expect(Set(parts.flatMap { $0 }).count == items.count)
        }
        #expect(throws: ShardError.self) { try Shard.parse("0/3") }
        #expect(throws: ShardError.self) { try Shard.parse("4/3") }
        #expect(throws: ShardError.self) { try Shard.parse("two") }
    }

    @Test("the scan list as a person sees it: each claimed network annotated with its helper's display name")
    func scanListRendering() throws {
        let entries: [JSON] = [
            ["ssid": "Cafe Lumiere", "security": "open", "annotation": "Portal Login"],
            ["ssid": "Office Secure", "security": "wpa2-psk", "isSecure": true, "annotation": .null],
        ]
        let lines = ShowScanListStep.render(scanList: try entries.map { try JSONCoding.decode(TraceScanListEntry.self, from: $0) })
        #expect(lines == ["   Cafe Lumiere  — Portal Login", "🔒 Office Secure"])
    }

    @Test("helper command lines: spaces separate, double quotes group")
    func helperWords() {
        #expect(RunningStation.words(#"hotspot-helper-portal --account guest:croissant --network "Cafe Lumiere""#)
                == ["hotspot-helper-portal", "--account", "guest:croissant", "--network", "Cafe Lumiere"])
        #expect(RunningStation.words("  a   b ") == ["a", "b"])
        #expect(RunningStation.words(#"x --n """#) == ["x", "--n", ""])
    }

    @Test("helper command lines: leading NAME=value words are the helper's environment, as in a shell")
    func helperEnvironment() {
        let (environment, words) = RunningStation.environmentAndWords(#"HOTSPOT_CA_FILE=/etc/ssl/certs/ca-certificates.crt _X1="a b" hotspot-helper-portal --account k=v"#)
        #expect(environment.map(\.0) == ["HOTSPOT_CA_FILE", "_X1"])
        #expect(environment.map(\.1) == ["/etc/ssl/certs/ca-certificates.crt", "a b"])
        #expect(words == ["hotspot-helper-portal", "--account", "k=v"])
        #expect(RunningStation.executableName("A=1 /opt/acme/helper --x") == "helper")
        // Not a name: the word is the executable.
        #expect(RunningStation.environmentAndWords("1X=2 helper").words == ["1X=2", "helper"])
        #expect(RunningStation.environmentAndWords("--flag=2 helper").environment.isEmpty)
    }
}
