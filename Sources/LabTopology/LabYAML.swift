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

    /// Reads the file at `path` as UTF-8 text (`text(_:file:)`): a regular file (a FIFO, a device or a directory is
    /// refused without blocking: it is opened non-blocking and checked before any read), at most `maxBytes`.
    public static func read(path: String) throws -> String {
        func failure(_ message: String) -> TopologyError {
            TopologyError(file: path, line: 0, column: 0, field: "", message: message)
        }
        // O_NONBLOCK: opening a FIFO for reading would wait for a writer (forever); on a regular file it changes nothing.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw failure("cannot read the file: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure("cannot read the file: fstat: \(String(cString: strerror(errno)))") }
        let kind = info.st_mode & S_IFMT
        if kind == S_IFDIR { throw failure("cannot read the file: it is a directory; expected a YAML file") }
        guard kind == S_IFREG else {
            let name = [S_IFIFO: "a FIFO (named pipe)", S_IFCHR: "a character device",
                        S_IFBLK: "a block device", S_IFSOCK: "a socket"][kind] ?? "not a regular file"
            throw failure("cannot read the file: it is \(name); expected a regular YAML file")
        }
        if Int(info.st_size) > maxBytes {
            throw failure("the file is \(info.st_size) bytes; expected at most \(limitText)")
        }
        // Read at most maxBytes + 1 (the file may grow while it is read).
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
        return try text(bytes, file: path)
    }

    /// The bytes of a lab file as text: UTF-8 (a byte-order mark is allowed, as YAML allows it), else refused at
    /// the first byte that is not UTF-8, with its line, column and field. Names of other bytes are written in hex
    /// (`ssid_hex:`); nothing is replaced by U+FFFD.
    public static func text(_ bytes: [UInt8], file: String) throws -> String {
        guard let bad = firstInvalidUTF8(bytes) else { return String(decoding: bytes, as: UTF8.self) }
        let (line, column) = position(ofByte: bad, in: bytes)
        let lossy = String(decoding: bytes, as: UTF8.self)
        let field = fieldPath(line: line, column: column, in: lossy)
        var hint = "lab files are UTF-8 text; an SSID of other bytes is written as `ssid_hex:` with its bytes in hex"
        if let hex = plainValueHex(bytes, around: bad) { hint += " (here `ssid_hex: \(hex)`)" }
        throw TopologyError(file: file, line: line, column: column, field: field,
                            message: String(format: "byte 0x%02X is not UTF-8; ", bytes[bad]) + hint)
    }

    /// The offset of the first byte that does not start or continue a valid UTF-8 sequence, nil if none.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded): offset += encoded.count
            case .error: return offset
            case .emptyInput: return nil
            }
        }
    }

    /// Line and column (from 1; the column counted in characters, as libyaml counts) of the byte at `offset`.
    static func position(ofByte offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in bytes[..<min(offset, bytes.count)] {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return (line, column)
    }

    /// The hex of a plain one-line value (`key: value`) holding the byte at `offset`, for the hint; nil when the
    /// value is quoted, continues or carries a comment.
    static func plainValueHex(_ bytes: [UInt8], around offset: Int) -> String? {
        let lineStart = bytes[..<offset].lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
        let lineEnd = bytes[offset...].firstIndex(of: 0x0A) ?? bytes.count
        let line = Array(bytes[lineStart..<lineEnd])
        guard let colon = line.indices.first(where: { line[$0] == 0x3A && $0 + 1 < line.count && line[$0 + 1] == 0x20 }),
              lineStart + colon < offset else { return nil }
        var value = Array(line[(colon + 2)...])
        while let last = value.last, last == 0x20 || last == 0x0D || last == 0x09 { value.removeLast() }
        while let first = value.first, first == 0x20 { value.removeFirst() }
        guard !value.isEmpty, value.count <= 32, ![0x22, 0x27, 0x7B, 0x5B, 0x7C, 0x3E].contains(value[0]),
              !zip(value, value.dropFirst()).contains(where: { $0 == 0x20 && $1 == 0x23 }) else { return nil }
        return value.map { String(format: "%02x", $0) }.joined()
    }

    /// The one writer of the lab's YAML files (`hotspot-lab replay --to-scenario` among them): Yams's emitter, so
    /// every value is quoted as YAML needs and reads back as written; keys stay in their order, lines are never
    /// folded. `comment` (one line; a line break in it is written as a space) opens the file.
    public static func write(_ node: Node, comment: String? = nil) throws -> String {
        let body = try Yams.serialize(node: node, width: -1, allowUnicode: true)
        guard let comment else { return body }
        return "# " + comment.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\r", with: " ") + "\n" + body
    }

    /// The document's root node (nil: empty), after checking the size, refusing anchors and aliases and bounding
    /// the nesting depth. `file` is used in messages only.
    public static func compose(_ text: String, file: String) throws -> Node? {
        // A byte-order mark may start a YAML stream. Yams sets the encoding itself, so libyaml takes the mark for a
        // character of the first line, and `---` or `%YAML` after it is no longer a marker: drop it here.
        var yaml = text
        if yaml.unicodeScalars.first == "\u{FEFF}" { yaml.unicodeScalars.removeFirst() }
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

    /// The tags of YAML's core schema (`!!str`, ...) and the non-specific `!`: the only ones lab files may carry.
    static let coreTags: Set<String> = Set(["null", "bool", "int", "float", "str", "seq", "map"].map { "tag:yaml.org,2002:" + $0 } + ["!"])

    /// Walks libyaml's events (linear in the text: nothing is expanded) and throws at the first anchor or alias, at a
    /// tag outside the core schema (`!!binary`, `!custom`: Yams would take the text as a plain string), at nesting
    /// deeper than `maxDepth`, or at a reader error (a control character: its real line and column), naming its
    /// line, column and field. Other syntax errors are left to Yams.
    static func scan(_ yaml: String, file: String) throws {
        var bytes = Array(yaml.utf8)
        try walk(&bytes, file: file) { event, path, line, column in
            func refuse(_ what: String) -> TopologyError {
                TopologyError(file: file, line: line, column: column, field: path.current,
                              message: "YAML \(what) is not supported in lab files (aliases can expand exponentially); write the value out")
            }
            func checkTag(_ tag: UnsafeMutablePointer<yaml_char_t>?) throws {
                guard let tag else { return }
                let name = text(tag)
                guard !coreTags.contains(name) else { return }
                let shown = name.hasPrefix("tag:yaml.org,2002:") ? "!!" + name.dropFirst("tag:yaml.org,2002:".count) : name
                throw TopologyError(file: file, line: line, column: column, field: path.current,
                                    message: "YAML tag `\(shown)` is not supported in lab files (only the core schema: !!str, !!int, !!float, !!bool, !!null, !!seq, !!map); write the value plainly")
            }
            switch event.type {
            case YAML_ALIAS_EVENT:
                throw refuse("alias `*\(text(event.data.alias.anchor))`")
            case YAML_SCALAR_EVENT:
                if let anchor = event.data.scalar.anchor { throw refuse("anchor `&\(text(anchor))`") }
                try checkTag(event.data.scalar.tag)
            case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                let isMapping = event.type == YAML_MAPPING_START_EVENT
                if let anchor = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor {
                    throw refuse("anchor `&\(text(anchor))`")
                }
                try checkTag(isMapping ? event.data.mapping_start.tag : event.data.sequence_start.tag)
                if path.depth + 1 > maxDepth {
                    throw TopologyError(file: file, line: line, column: column, field: path.current,
                                        message: "nested deeper than \(maxDepth) mappings and lists; expected a shallower file")
                }
            default:
                break
            }
            return true
        }
    }

    /// The field path of the last node starting at or before `line`:`column` (for errors found outside libyaml).
    static func fieldPath(line: Int, column: Int, in yaml: String) -> String {
        var bytes = Array(yaml.utf8)
        var found = ""
        _ = try? walk(&bytes, file: "") { event, path, eventLine, eventColumn in
            guard (eventLine, eventColumn) <= (line, column) else { return false }
            if [YAML_SCALAR_EVENT, YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT, YAML_ALIAS_EVENT].contains(event.type) {
                found = path.current
            }
            return true
        }
        return found
    }

    /// Runs libyaml's parser over `bytes` and calls `body` with each event, the field path of the node it starts
    /// (before the event is applied to it), and its line and column; `body` returns false to stop. A reader error
    /// (a control character, a bad encoding) is thrown with its real position; other parse errors end the walk.
    static func walk(_ bytes: inout [UInt8], file: String,
                     _ body: (yaml_event_t, YAMLPath, Int, Int) throws -> Bool) throws {
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
                guard yaml_parser_parse(&parser, &event) == 1 else {
                    guard parser.error == YAML_READER_ERROR else { return }
                    // Reader errors carry a byte offset, not a mark: count the lines and characters before it.
                    let offset = Int(parser.problem_offset)
                    let (line, column) = position(ofByte: offset, in: Array(buffer))
                    let problem = parser.problem.map { String(cString: $0) } ?? "cannot read the text"
                    let value = parser.problem_value >= 0 ? String(format: " (0x%02X)", parser.problem_value) : ""
                    throw TopologyError(file: file, line: line, column: column, field: path.current,
                                        message: "YAML: \(problem)\(value); expected printable UTF-8 text")
                }
                defer { yaml_event_delete(&event) }
                let line = Int(event.start_mark.line) + 1
                let column = Int(event.start_mark.column) + 1
                if [YAML_ALIAS_EVENT, YAML_SCALAR_EVENT, YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT].contains(event.type) { path.begin() }
                if event.type == YAML_STREAM_END_EVENT { return }
                guard try body(event, path, line, column) else { return }
                switch event.type {
                case YAML_SCALAR_EVENT:
                    let value = String(decoding: UnsafeBufferPointer(start: event.data.scalar.value, count: event.data.scalar.length), as: UTF8.self)
                    path.finish(value)
                case YAML_ALIAS_EVENT:
                    path.finish(nil)
                case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                    path.open(mapping: event.type == YAML_MAPPING_START_EVENT)
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
