import HotspotProtocol
import Foundation
import HotspotSystem
import Netlink
import Testing
import TestSupport
@testable import LabKit
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabTopology

/// The native tier (docs/SCENARIOS.md, "Tiers"), on the host kernel as root, no VM: every shipped scenario that does
/// not declare `needs: air` runs end to end with the stations' Wi-Fi as links the lab moves into the hotspots'
/// bridges (`StationLink`, hotspotd's `LinkStation`); DHCP, DNS, the portals, the gate, IP suppression, hotspotd and
/// the helpers are the real ones. Parity with the radio tier: `TierParityCheck`, after the VM suite (both tiers run in CI).
@Suite("Native tier: scenarios end to end on the host kernel, and their parity with the radio tier (root)", .serialized, .requiresRoot)
struct NativeTierRootTests {
    static let folder = "topologies/scenarios"

    /// Every shipped scenario that runs in both tiers (and, for `needs: netem`, only where this kernel has netem).
    static var files: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".yaml") }.sorted().filter { file in
            guard let scenario = try? ScenarioParser.load(path: folder + "/" + file) else { return true }   // a parse error fails below
            return !scenario.needsAir && (!scenario.needsNetem || NetemSupport.available)
        }
    }

    /// Run once, two labs at a time, the first time a test asks; each file's test then judges its own result.
    static let shipped: (results: [String: Result<ScenarioResult, any Error>], leftovers: [String]) = {
        let outcomes = ParallelRuns.map(files, jobs: 2) { file -> Result<ScenarioResult, any Error> in
            Result {
                let scenario = try ScenarioParser.load(path: folder + "/" + file)
                let runner = ScenarioRunner()
                runner.linkMode = .veth
                let result = runner.run(scenario)
                print("native: scenario \(file): \(result.passed ? "passed" : "FAILED") in \(String(format: "%.1f", result.duration)) s")
                if !result.passed {
                    print("scenario \(scenario.name) failed (native tier); timeline:\n" + Timeline.render(result.timeline).joined(separator: "\n"))
                }
                return result
            }
        }
        // Each lab's namespaces carry its prefix, the last component of its log folder. Only these labs are judged:
        // others may be running on this machine (CI runs the VM suite, whose parity check runs native labs, beside
        // the host suites).
        let prefixes = outcomes.compactMap { try? $0.get() }.map { ($0.logDirectory as NSString).lastPathComponent }.filter { !$0.isEmpty }
        let leftovers = NetworkNamespace.list().filter { name in prefixes.contains { name.hasPrefix($0) } }
        return (Dictionary(uniqueKeysWithValues: zip(files, outcomes)), leftovers)
    }()

    /// In CI (ci/test.sh) the host suites skip this test: the VM suite's parity check runs the same native labs beside
    /// the VM (`TierParityCheck.prepareNative`) and judges each of them with `judge(_:)` there, so they run once.
    @Test("root: every scenario without `needs: air` passes in the native tier", arguments: files)
    func scenario(_ file: String) throws {
        try Self.judge(file)
    }

    /// One file's native run (`shipped`): it passed, every step ran, and the labs left no namespace behind.
    static func judge(_ file: String) throws {
        let scenario = try ScenarioParser.load(path: Self.folder + "/" + file)
        let result = try #require(Self.shipped.results[file]).get()
        #expect(result.tier == "native", "\(file)")
        #expect(result.setupError == nil, "\(file): \(result.setupError ?? "")")
        #expect(result.passed, "\(file): \(result.failure?.message ?? result.setupError ?? "not every step ran")")
        #expect(result.steps.count == scenario.steps.count, "\(file): \(result.steps.count) of \(scenario.steps.count) steps ran")
        #expect(Self.shipped.leftovers.isEmpty, "labs left namespaces behind: \(Self.shipped.leftovers)")
    }

    @Test("root: with LabTeardowns (run, demo) the result comes before the lab goes down on a thread of its own; joinAll leaves nothing of it")
    func labDownOnItsOwnThread() throws {
        let scenario = try ScenarioParser.load(path: Self.folder + "/not-captive.yaml")
        let runner = ScenarioRunner()
        runner.linkMode = .veth
        let teardowns = LabTeardowns()
        runner.teardowns = teardowns
        let result = runner.run(scenario)
        #expect(result.passed, "\(result.failure?.message ?? result.setupError ?? "")")
        #expect(result.path.last == "Authenticated" && !result.timeline.isEmpty, "the result is whole before the lab goes down")
        #expect(teardowns.pending == 1, "the lab was not handed over: it went down before run returned")
        teardowns.joinAll()
        #expect(teardowns.pending == 0)
        let prefix = (result.logDirectory as NSString).lastPathComponent
        #expect(!prefix.isEmpty && !NetworkNamespace.list().contains { $0.hasPrefix(prefix) }, "namespaces of \(prefix) left after joinAll")
        // Control: without LabTeardowns the lab is down when run returns.
        let inline = ScenarioRunner()
        inline.linkMode = .veth
        let second = inline.run(scenario)
        let secondPrefix = (second.logDirectory as NSString).lastPathComponent
        #expect(second.passed && !NetworkNamespace.list().contains { $0.hasPrefix(secondPrefix) })
    }

    /// README's main command in the tier that needs no VM: the four sequences pass, the exit status is 0, and every
    /// lab is down (namespaces gone) when the command has returned: its labs go down on threads of their own
    /// (`LabTeardowns`), joined before it reports.
    @Test("root: hotspot-lab demo --link native: the four sequences pass, exit 0, and no lab is left when it returns")
    func demoCommand() throws {
        let logs = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-demo-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let binary = try BuildProducts.locate("hotspot-lab")
        let result = try ProcessRunner.run(ProcessConfiguration(binary, ["demo", "--link", "native", "--logs", logs]), timeout: .seconds(600))
        #expect(result.status == .exited(0), "\(result.stdout.suffix(2000))\n\(result.stderr.suffix(2000))")
        #expect(result.stdout.contains("4 passed, 0 failed"), "\(result.stdout.suffix(2000))")
        let labs = ((try? FileManager.default.contentsOfDirectory(atPath: logs)) ?? []).filter { $0.hasPrefix("hsl") }
        #expect(labs.count == 4, "one log folder per sequence: \(labs)")
        let left = NetworkNamespace.list().filter { name in labs.contains { name.hasPrefix($0) } }
        #expect(left.isEmpty, "namespaces left after the demo returned: \(left)")
    }

    @Test("root: the native tier refuses a scenario that needs the air, before building anything")
    func needsAirRefused() throws {
        let scenario = try ScenarioParser.load(path: Self.folder + "/roaming.yaml")
        #expect(scenario.needsAir)
        let runner = ScenarioRunner()
        runner.linkMode = .veth
        let result = runner.run(scenario)
        #expect(!result.passed && result.invalid)
        #expect(result.setupError?.contains("needs: air") == true, "\(result.setupError ?? "")")
        #expect(result.logDirectory.isEmpty, "no lab was built")
    }
}

/// The tier plumbing that needs no root: `needs:` in scenario files, the undeclared-need check, and the parity
/// comparison itself (it must see a difference).
@Suite("Tiers: needs: air, and the parity comparison")
struct TierUnitTests {
    @Test("needs: air / netem / a list parse; anything else is refused with file:line:column")
    func needsField() throws {
        #expect(try ScenarioParser.parse("topology: t.yaml\nneeds: air\nsteps:\n  - leave\n", file: "s.yaml").needsAir)
        let both = try ScenarioParser.parse("topology: t.yaml\nneeds: [air, netem]\nsteps:\n  - leave\n", file: "s.yaml")
        #expect(both.needsAir && both.needsNetem && both.tiers == [.radio])
        #expect(try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - leave\n", file: "s.yaml").tiers == [.radio, .veth])
        do {
            _ = try ScenarioParser.parse("topology: t.yaml\nneeds: radio\nsteps:\n  - leave\n", file: "s.yaml")
            Issue.record("needs: radio was accepted")
        } catch let error as TopologyError {
            #expect("\(error)" == "s.yaml:2:8: needs: unknown requirement `radio`; expected one of: air, netem", "\(error)")
        }
    }

    @Test("a step on the air without `needs: air` is named with file:line:column; with it, nothing")
    func undeclaredAirStep() throws {
        let without = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - join: Cafe\n  - roam: \"02:00:00:00:01:01\"\n", file: "s.yaml")
        let error = try #require(ScenarioParser.undeclaredNeed(without))
        #expect("\(error)".hasPrefix("s.yaml:4:5: steps[1].roam: the `roam` step acts on the air"), "\(error)")
        let with = try ScenarioParser.parse("topology: t.yaml\nneeds: air\nsteps:\n  - roam: \"02:00:00:00:01:01\"\n", file: "s.yaml")
        #expect(ScenarioParser.undeclaredNeed(with) == nil)
        let shaping = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - link: {loss-percent: 5}\n", file: "s.yaml")
        #expect("\(try #require(ScenarioParser.undeclaredNeed(shaping)))".contains("expected `needs: netem`"))
    }

    @Test("every shipped scenario declares what it needs")
    func shippedDeclared() throws {
        let folder = "topologies/scenarios"
        for file in try FileManager.default.contentsOfDirectory(atPath: folder).filter({ $0.hasSuffix(".yaml") }) {
            let scenario = try ScenarioParser.load(path: folder + "/" + file)
            #expect(ScenarioParser.undeclaredNeed(scenario) == nil, "\(file)")
        }
    }

    @Test("the parity comparison names where the tiers part: path, commands, results, steps")
    func differences() {
        let radio = TierOutcome(scenario: "s", tier: "radio", path: ["Evaluating", "Authenticated"], commands: ["evaluate -> h"],
                                results: ["evaluate h success"], steps: ["ok join: X"])
        #expect(TierOutcome.differences(radio: radio, native: radio).isEmpty)
        var native = radio
        native.path = ["Evaluating", "Authenticating"]
        native.results = ["evaluate h failure"]
        let lines = TierOutcome.differences(radio: radio, native: native)
        #expect(lines.count == 2)
        #expect(lines.first == "s: state path part at #2: radio Authenticated, native Authenticating (radio 2, native 2)", "\(lines)")
        native = radio
        native.steps = ["ok join: X", "ok leave"]
        #expect(TierOutcome.differences(radio: radio, native: native) == ["s: steps part at #2: radio (end), native ok leave (radio 1, native 2)"])
    }

    static func t(_ from: String, _ to: String) -> JSON { ["kind": "transition", "from": .string(from), "to": .string(to)] }
    static func round(_ id: Int, _ result: String, to: String) -> [JSON] {
        let command: JSON = ["kind": "command", "id": .number(Double(id)), "commandType": "maintain", "helper": "h"]
        let response: JSON = ["kind": "response", "command": .number(Double(id)), "commandType": "maintain", "helper": "h", "result": .string(result)]
        return [t("Authenticated", "Maintaining"), command, response, t("Maintaining", to)]
    }

    @Test("parity: a maintain round that changed nothing and was followed by another is not counted (CI run 17's dns-hijack)")
    func repeatedRoundsIgnored() throws {
        let scenario = try ScenarioParser.parse("topology: ../captive.yaml\nsteps:\n  - join: Cafe Lumiere\n  - wait-state: Authenticated\n",
                                                file: "topologies/scenarios/s.yaml")
        let signIn: [JSON] = [Self.t("Inactive", "Evaluating"), Self.t("Evaluating", "Authenticated")]
        let hijacked = Self.round(5, "failure", to: "Evaluating") + [Self.t("Evaluating", "Authenticated")]
        // Radio, on a loaded machine: one more round (answered success) before the hijack took effect.
        let radio = TierOutcome.checked((signIn + Self.round(4, "success", to: "Authenticated") + hijacked).map(TraceEntry.init(json:)), scenario: scenario)
        let native = TierOutcome.checked((signIn + hijacked).map(TraceEntry.init(json:)), scenario: scenario)
        #expect(radio.path == native.path && radio.commands == native.commands && radio.results == native.results, "\(radio) \(native)")
        #expect(native.path == ["Evaluating", "Authenticated", "Maintaining", "Evaluating", "Authenticated"])
        // Control: a round that changed something stays, and so does the last no-op round before anything else.
        let failing = TierOutcome.checked((signIn + Self.round(4, "failure", to: "Evaluating") + [Self.t("Evaluating", "Authenticated")] + hijacked)
            .map(TraceEntry.init(json:)), scenario: scenario)
        #expect(failing.results.filter { $0.hasPrefix("maintain") }.count == 2, "\(failing.results)")
        let last = TierOutcome.checked((signIn + Self.round(4, "success", to: "Authenticated")).map(TraceEntry.init(json:)), scenario: scenario)
        #expect(last.path == ["Evaluating", "Authenticated", "Maintaining", "Authenticated"] && last.results == ["maintain h success"], "\(last)")
    }
}

/// Parity (docs/SCENARIOS.md, "Tiers"): the radio outcomes InVMScenarioTests left in the VM's results share against the
/// native tier's (`NativeTierRootTests.shipped`, run here on the host kernel), scenario by scenario: the same checked state
/// path, commands, results and step outcomes. Called by VMBootTests.suitesInsideOneBoot after the VM run.
enum TierParityCheck {
    static let folder = "radio-outcomes"

    /// Runs the native side now (`NativeTierRootTests.shipped`; it needs nothing from the VM run): called on a thread of
    /// its own beside the VM, so the comparison after it does not wait for 46 native scenarios.
    static func prepareNative() { _ = NativeTierRootTests.shipped }

    /// `expected`: the VM ran every InVM suite, so every scenario of both tiers must have its radio outcome.
    static func compare(radioFolder: String, expected: Bool) throws {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: radioFolder)) ?? []).filter { $0.hasSuffix(".json") }
        if names.isEmpty {
            #expect(!expected, "no radio outcomes in \(radioFolder): InVMScenarioTests did not leave any")
            if !expected { print("tier parity: not compared (InVMScenarioTests was not in this VM run)") }
            return
        }
        var radio: [String: TierOutcome] = [:]
        for name in names {
            let data = try #require(FileManager.default.contents(atPath: radioFolder + "/" + name))
            let outcome = try JSONDecoder().decode(TierOutcome.self, from: data)
            radio[outcome.scenario] = outcome
        }
        var compared = 0
        for file in NativeTierRootTests.files where !InVMScenarioTests.nativeOnlyForNow(file) {
            let scenario = try ScenarioParser.load(path: NativeTierRootTests.folder + "/" + file)
            guard let recorded = radio[scenario.name] else {
                #expect(!expected, "no radio outcome for \(scenario.name)")
                continue
            }
            let native = try #require(NativeTierRootTests.shipped.results[file]).get()
            #expect(recorded.tier == "radio" && native.tier == "native")
            let differences = TierOutcome.differences(radio: recorded, native: TierOutcome(native))
            #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))")
            compared += 1
        }
        print("tier parity: \(compared) scenarios compared, radio (VM) against native (host kernel)")
        #expect(compared > 0)
    }
}
