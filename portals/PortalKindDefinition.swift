/// What a portal kind is, as data: its name, whether a person can sign in, and its settings (required or
/// optional, type, allowed values or range, default). The topology parser, the scenario `portal:` step and the
/// portal server (`PortalRegistry.make`) all validate a kind's settings from this one definition.

/// The type of a setting's value (settings are strings in topologies and on the command line).
public enum PortalSettingType: Sendable, Equatable {
    /// Any string, the empty one included.
    case text
    /// A non-empty string.
    case nonEmptyText
    /// `true` or `false`.
    case flag
    /// A whole number in the range.
    case integer(ClosedRange<Int>)
    /// A decimal number in the range (seconds with a fraction).
    case number(ClosedRange<Double>)
    /// One of these values.
    case oneOf([String])
    /// An e-mail domain such as `example.com` (no `@`, at least one dot).
    case domain

    /// What a valid value looks like (for messages and docs).
    public var expected: String {
        switch self {
        case .text: return "a string"
        case .nonEmptyText: return "a non-empty string"
        case .flag: return "\"true\" or \"false\""
        case .integer(let range): return "a whole number \(range.lowerBound)...\(range.upperBound)"
        case .number(let range): return "a number \(Self.format(range.lowerBound))...\(Self.format(range.upperBound))"
        case .oneOf(let values): return "one of \(values.joined(separator: ", "))"
        case .domain: return "a domain name such as example.com"
        }
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    /// Nil when `value` is valid; otherwise what was expected and found.
    public func problem(_ value: String) -> String? {
        let ok: Bool
        switch self {
        case .text: ok = true
        case .nonEmptyText: ok = !value.isEmpty
        case .flag: ok = value == "true" || value == "false"
        case .integer(let range): ok = Int(value).map(range.contains) ?? false
        case .number(let range): ok = Double(value).map { $0.isFinite && range.contains($0) } ?? false
        case .oneOf(let values): ok = values.contains(value)
        case .domain: ok = DomainName.isValid(value)
        }
        return ok ? nil : "expected \(expected), found `\(value)`"
    }
}

/// One setting of a kind.
public struct PortalSettingDefinition: Sendable, Equatable {
    public var name: String
    public var type: PortalSettingType
    public var required: Bool
    /// The value used when the setting is absent (nil: none; required settings have none).
    public var defaultValue: String?
    /// One line for docs and `--help`.
    public var help: String

    public static func required(_ name: String, _ type: PortalSettingType, _ help: String) -> PortalSettingDefinition {
        PortalSettingDefinition(name: name, type: type, required: true, defaultValue: nil, help: help)
    }

    public static func optional(_ name: String, _ type: PortalSettingType, default defaultValue: String? = nil,
                                _ help: String) -> PortalSettingDefinition {
        PortalSettingDefinition(name: name, type: type, required: false, defaultValue: defaultValue, help: help)
    }
}

/// A kind's settings that cannot be used: which kind, which setting, what was expected.
public struct PortalSettingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var kind: String
    public var setting: String
    public var message: String
    public init(kind: String, setting: String, message: String) {
        self.kind = kind
        self.setting = setting
        self.message = message
    }
    public var description: String { "portal kind \(kind): setting `\(setting)`: \(message)" }
}

/// A kind as data.
public struct PortalKindDefinition: Sendable, Equatable {
    /// The name used in topologies and on the command line (`form-login`).
    public var name: String
    /// A person (or a helper) can sign in (the broken kinds cannot).
    public var login: Bool
    public var settings: [PortalSettingDefinition]
    /// One line for docs.
    public var summary: String

    public init(name: String, login: Bool, settings: [PortalSettingDefinition] = [], summary: String) {
        self.name = name
        self.login = login
        self.settings = settings
        self.summary = summary
    }

    public var settingNames: [String] { settings.map(\.name) }

    public func setting(_ name: String) -> PortalSettingDefinition? { settings.first { $0.name == name } }

    /// Nil when `value` is valid for the setting `name`; otherwise the problem (an unknown setting included).
    public func problem(setting name: String, value: String) -> String? {
        guard let definition = setting(name) else {
            return settings.isEmpty
                ? "not a setting of the \(self.name) portal, which has none"
                : "not a setting of the \(self.name) portal; expected one of: \(settingNames.joined(separator: ", "))"
        }
        return definition.type.problem(value)
    }

    /// The required settings missing from `values`.
    public func missing(_ values: [String: String]) -> [PortalSettingDefinition] {
        settings.filter { $0.required && values[$0.name] == nil }
    }

    /// Checks every setting of this kind in `values`, and that the required ones are there; the values with the
    /// defaults filled in. Keys that are not this kind's settings are ignored here (a portal switched at run time
    /// gets the topology's settings of another kind); the topology parser and the scenario step refuse them.
    public func validate(_ values: [String: String]) throws -> PortalSettingValues {
        for definition in settings {
            if let value = values[definition.name], let problem = definition.type.problem(value) {
                throw PortalSettingError(kind: name, setting: definition.name, message: problem)
            }
        }
        if let first = missing(values).first {
            throw PortalSettingError(kind: name, setting: first.name, message: "missing; expected \(first.type.expected)")
        }
        var result: [String: String] = [:]
        for definition in settings {
            if let value = values[definition.name] ?? definition.defaultValue { result[definition.name] = value }
        }
        return PortalSettingValues(kind: name, values: result)
    }
}

/// A kind's settings after `PortalKindDefinition.validate`: typed reads, defaults filled in.
public struct PortalSettingValues: Sendable, Equatable {
    public var kind: String
    public var values: [String: String]

    public func text(_ name: String) -> String? { values[name] }

    /// A required (or defaulted) string; validation saw it, so this only throws on a definition mistake.
    public func required(_ name: String) throws -> String {
        guard let value = values[name] else {
            throw PortalSettingError(kind: kind, setting: name, message: "missing after validation (not required by the kind's definition)")
        }
        return value
    }

    public func flag(_ name: String) -> Bool { values[name] == "true" }
    public func integer(_ name: String) -> Int? { values[name].flatMap { Int($0) } }
    public func number(_ name: String) -> Double? { values[name].flatMap { Double($0) } }
}

/// A domain name as a setting's value (`.domain`).
public enum DomainName {
    /// True for `example.com`: dot-separated labels of letters, digits and '-' (not at a label's ends), at least two.
    public static func isValid(_ text: String) -> Bool {
        guard text.utf8.count <= 253 else { return false }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        return labels.allSatisfy { label in
            (1...63).contains(label.utf8.count) && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy { ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "-" }
        }
    }
}
