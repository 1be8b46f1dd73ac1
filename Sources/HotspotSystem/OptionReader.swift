#if canImport(Glibc)
import Glibc
#endif

/// A small command-line reader for the programs a lab starts many times (hotspotd, hotspot-portal): long options
/// only (`--name VALUE`, `--name=VALUE`, `--flag`), read by name as the program asks for them, so the same calls
/// declare the options for `--help`.
///
/// Why not swift-argument-parser, which hotspot-lab uses: its parse walks the command type by reflection, and in a
/// debug build under the VM's emulation that cost about 0.7 s of CPU per start of hotspotd or hotspot-portal, two
/// starts per lab (bench/README.md "Process starts in the VM"). This reader does a dictionary lookup per option.
///
/// ```swift
/// var options = OptionReader(command: "hotspotd", abstract: "...")
/// let runDir = options.value("run-dir", default: "/run/hotspotd", help: "...")
/// let scale = options.value("time-scale", default: 1.0, help: "...")
/// let echo = options.flag("echo-trace", help: "...")
/// options.finish()  // --help, unknown options, bad values: message and exit
/// ```
///
/// A usage error prints `<command>: error: <what>` and the usage line to stderr and exits 64 (EX_USAGE), as
/// swift-argument-parser does; `--help` prints the options and exits 0.
public struct OptionReader {
    public let command: String
    public let abstract: String
    public var discussion: String
    private var given: [String: [String]] = [:]
    private var flagsGiven: Set<String> = []
    private var order: [String] = []
    private var wantsHelp = false
    private var declared: [(name: String, valueName: String?, help: String)] = []
    private var problems: [String] = []

    /// Reads `arguments` (the program's, without its own name). Words that are not `--name` are an error at `finish`.
    public init(command: String, abstract: String, discussion: String = "", arguments: [String] = Array(CommandLine.arguments.dropFirst())) {
        self.command = command
        self.abstract = abstract
        self.discussion = discussion
        var words = arguments[...]
        while let word = words.popFirst() {
            if word == "--help" || word == "-h" {
                wantsHelp = true
                continue
            }
            guard word.hasPrefix("--"), word.count > 2 else {
                problems.append("unexpected argument `\(word)`")
                continue
            }
            let body = word.dropFirst(2)
            if let equals = body.firstIndex(of: "=") {
                let name = String(body[..<equals])
                given[name, default: []].append(String(body[body.index(after: equals)...]))
                order.append(name)
            } else {
                let name = String(body)
                // The value is the next word unless the option turns out to be a flag (`flag(_:)` gives it back).
                if let next = words.first, !next.hasPrefix("--") {
                    given[name, default: []].append(next)
                    words.removeFirst()
                    pendingFlagValue[name] = next
                } else {
                    flagsGiven.insert(name)
                }
                order.append(name)
            }
        }
    }

    /// For `--flag WORD`: the word taken as the flag's value, given back as an unexpected argument.
    private var pendingFlagValue: [String: String] = [:]

    /// An option's last value, or nil when not given. A value that is missing is an error.
    public mutating func value(_ name: String, valueName: String? = nil, help: String) -> String? {
        declare(name, valueName: valueName ?? name, help: help)
        if flagsGiven.contains(name) { problems.append("--\(name): expected a value") }
        return given[name]?.last
    }

    /// Every value of a repeatable option, in order.
    public mutating func values(_ name: String, valueName: String? = nil, help: String) -> [String] {
        declare(name, valueName: valueName ?? name, help: help + " (repeatable)")
        if flagsGiven.contains(name) { problems.append("--\(name): expected a value") }
        return given[name] ?? []
    }

    /// An option with a default (shown in `--help`).
    public mutating func value(_ name: String, valueName: String? = nil, default fallback: String, help: String) -> String {
        value(name, valueName: valueName, help: help + " (default: \(fallback))") ?? fallback
    }

    /// A typed option (numbers): the text must convert, else a usage error naming the option and the text.
    public mutating func value<T: LosslessStringConvertible>(_ name: String, valueName: String? = nil, help: String) -> T? {
        guard let text = value(name, valueName: valueName, help: help) else { return nil }
        guard let typed = T(text) else {
            problems.append("--\(name): expected \(T.self is any BinaryInteger.Type ? "a whole number" : "a number"), found `\(text)`")
            return nil
        }
        return typed
    }

    /// A typed option with a default.
    public mutating func value<T: LosslessStringConvertible>(_ name: String, valueName: String? = nil, default fallback: T, help: String) -> T {
        value(name, valueName: valueName, help: help + " (default: \(fallback))") ?? fallback
    }

    /// A flag: true when `--name` was given.
    public mutating func flag(_ name: String, help: String) -> Bool {
        declare(name, valueName: nil, help: help)
        if let word = pendingFlagValue[name] {
            problems.append("unexpected argument `\(word)` (--\(name) takes no value)")
            return true
        }
        if given[name] != nil { problems.append("--\(name) takes no value") }
        return flagsGiven.contains(name)
    }

    /// Records a usage error found by the program's own checks (shown by `finish`).
    public mutating func fail(_ message: String) { problems.append(message) }

    /// After the last option: `--help` prints the options and exits 0; an unknown option or any error so far prints
    /// the first error and the usage line and exits 64.
    public mutating func finish() {
        if wantsHelp {
            writeStandardOutput(help)
            exit(0)
        }
        let known = Set(declared.map(\.name))
        for name in order where !known.contains(name) {
            problems.insert("unknown option --\(name)", at: 0)
            break
        }
        if let problem = problems.first { usageError(problem) }
    }

    /// Prints `problem` with the usage line and exits 64 (for checks made after `finish`).
    public func usageError(_ problem: String) -> Never {
        writeStandardError("\(command): error: \(problem)\nUsage: \(usage)\n  See '\(command) --help' for more information.\n")
        exit(64)
    }

    /// The problems found so far (tests).
    public var errors: [String] { problems }

    var usage: String { "\(command) [--help] [<options>]" }

    /// The `--help` text: the abstract, the usage line and each declared option with its help.
    public var help: String {
        var lines = ["OVERVIEW: \(abstract)", "", "USAGE: \(usage)", "", "OPTIONS:"]
        for option in declared {
            let left = "  --\(option.name)" + (option.valueName.map { " <\($0)>" } ?? "")
            lines.append(left.count < 30 ? left + String(repeating: " ", count: 30 - left.count) + option.help : left + "\n" + String(repeating: " ", count: 30) + option.help)
        }
        lines.append("  -h, --help                  Show help information.")
        if !discussion.isEmpty { lines += ["", discussion] }
        return lines.joined(separator: "\n") + "\n"
    }

    private mutating func declare(_ name: String, valueName: String?, help: String) {
        if !declared.contains(where: { $0.name == name }) { declared.append((name, valueName, help)) }
    }
}

private func writeStandardOutput(_ text: String) { StandardStreams.write(text, to: STDOUT_FILENO) }
private func writeStandardError(_ text: String) { StandardStreams.error(text) }
