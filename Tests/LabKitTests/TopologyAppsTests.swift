import Foundation
import HotspotProtocol
import Testing
@testable import LabKit
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabServices
@testable import LabTopology

/// `stations[].apps` (docs/TOPOLOGY.md "Apps"): provider pairs and legacy helper apps with their manager
/// configuration; every bad input fails with file:line:column and the field.
@Suite struct TopologyAppsTests {
    static func yaml(_ apps: String) -> String {
        TopologyParserTests.base + "\nstations:\n  - name: phone\n    apps:\n" + apps
    }

    func failure(_ yaml: String) -> TopologyError? {
        do {
            _ = try TopologyParser.parse(yaml, file: "bad.yaml")
            return nil
        } catch let error as TopologyError {
            return error
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }

    static let pair = """
              - bundle-id: com.hotspotlab.portal
                display-name: Portal Login
                evaluation-provider: hotspot-provider-portal-evaluation --network Cafe
                authentication-provider:
                  identifier: com.hotspotlab.portal.auth
                  command: hotspot-provider-portal-authentication --account u:p
                manager:
                  enabled: true
                  evaluated-ssids: [Cafe]
                  evaluation-provider: com.hotspotlab.portal.evaluation
        """

    @Test func providerPairAndLegacyApp() throws {
        let t = try TopologyParser.parse(Self.yaml(Self.pair + """

                  - bundle-id: com.example.legacy
                    helper: hotspot-helper-voucher --network Cafe
            """), file: "t.yaml")
        let apps = t.stations[0].apps
        #expect(apps.count == 2)
        #expect(apps[0] == StationApp(
            bundleIdentifier: "com.hotspotlab.portal", displayName: "Portal Login",
            evaluationProvider: StationProvider(identifier: "com.hotspotlab.portal.evaluation", command: "hotspot-provider-portal-evaluation --network Cafe"),
            authenticationProvider: StationProvider(identifier: "com.hotspotlab.portal.auth", command: "hotspot-provider-portal-authentication --account u:p"),
            manager: ManagerConfiguration(isEnabled: true, evaluatedSSIDs: ["Cafe"], evaluationProviderBundleIdentifier: "com.hotspotlab.portal.evaluation")))
        // The legacy app: display name from the bundle identifier, run as a helper under the app's identifier.
        #expect(apps[1].displayName == "legacy" && apps[1].manager == nil && !apps[1].hasProviders)
        #expect(t.stations[0].helperCommands == ["HOTSPOT_HELPER_IDENTIFIER=com.example.legacy hotspot-helper-voucher --network Cafe"])
        // What hotspotd's --apps file declares for the pair (commands resolved to argv).
        let declaration = apps[0].declaration { RunningStation.words($0) }
        #expect(declaration.authenticationProvider?.command == ["hotspot-provider-portal-authentication", "--account", "u:p"])
        #expect(try AppsFile.parse(AppsFile.render([declaration]), file: "apps.json") == [declaration])
    }

    @Test func thirdEvaluatedSSID() throws {
        let e = try #require(failure(Self.yaml(Self.pair.replacingOccurrences(of: "[Cafe]", with: "[Cafe, Bar, Lounge]"))))
        #expect(e.description == "bad.yaml:24:40: stations[0].apps[0].manager.evaluated-ssids[2]: at most 2 evaluated SSIDs (NEHotspotManager.evaluatedSSIDs), found 3")
    }

    @Test func unknownEvaluationProviderBundleIdentifier() throws {
        let e = try #require(failure(Self.yaml(Self.pair.replacingOccurrences(of: "evaluation-provider: com.hotspotlab.portal.evaluation", with: "evaluation-provider: com.other.evaluation"))))
        #expect(e.description == "bad.yaml:25:32: stations[0].apps[0].manager.evaluation-provider: unknown bundle identifier `com.other.evaluation`; the app's evaluation provider is `com.hotspotlab.portal.evaluation`")
    }

    @Test func roleNotDeclared() throws {
        // The manager names an evaluation provider the app does not declare.
        let noEvaluation = Self.pair.replacingOccurrences(of: "        evaluation-provider: hotspot-provider-portal-evaluation --network Cafe\n", with: "")
        let e = try #require(failure(Self.yaml(noEvaluation)))
        #expect(e.field == "stations[0].apps[0].manager.evaluation-provider")
        #expect(e.message.contains("declares no evaluation provider"))
        #expect(e.line == 24)
        // A legacy helper app has no provider role for a manager.
        let legacy = try #require(failure(Self.yaml("      - bundle-id: com.example.legacy\n        helper: h\n        manager: {enabled: true}\n")))
        #expect(legacy.field == "stations[0].apps[0].manager" && legacy.line == 18 && legacy.message.contains("declares no provider role"))
        // Both a helper and providers.
        let both = try #require(failure(Self.yaml("      - bundle-id: com.example.x\n        helper: h\n        authentication-provider: p\n")))
        #expect(both.field == "stations[0].apps[0].helper" && both.message.contains("not both"))
        // Nothing to run.
        let none = try #require(failure(Self.yaml("      - bundle-id: com.example.x\n        display-name: X\n")))
        #expect(none.field == "stations[0].apps[0]" && none.line == 16 && none.message.contains("declares nothing to run"))
        // A role key that is not one.
        let role = try #require(failure(Self.yaml("      - bundle-id: com.example.x\n        evaluator: p\n")))
        #expect(role.field == "stations[0].apps[0].evaluator" && role.message.contains("unknown key `evaluator`"))
    }

    @Test func identifiersAndNames() throws {
        let dup = try #require(failure(Self.yaml("      - {bundle-id: com.x, helper: a}\n      - {bundle-id: com.x, helper: b}\n")))
        #expect(dup.field == "stations[0].apps[1].bundle-id" && dup.line == 17 && dup.message.contains("first used by stations[0].apps[0].bundle-id"))
        let same = try #require(failure(Self.yaml("      - {bundle-id: com.x, evaluation-provider: {identifier: com.x.p, command: a}, authentication-provider: {identifier: com.x.p, command: b}}\n")))
        #expect(same.field == "stations[0].apps[0].authentication-provider" && same.message.contains("also the evaluation provider's"))
        let bad = try #require(failure(Self.yaml("      - {bundle-id: \"com x\", helper: a}\n")))
        #expect(bad.field == "stations[0].apps[0].bundle-id" && bad.message.contains("expected a bundle identifier"))
        let long = try #require(failure(Self.yaml("      - {bundle-id: com.x, display-name: A Very Long App Name, helper: a}\n")))
        #expect(long.field == "stations[0].apps[0].display-name" && long.message.contains("at most 15 characters"))
        let ssid = try #require(failure(Self.yaml("      - {bundle-id: com.x, authentication-provider: a, manager: {enabled: true, evaluated-ssids: [\"\(String(repeating: "s", count: 33))\"]}}\n")))
        #expect(ssid.field == "stations[0].apps[0].manager.evaluated-ssids[0]" && ssid.message.contains("at most 32 bytes"))
        let enabled = try #require(failure(Self.yaml("      - {bundle-id: com.x, authentication-provider: a, manager: {evaluated-ssids: [Cafe]}}\n")))
        #expect(enabled.field == "stations[0].apps[0].manager" && enabled.message.contains("missing key `enabled`"))
    }

    /// A step may name a provider app by its bundle identifier; another name is refused with the station's apps listed.
    @Test func scenarioNamesProviderApps() throws {
        let topology = try TopologyParser.parse(Self.yaml(Self.pair), file: "t.yaml")
        let ok = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - foreground: com.hotspotlab.portal\n", file: "s.yaml")
        try ScenarioCheck.validate(ok, against: topology)
        let bad = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - foreground: com.hotspotlab.other\n", file: "s.yaml")
        #expect {
            try ScenarioCheck.validate(bad, against: topology)
        } throws: { error in
            "\(error)".contains("unknown helper `com.hotspotlab.other` on station phone; its helpers: none; its provider apps: com.hotspotlab.portal")
        }
    }
}

/// What the lab makes of a station's apps before hotspotd starts (no root): the apps file and the providers' argv.
extension TopologyAppsTests {
    @Test func appsFileForHotspotd() throws {
        let topology = try TopologyParser.parse(Self.yaml(Self.pair + """

                  - bundle-id: com.example.legacy
                    helper: hotspot-test-helper --evaluate low
            """), file: "t.yaml")
        let dir = NSTemporaryDirectory() + "hsl-apps-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let arguments = try RunningStation.writeAppsFile(topology.stations[0], directory: dir)
        #expect(arguments == ["--apps", dir + "/apps.json"])
        let bytes = try #require(FileManager.default.contents(atPath: dir + "/apps.json"))
        let apps = try AppsFile.parse(Array(bytes), file: "apps.json")
        // Only the provider app; the legacy one runs as a helper.
        #expect(apps.map(\.bundleIdentifier) == ["com.hotspotlab.portal"])
        let argv = try #require(apps[0].authenticationProvider?.command)
        let ui = dir + "/ui/app-com.hotspotlab.portal"
        #expect(argv.first?.hasSuffix("/env") == true && argv[1] == "HOTSPOT_HELPER_UI=" + ui)
        #expect(argv.suffix(2) == ["--account", "u:p"])
        #expect(argv[2].hasSuffix("hotspot-provider-portal-authentication"))
        #expect(FileManager.default.fileExists(atPath: ui))
        // A station without provider apps: no apps file, hotspotd as before.
        #expect(try RunningStation.writeAppsFile(Station(name: "p", helpers: ["h"], knownNetworks: []), directory: dir).isEmpty)
    }

    /// A legacy helper app is named by its bundle identifier (its helper's SDK identifier).
    @Test func scenarioNamesLegacyHelperApp() throws {
        let topology = try TopologyParser.parse(Self.yaml("      - {bundle-id: com.example.legacy, helper: my-vendor-helper}\n"), file: "t.yaml")
        try ScenarioCheck.validate(try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - foreground: com.example.legacy\n", file: "s.yaml"), against: topology)
        try ScenarioCheck.validate(try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - foreground: my-vendor-helper\n", file: "s.yaml"), against: topology)
        #expect(throws: (any Error).self) {
            try ScenarioCheck.validate(try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - foreground: com.example.other\n", file: "s.yaml"), against: topology)
        }
    }
}
