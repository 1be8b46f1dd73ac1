import Foundation
import HotspotSystem
import Testing
@testable import LabKit
@testable import LabCertify
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabTopology

/// The hotspot-lab binary's own front door (no root, no VM: everything here is refused or printed before a
/// lab or a VM is started): bad input gets an error naming the file, line, field or message.
@Suite("hotspot-lab command line (no root)")
struct CLITests {
    static func hotspotLab(_ arguments: [String]) throws -> ProcessResult {
        let binary = try BuildProducts.locate("hotspot-lab")
        return try ProcessRunner.run(ProcessConfiguration(binary, arguments), timeout: .seconds(60))
    }

    static func temp(_ name: String, _ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-cli-\(getpid())-\(name)").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("bench profile --report of a folder without a profile names the file it could not read")
    func profileReportNamesTheMissingFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-cli-\(getpid())-no-profile").path
        let result = try Self.hotspotLab(["bench", "profile", "--report", folder])
        #expect(result.status == .exited(1))
        #expect(result.stderr.contains("read the profile folder's acct"), "\(result.stderr)")
        #expect(result.stderr.contains("\(folder)/acct: No such file or directory (ENOENT)"), "\(result.stderr)")
    }

    @Test("run refuses a bad scenario with file:line:column before building anything")
    func runRefusesBadScenario() throws {
        let file = try Self.temp("bad.yaml", "topology: \(FileManager.default.currentDirectoryPath)/topologies/captive.yaml\nsteps:\n  - wait-state: Authenticatd\n")
        defer { unlink(file) }
        let result = try Self.hotspotLab(["run", file, "--where", "host"])
        #expect(result.status == .exited(2))
        #expect(result.stderr.contains("\(file):3:17: steps[0].wait-state: unknown state `Authenticatd`"), "\(result.stderr)")
    }

    @Test("run refuses a scenario whose topology is malformed, naming the topology's line")
    func runRefusesBadTopology() throws {
        let topology = try Self.temp("topo.yaml", "hotspots:\n  - name: x\n    colour: red\n")
        let scenario = try Self.temp("s.yaml", "topology: \(topology)\nsteps:\n  - leave\n")
        defer { unlink(topology); unlink(scenario) }
        let result = try Self.hotspotLab(["run", scenario, "--where", "host"])
        #expect(result.status == .exited(2))
        #expect(result.stderr.contains("\(topology):3:5: hotspots[0].colour: unknown key `colour`"), "\(result.stderr)")
    }

    @Test("run refuses a scenario naming a hotspot, helper or station its topology lacks, before a VM boots (issue 17)")
    func runRefusesUnknownReferences() throws {
        let topology = "\(FileManager.default.currentDirectoryPath)/topologies/captive.yaml"
        let file = try Self.temp("refs.yaml", "topology: \(topology)\nsteps:\n  - join: Cafe Lumiere\n  - expire-session: lounge\n")
        defer { unlink(file) }
        // `--where vm`: the check is on the host, before the VM would boot.
        let result = try Self.hotspotLab(["run", file, "--where", "vm"])
        #expect(result.status == .exited(2))
        #expect(result.stderr.contains("\(file):4:21: steps[1].expire-session: unknown hotspot `lounge`; the topology \(topology) has: cafe"),
                "\(result.stderr)")
        #expect(!result.stderr.contains("running in the VM"), "\(result.stderr)")
        let helper = try Self.temp("helper.yaml", "topology: \(topology)\nsteps:\n  - kill-helper: hotspot-helper-vouchr\n")
        defer { unlink(helper) }
        let refused = try Self.hotspotLab(["run", helper, "--where", "vm"])
        #expect(refused.status == .exited(2))
        #expect(refused.stderr.contains("\(helper):3:18: steps[0].kill-helper: unknown helper `hotspot-helper-vouchr` on station phone"), "\(refused.stderr)")
    }

    @Test("certify: unknown check, missing helper, the list of checks; run: a bad shard")
    func certifyArguments() throws {
        let unknown = try Self.hotspotLab(["certify", "--helper", "x", "--check", "telepathy"])
        #expect(unknown.status == .exited(64))
        #expect(unknown.stderr.contains("--check telepathy: unknown; expected some of: deadlines, decoys"), "\(unknown.stderr)")
        let missing = try Self.hotspotLab(["certify"])
        #expect(missing.status == .exited(64))
        #expect(missing.stderr.contains("--helper CMD is required"))
        let list = try Self.hotspotLab(["certify", "--list"])
        #expect(list.status == .exited(0))
        #expect(list.stdout.split(separator: "\n").count == CertificationCheck.all.count)
        // A provider pair: its four checks too; they are refused for a helper; a helper and a pair together are refused.
        let pairList = try Self.hotspotLab(["certify", "--list", "--evaluation-provider", "e", "--authentication-provider", "a"])
        #expect(pairList.stdout.split(separator: "\n").count == CertificationCheck.all.count + CertificationCheck.providerChecks.count)
        #expect(pairList.stdout.contains("nothing-after-stop: no command is answered by a provider after its stop"))
        let pairCheck = try Self.hotspotLab(["certify", "--helper", "x", "--check", "start-stop"])
        #expect(pairCheck.status == .exited(64))
        #expect(pairCheck.stderr.contains("--check start-stop: a provider pair's check; give --evaluation-provider CMD --authentication-provider CMD"), "\(pairCheck.stderr)")
        // An app manifest is checked on the host before anything boots: file:line:column, exit 2.
        let manifest = try Self.temp("app.yaml", "bundle-id: com.acme\nevaluation-provider: e\nmanager: {enabled: true, evaluated-ssids: [a, b, c]}\n")
        defer { unlink(manifest) }
        let badManifest = try Self.hotspotLab(["certify", "--app-manifest", manifest])
        #expect(badManifest.status == .exited(2))
        #expect(badManifest.stderr.contains("\(manifest):3:50: manager.evaluated-ssids[2]: at most 2 evaluated SSIDs"), "\(badManifest.stderr)")
        #expect(try TopologyParser.loadApp(path: "topologies/apps/portal.yaml").authenticationProvider?.identifier == "com.hotspotlab.portal.authentication")
        let both = try Self.hotspotLab(["certify", "--helper", "x", "--authentication-provider", "a"])
        #expect(both.status == .exited(64))
        #expect(both.stderr.contains("certify a helper or a provider pair, not both"), "\(both.stderr)")
        let shard = try Self.hotspotLab(["run", "--shard", "4/3"])
        #expect(shard.status == .exited(64))
        #expect(shard.stderr.contains("--shard: expected K/N with 1 <= K <= N, found `4/3`"), "\(shard.stderr)")
    }

    @Test("replay: a newer trace is refused naming the line; --to-scenario of a reordered trace warns and prints what can be replayed")
    func replayTraces() throws {
        let newer = try Self.temp("newer.jsonl", #"{"kind":"start","seq":1,"t_ns":1,"traceVersion":9}"# + "\n")
        defer { unlink(newer) }
        let refused = try Self.hotspotLab(["replay", newer, "--where", "host"])
        #expect(refused.status == .exited(2))
        #expect(refused.stderr.contains("\(newer):1: trace format version 9 is newer than this hotspot-lab reads (1)"), "\(refused.stderr)")

        let lines = [
            #"{"kind":"start","seq":1,"t_ns":1000,"traceVersion":1}"#,
            #"{"kind":"labAction","seq":2,"t_ns":2000,"action":{"scenario":"s","topology":"topologies/captive.yaml","maintainInterval":4,"timeScale":1}}"#,
            #"{"kind":"labAction","seq":3,"t_ns":3000,"action":{"step":"join: Cafe Lumiere","line":5}}"#,
            #"{"kind":"transition","seq":4,"t_ns":4000,"from":"Inactive","to":"Evaluating"}"#,
            #"{"kind":"transition","seq":5,"t_ns":5000,"from":"Evaluating","to":"Authenticated"}"#,
            #"{"kind":"transition","seq":7,"t_ns":6000,"from":"Authenticated","to":"Inactive"}"#,
        ]
        let reordered = try Self.temp("trace.jsonl", lines.joined(separator: "\n") + "\n")
        defer { unlink(reordered) }
        let scenario = try Self.hotspotLab(["replay", "--to-scenario", reordered])
        #expect(scenario.status == .exited(0), "\(scenario.stderr)")
        #expect(scenario.stderr.contains("\(reordered):6: seq 7 follows seq 5: records are missing or reordered; replaying the 5 records before it"),
                "\(scenario.stderr)")
        let parsed = try ScenarioParser.parse(scenario.stdout, file: "out.yaml")
        #expect(parsed.steps.map(\.text) == ["join: Cafe Lumiere", "wait-state: {state: Evaluating, timeout: 20}",
                                            "wait-state: {state: Authenticated, timeout: 20}", "expect-states: [Evaluating, Authenticated]"])
    }
}
