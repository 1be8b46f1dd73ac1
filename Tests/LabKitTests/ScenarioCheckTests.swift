import Foundation
import Testing
@testable import LabKit
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabTopology

/// Issue 17: a scenario naming an unknown station, hotspot, helper or access point is refused with
/// `file:line:column` before any lab is built (and so before a VM boots, and without a retry). No root.
@Suite("Scenario cross-references checked against the topology (no root)")
struct ScenarioCheckTests {
    static let topologyPath = "topologies/captive.yaml"

    /// The first unknown reference of a scenario over topologies/captive.yaml (nil: none).
    static func check(_ header: String = "", _ steps: String, helperOverride: [String]? = nil) throws -> TopologyError? {
        let scenario = try ScenarioParser.parse("topology: \(FileManager.default.currentDirectoryPath)/\(topologyPath)\n\(header)steps:\n\(steps)",
                                                file: "s.yaml")
        let topology = try TopologyParser.load(path: scenario.topologyPath)
        do {
            try ScenarioCheck.validate(scenario, against: topology, helperOverride: helperOverride)
            return nil
        } catch let error as TopologyError {
            return error
        }
    }

    @Test("every shipped scenario's references are in its topology")
    func shippedScenariosValidate() throws {
        let folder = "topologies/scenarios"
        for file in try FileManager.default.contentsOfDirectory(atPath: folder).filter({ $0.hasSuffix(".yaml") }).sorted() {
            let scenario = try ScenarioParser.load(path: folder + "/" + file)
            let topology = try TopologyParser.load(path: scenario.topologyPath)
            #expect(throws: Never.self, "\(file)") { try ScenarioCheck.validate(scenario, against: topology) }
        }
    }

    @Test("an unknown station, hotspot, helper or access point: file:line:column, the field, and what the topology has")
    func unknownReferences() throws {
        let station = try #require(try Self.check("station: tablet\n", "  - leave\n"))
        #expect(station.description == "s.yaml:2:10: station: unknown station `tablet`; the topology \(FileManager.default.currentDirectoryPath)/\(Self.topologyPath) has: phone")

        let hotspot = try #require(try Self.check("", "  - leave\n  - gate: {expect: authenticated, hotspot: cafx}\n"))
        #expect(hotspot.line == 4 && hotspot.column == 44 && hotspot.field == "steps[1].gate.hotspot")
        #expect(hotspot.message == "unknown hotspot `cafx`; the topology \(FileManager.default.currentDirectoryPath)/\(Self.topologyPath) has: cafe")
        for step in ["expire-session: cafx", "ap: {state: down, hotspot: cafx}", "uplink: {state: down, hotspot: cafx}", "link: {hotspot: cafx}",
                     "dns: {mode: hijack, hotspot: cafx}", "portal: {kind: down, hotspot: cafx}", "signal: {hotspot: cafx, dbm: -40}"] {
            #expect(try Self.check("", "  - \(step)\n")?.message.hasPrefix("unknown hotspot `cafx`") == true, "\(step)")
        }

        let helper = try #require(try Self.check("", "  - foreground: hotspot-helper-portl\n"))
        #expect(helper.line == 3 && helper.column == 17 && helper.field == "steps[0].foreground")
        #expect(helper.message == "unknown helper `hotspot-helper-portl` on station phone; its helpers: hotspot-helper-portal (com.hotspotlab.portal)")
        for step in ["kill-helper: x", "stop-helper: x", "continue-helper: x", "expect-notification: x", "logoff: {helper: x}",
                     "type: {helper: x, text: t}", "expect-command: {command: maintain, helper: x}", "expect-cache: {ssid: S, helper: x}",
                     "foreground: com.hotspotlab.voucher"] {
            #expect(try Self.check("", "  - \(step)\n")?.message.hasPrefix("unknown helper") == true, "\(step)")
        }

        let bssid = try #require(try Self.check("", "  - roam: \"02:00:00:00:01:09\"\n"))
        #expect(bssid.field == "steps[0].roam" && bssid.line == 3)
        #expect(bssid.message.hasPrefix("unknown access point `02:00:00:00:01:09`; the topology"))
        #expect(bssid.message.hasSuffix("has: cafe 02:00:00:00:01:00"))
        let inHotspot = try #require(try Self.check("", "  - signal: {hotspot: cafe, bssid: \"02:00:00:00:01:09\", dbm: -40}\n"))
        #expect(inHotspot.message == "hotspot cafe has no access point `02:00:00:00:01:09`; its access points: cafe 02:00:00:00:01:00")
    }

    @Test("helpers are named by executable, by --id/--identifier, or by a reference helper's own identifier; --helper skips the helper check")
    func helperNames() throws {
        #expect(try Self.check("", "  - foreground: hotspot-helper-portal\n  - logoff: com.hotspotlab.portal\n  - kill-helper: portal\n") == nil)
        let custom = "helpers: ['hotspot-test-helper --id com.example.slow --name Slow']\n"
        #expect(try Self.check(custom, "  - expect-cache: {ssid: Cafe Lumiere, helper: com.example.slow}\n  - stop-helper: hotspot-test-helper\n") == nil)
        #expect(try Self.check(custom, "  - foreground: hotspot-helper-portal\n")?.message
                == "unknown helper `hotspot-helper-portal` on station phone; its helpers: hotspot-test-helper (com.example.slow)")
        // A vendor's helper registers with an identifier only it knows: identifiers are accepted, typos of its name are not.
        let vendor = "helpers: ['/opt/acme/acme-helper --account x']\n"
        #expect(try Self.check(vendor, "  - foreground: com.acme.wifi\n  - kill-helper: acme-helper\n") == nil)
        #expect(try Self.check(vendor, "  - kill-helper: acme-helpr\n")?.message == "unknown helper `acme-helpr` on station phone; its helpers: acme-helper")
        #expect(try Self.check("", "  - foreground: anything\n", helperOverride: ["my-helper"]) == nil)
    }

    @Test("the runner refuses an invalid scenario before building a lab, and does not retry it")
    func runnerRefusesBeforeBuilding() throws {
        let scenario = try ScenarioParser.parse("topology: \(Self.topologyPath)\nsteps:\n  - expire-session: cafx\n", file: "s.yaml")
        let result = ScenarioRunner(logRoot: "/nonexistent/hotspot-lab-check").runWithRetry(scenario)
        #expect(!result.passed && result.invalid)
        #expect(result.attempts == 1)
        #expect(result.steps.isEmpty && result.logDirectory.isEmpty)
        #expect(result.setupError == "s.yaml:3:21: steps[0].expire-session: unknown hotspot `cafx`; the topology \(Self.topologyPath) has: cafe")
    }
}
