import Foundation
import LabTopology

/// A parsed step: what it does to the lab (through a `StepContext`) and what it checks. Each kind is one
/// file in this folder; `StepRegistry.kinds` lists them all (generated from the files).
public protocol ScenarioStepAction: Sendable {
    /// Carries the step out; returns what it saw (the progress line's message), throws `StepFailure` when
    /// an expectation does not hold.
    func perform(in context: any StepContext) throws -> String
    /// The step kind this step's `after:` names: it looks only at what hotspotd traced after the last step of that
    /// kind had taken effect (docs/SCENARIOS.md, "After a lab action"). nil: no anchor.
    var after: String? { get }
}

extension ScenarioStepAction {
    public var after: String? { nil }
}

/// How `hotspot-lab replay` treats a recorded step of a kind.
public enum StepReplay: Sendable {
    /// An expectation: not replayed (the replay checks the recorded states instead).
    case notReplayed
    /// An action, replayed as written.
    case asWritten
    /// An action, replayed as the text this gives (the original run's expectations inside it dropped).
    case rewritten(@Sendable (String) -> String)

    /// The text the replay runs for `text`, nil when the step is not replayed.
    public func replayed(_ text: String) -> String? {
        switch self {
        case .notReplayed: return nil
        case .asWritten: return text
        case .rewritten(let rewrite): return rewrite(text)
        }
    }
}

/// One step kind: its name in scenario files, an example of it, its parser, how it replays.
public struct StepKind: Sendable {
    public let name: String
    /// A valid step of this kind as written in a scenario file (the tests parse it and replay it).
    public let example: String
    public let replay: StepReplay
    let parse: @Sendable (StepArguments) throws -> any ScenarioStepAction

    init(_ name: String, example: String, replay: StepReplay, parse: @escaping @Sendable (StepArguments) throws -> any ScenarioStepAction) {
        self.name = name
        self.example = example
        self.replay = replay
        self.parse = parse
    }
}

/// Every step kind: the one list (the parser, its messages, the runner and the replay all read it), in the order
/// of their files' names, then of declaration in a file. It is generated: the build-tool plugin StepRegistryPlugin
/// (Plugins/StepRegistryPlugin, its reading in Sources/StepRegistryScanner) finds every
/// `static let <name> = StepKind(...)` of a type in this folder on every build and writes `declaredKinds`; a kind
/// declared in a form it cannot read fails the build at its line. A new kind: its file in this folder (with an
/// `example`) and its row in docs/SCENARIOS.md (`StepRegistryTests` checks the rows, and parses and replays
/// every kind's `example`).
public enum StepRegistry {
    public static let kinds: [StepKind] = declaredKinds

    public static var names: [String] { kinds.map(\.name) }

    public static func kind(_ name: String) -> StepKind? { kinds.first { $0.name == name } }
}

/// A step failed: what was expected and what was seen.
public struct StepFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A step's value as written, with the names it refers to recorded (stations, hotspots, helpers, access
/// points) where they stand, for `ScenarioCheck` to check against the topology before any lab is built.
final class StepArguments {
    let kind: String
    let value: Field
    private(set) var references: [ScenarioReference] = []

    init(kind: String, value: Field) {
        self.kind = kind
        self.value = value
    }

    var isNull: Bool { ScenarioParser.isNull(value) }
    var isScalar: Bool {
        if case .scalar = value.node { return true }
        return false
    }

    func keys(allowed: [String], required: [String] = []) throws -> FieldKeys {
        try value.keys(allowed: allowed, required: required)
    }

    func refer(_ kind: ScenarioReference.Kind, _ name: String, _ field: Field, hotspot: String? = nil) {
        references.append(ScenarioReference(kind: kind, name: name, hotspot: hotspot, file: field.file, line: field.mark.line,
                                            column: field.mark.column, field: field.path))
    }

    /// A hotspot named in the topology.
    func hotspot(_ field: Field?) throws -> String? {
        guard let field else { return nil }
        let name = try field.nonEmptyString()
        refer(.hotspot, name, field)
        return name
    }

    /// A helper of the acting station, by identifier or executable name.
    func helper(_ field: Field) throws -> String {
        let name = try field.nonEmptyString()
        refer(.helper, name, field)
        return name
    }

    func helper(_ field: Field?) throws -> String? { try field.map(helper) }

    /// A BSSID of an access point of the topology (of `hotspot` when it is named).
    func accessPoint(_ field: Field, hotspot: String? = nil) throws -> String {
        let bssid = try ScenarioParser.bssid(field)
        refer(.accessPoint, bssid, field, hotspot: hotspot)
        return bssid
    }
}
