import CYaml // Yams's own libyaml: the event scan below reads anchors and aliases without composing anything
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Yams

/// The one loader for the lab's YAML files (topologies, scenarios): a size limit, and anchors and aliases refused
/// before anything is composed (an alias used as a mapping key or repeated inside a step expands exponentially:
/// a 920-byte file took hours, a 621-byte one ran out of memory). Errors are `TopologyError`s (file:line:column).
public enum LabYAML {
    /// The largest lab file read (1 MiB); lab files are a few KiB.
    public static let maxBytes = 1 << 20
    /// The deepest nesting of mappings and lists (composing recurses once per level).
    public static let maxDepth = 64

    static var limitText: String { "1 MiB (\(maxBytes) bytes)" }

    /// Reads the file at `path` as UTF-8 text: not a directory, at most `maxBytes`.
    public static func read(path: String) throws -> String {
        func failure(_ message: String) -> TopologyError {
            TopologyError(file: path, line: 0, column: 0, field: "", message: message)
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot read the file: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure("cannot read the file: fstat: \(String(cString: strerror(errno)))") }
        if (info.st_mode & S_IFMT) == S_IFDIR { throw failure("cannot read the file: it is a directory; expected a YAML file") }
        if Int(info.st_size) > maxBytes {
            throw failure("the file is \(info.st_size) bytes; expected at most \(limitText)")
        }
        // Read at most maxBytes + 1 (a pipe or device says nothing of its size beforehand).
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= maxBytes {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("cannot read the file: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        guard bytes.count <= maxBytes else { throw failure("the file is larger than \(limitText); expected at most that") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The document's root node (nil: empty), after checking the size, refusing anchors and aliases and bounding
    /// the nesting depth. `file` is used in messages only.
    public static func compose(_ yaml: String, file: String) throws -> Node? {
        guard yaml.utf8.count <= maxBytes else {
            throw TopologyError(file: file, line: 1, column: 1, field: "",
                                message: "the text is \(yaml.utf8.count) bytes; expected at most \(limitText)")
        }
        try scan(yaml, file: file)
        do {
            return try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            throw TopologyParser.convert(error, file: file)
        }
    }

    /// Walks libyaml's events (linear in the text: nothing is expanded) and throws at the first anchor or alias,
    /// or at nesting deeper than `maxDepth`, naming its line, column and field. Syntax errors are left to Yams.
    static func scan(_ yaml: String, file: String) throws {
        var bytes = Array(yaml.utf8)
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            throw TopologyError(file: file, line: 1, column: 1, field: "", message: "YAML: cannot initialise the parser (out of memory)")
        }
        defer { yaml_parser_delete(&parser) }
        try bytes.withUnsafeMutableBufferPointer { buffer in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var path = YAMLPath()
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { return }
                defer { yaml_event_delete(&event) }
                let line = Int(event.start_mark.line) + 1
                let column = Int(event.start_mark.column) + 1
                if [YAML_ALIAS_EVENT, YAML_SCALAR_EVENT, YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT].contains(event.type) { path.begin() }
                func refuse(_ what: String) -> TopologyError {
                    TopologyError(file: file, line: line, column: column, field: path.current,
                                  message: "YAML \(what) is not supported in lab files (aliases can expand exponentially); write the value out")
                }
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return
                case YAML_ALIAS_EVENT:
                    throw refuse("alias `*\(text(event.data.alias.anchor))`")
                case YAML_SCALAR_EVENT:
                    if let anchor = event.data.scalar.anchor { throw refuse("anchor `&\(text(anchor))`") }
                    let value = String(decoding: UnsafeBufferPointer(start: event.data.scalar.value, count: event.data.scalar.length), as: UTF8.self)
                    path.finish(value)
                case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                    let isMapping = event.type == YAML_MAPPING_START_EVENT
                    if let anchor = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor {
                        throw refuse("anchor `&\(text(anchor))`")
                    }
                    path.open(mapping: isMapping)
                    if path.depth > maxDepth {
                        throw TopologyError(file: file, line: line, column: column, field: path.current,
                                            message: "nested deeper than \(maxDepth) mappings and lists; expected a shallower file")
                    }
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    path.close()
                default:
                    break
                }
            }
        }
    }

    static func text(_ pointer: UnsafeMutablePointer<yaml_char_t>) -> String { String(cString: pointer) }
}

/// The dotted field path (`hotspots[0].gateway.portal`) during the event scan, as `Field` names fields.
struct YAMLPath {
    enum Level {
        /// `readingKey`: the next node is a key; else it is the value of `key`.
        case mapping(key: String?, readingKey: Bool)
        case sequence(index: Int)
    }
    var levels: [Level] = []
    var depth: Int { levels.count }

    /// The path of the node being read.
    var current: String {
        var result = ""
        for level in levels {
            switch level {
            case .mapping(let key?, false): result += result.isEmpty ? key : ".\(key)"
            case .mapping: break
            case .sequence(let index): result += "[\(index)]"
            }
        }
        return result
    }

    /// A node starts in the innermost container (a list item counts).
    mutating func begin() {
        if case .sequence(let index)? = levels.last { levels[levels.count - 1] = .sequence(index: index + 1) }
    }

    /// A node ended: a key (its text, when a scalar) or a value.
    mutating func finish(_ scalar: String?) {
        guard case .mapping(_, let readingKey)? = levels.last else { return }
        levels[levels.count - 1] = readingKey ? .mapping(key: scalar ?? "?", readingKey: false) : .mapping(key: nil, readingKey: true)
    }

    mutating func open(mapping: Bool) {
        levels.append(mapping ? .mapping(key: nil, readingKey: true) : .sequence(index: -1))
    }

    mutating func close() {
        _ = levels.popLast()
        finish(nil)
    }
}
