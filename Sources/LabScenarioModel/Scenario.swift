import Foundation
import HotspotCore
import Yams
import LabTopology

/// A scenario file (`topologies/scenarios/*.yaml`, docs/SCENARIOS.md): a topology and the steps a person
/// (or the device) takes, with what must be seen after each.
public struct Scenario: Sendable {
    public var name: String
    public var description: String
    public var file: String
    /// The topology file, resolved relative to the scenario file.
    public var topologyPath: String
    /// The station that acts (nil: the topology's first).
    public var station: String?
    /// hotspotd's maintain interval in seconds (300 on the platform).
    public var maintainInterval: Double
    public var timeScale: Double
    /// Helper commands replacing the topology's (a deliberately broken helper, a test helper).
    public var helpers: [String]?
    public var steps: [ScenarioStep]
    /// The station it names, where it stands (the steps carry their own references).
    public var references: [ScenarioReference] = []
    /// `needs: air`: it needs real radios (PSK/EAP handshakes, over-the-air roaming, signal and radio faults, SSID
    /// bytes on the air), so it runs in the radio tier only; every other scenario runs in both tiers.
    public var needsAir = false
    /// `needs: netem`: it shapes a link with netem (`link:` steps), which some host kernels lack; the native tier runs
    /// it only where the host kernel has netem (`NetemSupport`), the radio tier (the VM's kernel has it) always.
    public var needsNetem = false

    /// The tiers it runs in.
    public var tiers: [HotspotLinkMode] { needsAir ? [.radio] : [.radio, .veth] }
}

/// One step, where it stands in the file.
public struct ScenarioStep: Sendable {
    public var line: Int
    public var column: Int
    /// The step as written (`wait-state: Authenticated`).
    public var text: String
    /// What the step does (one type per step kind: `StepRegistry`).
    public var action: any ScenarioStepAction
    /// The step's kind (`roam`, `join`, ...).
    public var kind: String = ""
    /// The stations, hotspots, helpers and access points it names, where they stand (`ScenarioCheck`).
    public var references: [ScenarioReference] = []
}

/// A name a scenario refers to, where it stands in the file: checked against the topology before any lab is built.
public struct ScenarioReference: Sendable, Equatable {
    public enum Kind: String, Sendable { case station, hotspot, helper, accessPoint = "access point" }
    public var kind: Kind
    public var name: String
    /// For an access point: the hotspot the step names (nil: any).
    public var hotspot: String?
    public var file: String
    public var line: Int
    public var column: Int
    /// Dotted path of the field, e.g. `steps[2].gate.hotspot`.
    public var field: String
}

public enum Connectivity: String, Sendable, CaseIterable { case allowed, blocked }

/// Parses scenario files with the topology parser's YAML reader: every error is `file:line:column`.
public enum ScenarioParser {
    /// The step kinds, from the registry.
    public static var stepKinds: [String] { StepRegistry.names }
    static let states = HotspotState.allCases.map(\.rawValue)
    static let commands = CommandType.allCases.map(\.description)
    static let results = HelperResult.allCases.map(\.description)

    public static func load(path: String) throws -> Scenario {
        try parse(try LabYAML.read(path: path), file: path)
    }

    public static func parse(_ yaml: String, file: String) throws -> Scenario {
        let root = try compose(yaml, file: file)
        guard let root else {
            throw TopologyError(file: file, line: 1, column: 1, field: "", message: "the file is empty; expected a mapping with `topology:` and `steps:`")
        }
        let top = Field(node: root, path: "", file: file)
        let keys = try top.keys(allowed: ["name", "description", "topology", "station", "maintain-interval", "time-scale", "helpers", "needs", "steps"],
                                required: ["topology", "steps"])
        let name = try keys["name"]?.nonEmptyString() ?? ((file as NSString).lastPathComponent as NSString).deletingPathExtension
        let topology = try keys.required("topology").nonEmptyString()
        let base = (file as NSString).deletingLastPathComponent
        let topologyPath = topology.hasPrefix("/") ? topology : (base.isEmpty ? topology : base + "/" + topology)
        let stepsField = try keys.required("steps")
        let stepFields = try stepsField.list()
        guard !stepFields.isEmpty else { throw stepsField.error("expected at least one step") }
        let description = try keys["description"]?.string() ?? ""
        var references: [ScenarioReference] = []
        let station = try keys["station"].map { field -> String in
            let name = try field.nonEmptyString()
            references.append(ScenarioReference(kind: .station, name: name, file: file, line: field.mark.line, column: field.mark.column, field: field.path))
            return name
        }
        let needed = try keys["needs"].map(needs) ?? []
        let needsAir = needed.contains("air")
        let steps = try stepFields.map(step)
        // `after: K` needs a K step before it (what it anchors on).
        for (index, step) in steps.enumerated() {
            if let kind = step.action.after, !steps[..<index].contains(where: { $0.kind == kind }) {
                throw TopologyError(file: file, line: step.line, column: step.column, field: "steps[\(index)].\(step.kind).after",
                                    message: "`after: \(kind)` names no earlier step; expected the kind of a step before this one")
            }
        }
        var scenario = Scenario(
            name: name, description: description, file: file, topologyPath: topologyPath,
            station: station,
            maintainInterval: try keys["maintain-interval"].map { try number($0, in: 0.1...3600) } ?? 300,
            timeScale: try keys["time-scale"].map { try number($0, in: 0.001...100) } ?? 1,
            helpers: try keys["helpers"].map { try $0.list().map { try $0.commandLine() } },
            steps: steps, references: references)
        scenario.needsAir = needsAir
        scenario.needsNetem = needed.contains("netem")
        return scenario
    }

    /// A step the scenario's `needs:` does not cover: one that acts on the air without `needs: air`, a `link` step
    /// without `needs: netem` (or air). `hotspot-lab run`/`demo` refuse such a file before anything runs, and the
    /// native tier refuses it too; as `file:line:column` with the step's field.
    public static func undeclaredNeed(_ scenario: Scenario) -> TopologyError? {
        for (index, step) in scenario.steps.enumerated() {
            if !scenario.needsAir, airStepKinds.contains(step.kind) {
                return TopologyError(file: scenario.file, line: step.line, column: step.column, field: "steps[\(index)].\(step.kind)",
                                     message: "the `\(step.kind)` step acts on the air (mac80211_hwsim radios); expected `needs: air` in the scenario, so it runs in the radio tier only")
            }
            if !scenario.needsAir, !scenario.needsNetem, step.kind == "link" {
                return TopologyError(file: scenario.file, line: step.line, column: step.column, field: "steps[\(index)].link",
                                     message: "the `link` step shapes a link with netem, which some host kernels lack; expected `needs: netem` (or `needs: air`) in the scenario")
            }
        }
        return nil
    }

    /// The step kinds that act on the air (radios, hostapd, wpa_supplicant): only in a scenario with `needs: air`.
    public static let airStepKinds: Set<String> = ["roam", "signal", "ap"]

    /// What the scenario needs beyond the native tier: `needs: air`, `needs: netem` or a list of them.
    static func needs(_ field: Field) throws -> Set<String> {
        let items: [Field]
        if case .sequence = field.node { items = try field.list() } else { items = [field] }
        guard !items.isEmpty else { throw field.error("expected air or netem, or a list of them") }
        return Set(try items.map { try oneOf($0, ["air", "netem"], what: "requirement") })
    }

    /// The YAML document's root node (nil: empty); errors as `file:line:column`. The one place scenario YAML is read:
    /// the lab's loader (size limit, no anchors or aliases).
    static func compose(_ yaml: String, file: String) throws -> Node? {
        try LabYAML.compose(yaml, file: file)
    }

    static func number(_ field: Field, in range: ClosedRange<Double>) throws -> Double {
        guard case .scalar(let s) = field.node, s.style == .plain, let value = Double(s.string) else {
            throw field.error("expected a number in \(range.lowerBound)...\(range.upperBound), found \(field.kindName)")
        }
        guard range.contains(value) else { throw field.error("expected a number in \(range.lowerBound)...\(range.upperBound), found \(value)") }
        return value
    }

    static func isNull(_ field: Field) -> Bool { field.kindName == "null" }

    /// A BSSID, as written (lower case).
    static func bssid(_ field: Field) throws -> String {
        _ = try field.nonEmptyString()
        return try field.unicastMAC().text.lowercased()
    }

    static func oneOf(_ field: Field, _ allowed: [String], what: String) throws -> String {
        let value = try field.nonEmptyString()
        guard allowed.contains(value) else { throw field.error("unknown \(what) `\(value)`; expected one of: \(allowed.joined(separator: ", "))") }
        return value
    }

    static func step(_ field: Field) throws -> ScenarioStep {
        // A step is a one-key mapping (`wait-state: Authenticated`) or a bare word for steps without arguments.
        let kind: String
        let value: Field
        switch field.node {
        case .scalar:
            kind = try field.nonEmptyString()
            value = Field(node: .scalar(.init("null")), path: field.path + "." + kind, file: field.file)
        case .mapping(let mapping):
            guard mapping.count == 1, let (key, node) = mapping.first.map({ ($0.key, $0.value) }), let name = key.string else {
                throw field.error("expected one step per list item (a mapping with one key: \(stepKinds.joined(separator: ", ")))")
            }
            kind = name
            value = field.child(name, node)
        default:
            throw field.error("expected a step such as `wait-state: Authenticated`, found \(field.kindName)")
        }
        guard let stepKind = StepRegistry.kind(kind) else {
            throw field.error("unknown step `\(kind)`; expected one of: \(stepKinds.joined(separator: ", "))")
        }
        let text = stepText(field.node)
        let arguments = StepArguments(kind: kind, value: value)
        let action = try stepKind.parse(arguments)
        return ScenarioStep(line: field.mark.line, column: field.mark.column, text: text, action: action, kind: kind,
                            references: arguments.references)
    }

    /// A step as `ScenarioStep.text` shows it: one line, flow style, without the outer braces.
    static func stepText(_ node: Node) -> String {
        let text = render(node)
        return text.hasPrefix("{") && text.hasSuffix("}") ? String(text.dropFirst().dropLast()) : text
    }

    /// A step in one line, flow style: `expect-command: {command: maintain, result: success}`.
    static func render(_ node: Node) -> String {
        switch node {
        case .scalar(let s): return s.string
        case .sequence(let seq): return "[" + seq.map(render).joined(separator: ", ") + "]"
        case .mapping(let m):
            let pairs = m.map { "\($0.key.string ?? "?"): \(render($0.value))" }
            return "{" + pairs.joined(separator: ", ") + "}"
        case .alias: return "*alias"
        }
    }
}
