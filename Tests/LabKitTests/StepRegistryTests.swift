import Foundation
import HotspotProtocol
import Testing
@testable import LabKit
@testable import LabReplay
@testable import LabScenarioModel
@testable import LabScenarios

/// The step kinds are one registry (no root): the parser, the runner and the replay read it; each kind is one
/// file in Sources/LabScenarioModel/Steps, documented in docs/SCENARIOS.md, and says how it replays. The registry
/// is generated from the files at build time (Plugins/StepRegistryPlugin; its parsing is tested in
/// StepRegistryScannerTests): what can still go wrong is a kind missing from it, its order, and the docs rows.
@Suite("Step kinds: one registry (no root)")
struct StepRegistryTests {
    static let stepsFolder = "Sources/LabScenarioModel/Steps"

    /// What replays, and as what (the recorded expectations inside an action dropped), for the kinds' examples.
    /// A new kind that is not replayed as written must be added here or below (the test fails until it is).
    static let replayedAs: [String: String] = [
        "show-scan-list": "show-scan-list", "logoff": "logoff: hotspot-helper-portal",
    ]
    static let notReplayed: Set<String> = [
        "wait-state", "expect-states", "expect-command", "expect-notification", "application", "expect-auto-join-disabled", "expect-cache", "sleep", "gate", "probe", "expect-provider", "wait-ipv6",
    ]

    @Test("kind names are unique; the parser lists exactly the registry's kinds")
    func unique() {
        let names = StepRegistry.names
        #expect(Set(names).count == names.count)
        #expect(ScenarioParser.stepKinds == names)
        #expect(names.count >= 31, "the 31 kinds shipped when the registry became generated are all there")
    }

    /// The kind names each file of Steps/ constructs, in the order of their files' names, then of the text.
    static func declaredInFiles() throws -> [(file: String, kinds: [String])] {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.stepsFolder).filter { $0.hasSuffix(".swift") }.sorted()
        let pattern = try NSRegularExpression(pattern: #"StepKind\("([a-z0-9-]+)""#)
        return try files.map { file in
            let text = try String(contentsOfFile: Self.stepsFolder + "/" + file, encoding: .utf8)
            let kinds = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
                Range(match.range(at: 1), in: text).map { String(text[$0]) }
            }
            return (file, kinds)
        }
    }

    @Test("every kind is declared in exactly one file of Steps/, and every kind declared there is registered")
    func oneFilePerKind() throws {
        var declared: [String: [String]] = [:]
        for (file, kinds) in try Self.declaredInFiles() {
            for kind in kinds { declared[kind, default: []].append(file) }
        }
        for (kind, where_) in declared {
            #expect(StepRegistry.kind(kind) != nil, "\(kind) is declared in \(where_) but not in StepRegistry.kinds")
            #expect(where_.count == 1, "\(kind) is declared in \(where_)")
        }
        for kind in StepRegistry.names { #expect(declared[kind] != nil, "\(kind) is registered but declared in no file of \(Self.stepsFolder)") }
    }

    @Test("the generated registry: every *Step.swift file's kinds, in the order of the files' names, then of declaration")
    func generatedOrder() throws {
        let declared = try Self.declaredInFiles()
        for (file, kinds) in declared where file.hasSuffix("Step.swift") {
            #expect(!kinds.isEmpty, "\(file) declares no step kind")
        }
        #expect(StepRegistry.names == declared.flatMap(\.kinds))
        #expect(StepRegistry.names.prefix(3) == ["ap", "application", "auto-join"])
    }

    @Test("every kind has its row in docs/SCENARIOS.md")
    func documented() throws {
        let rows = try String(contentsOfFile: "docs/SCENARIOS.md", encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("| `") }
        for kind in StepRegistry.names {
            let documented = rows.contains { row in
                [":", "`", " "].contains { row.contains("`\(kind)\($0)") }
            }
            #expect(documented, "docs/SCENARIOS.md has no table row for the step `\(kind)`")
        }
    }

    @Test("every kind's example parses; the replay of a trace holding every kind replays exactly the actions, as its kind says")
    func replayOfEveryKind() throws {
        for kind in StepRegistry.kinds {
            let text = kind.example
            let step = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - \(text)\n", file: "s.yaml").steps[0]
            #expect(step.text.hasPrefix(kind.name), "\(text)")
            let expected: String? = Self.notReplayed.contains(kind.name) ? nil : (Self.replayedAs[kind.name] ?? step.text)
            #expect(Replay.replayed(step.text) == expected, "\(kind.name)")
        }
        // A recorded run with one lab step of each kind: the plan holds exactly the replayed ones, in order.
        var lines = [
            #"{"kind":"start","seq":1,"t_ns":1000,"traceVersion":1}"#,
            #"{"kind":"labAction","seq":2,"t_ns":2000,"action":{"scenario":"s","topology":"topologies/captive.yaml","maintainInterval":4,"timeScale":1}}"#,
        ]
        for (i, kind) in StepRegistry.kinds.enumerated() {
            let text = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - \(kind.example)\n", file: "s.yaml").steps[0].text
            lines.append(JSON.object(["kind": "labAction", "seq": .number(Double(3 + i)), "t_ns": .number(Double(3000 + i)),
                                      "action": ["step": .string(text), "line": .number(Double(5 + i))]]).text)
        }
        let plan = try Replay.plan(try TraceFile.parse(lines.joined(separator: "\n"), file: "all.jsonl"))
        let kinds = plan.scenario.steps.map { String($0.text.prefix { $0 != ":" }) }
        #expect(kinds == StepRegistry.names.filter { !Self.notReplayed.contains($0) })
    }
}
