// The step kind registry's generator, as a library: reads the Swift files of Sources/LabScenarioModel/Steps and
// finds every `static let <name> = StepKind(...)` (or `static let <name>: StepKind = ...`) of a type, then writes
// the Swift file declaring `StepRegistry.declaredKinds`. The build-tool plugin StepRegistryPlugin runs it (through
// the `step-registry-tool` program) on every build of LabScenarioModel and LabCertify, so a new step kind is its file alone.
//
// Standard library only (no Foundation): the program does the file I/O, this reads text.

/// A step kind found in a step file: `<type>.<name>`, declared at `file`:`line`.
public struct DeclaredStepKind: Equatable, Sendable, CustomStringConvertible {
    /// The file as the generator was given it (its messages and the generated comments name it).
    public var file: String
    public var line: Int
    /// The type that holds it, qualified when nested (`Outer.Inner`).
    public var type: String
    public var name: String

    public init(file: String, line: Int, type: String, name: String) {
        self.file = file
        self.line = line
        self.type = type
        self.name = name
    }

    /// How the generated code refers to it.
    public var reference: String { "\(type).\(name)" }
    public var description: String { "\(reference) (\(file):\(line))" }
}

/// Something in a step file the generator cannot read, with where it is: the build fails with it.
public struct StepKindProblem: Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int
    public var message: String

    public init(file: String, line: Int, column: Int, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    /// The compilers' form, which SwiftPM and editors show at the place.
    public var description: String { "\(file):\(line):\(column): error: \(message)" }
}

/// Generating the registry failed: every problem found, in file order.
public struct StepRegistryScanError: Error, Equatable, CustomStringConvertible {
    public var problems: [StepKindProblem]
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}

public enum StepRegistryScanner {
    /// The form a step kind must be declared in (the messages quote it).
    public static let expectedForm = "`static let <name> = StepKind(...)` (or `static let <name>: StepKind = ...`) in a type"

    /// The step kinds `text` (the contents of `file`) declares, in declaration order, and what it could not read.
    public static func scan(_ text: String, file: String) -> (kinds: [DeclaredStepKind], problems: [StepKindProblem]) {
        var lexer = Lexer(text)
        let tokens = lexer.tokenize()
        var reader = DeclarationReader(tokens: tokens, file: file)
        reader.read()
        var problems = lexer.problems.map {
            StepKindProblem(file: file, line: $0.line, column: $0.column,
                            message: "reading the step kinds of \(fileName(file)): \($0.message)")
        }
        problems += reader.problems
        return (reader.kinds, problems)
    }

    /// The step kinds of all `files` (path, contents) in the registry's order: by file name, then declaration
    /// order. Throws every problem found: a declaration in a form it cannot read, a file named `*Step.swift`
    /// that declares no kind (its kind would be missing from the registry), no kind at all.
    public static func kinds(of files: [(path: String, text: String)]) throws(StepRegistryScanError) -> [DeclaredStepKind] {
        let ordered = files.sorted { (fileName($0.path), $0.path) < (fileName($1.path), $1.path) }
        var kinds: [DeclaredStepKind] = []
        var problems: [StepKindProblem] = []
        for file in ordered {
            let found = scan(file.text, file: file.path)
            problems += found.problems
            if found.kinds.isEmpty, found.problems.isEmpty, fileName(file.path).hasSuffix("Step.swift") {
                problems.append(StepKindProblem(
                    file: file.path, line: 1, column: 1,
                    message: "reading the step kinds of \(fileName(file.path)): a step file (named *Step.swift) declares no "
                        + "step kind in the form \(expectedForm); declare it so, or rename the file if it holds no kind"))
            }
            kinds += found.kinds
        }
        if problems.isEmpty, kinds.isEmpty {
            problems.append(StepKindProblem(file: "(step files)", line: 0, column: 0,
                                            message: "reading the step kinds of \(files.count) file(s): found no step kind"))
        }
        guard problems.isEmpty else { throw StepRegistryScanError(problems: problems) }
        return kinds
    }

    /// The generated Swift file: `StepRegistry.declaredKinds`, the kinds in the order given.
    public static func render(_ kinds: [DeclaredStepKind]) -> String {
        var out = """
        // Generated by step-registry-tool (Plugins/StepRegistryPlugin) from the step files of LabScenarioModel on every build.
        // Do not edit: a step kind is declared in its own file, as \(expectedForm).

        extension StepRegistry {
            /// Every step kind declared in Sources/LabScenarioModel/Steps, by file name, then declaration order.
            static let declaredKinds: [StepKind] = [

        """
        for kind in kinds {
            out += "        \(kind.reference), // \(fileName(kind.file)):\(kind.line)\n"
        }
        out += "    ]\n}\n"
        return out
    }

    /// `kinds(of:)` then `render`.
    public static func generate(_ files: [(path: String, text: String)]) throws(StepRegistryScanError) -> String {
        render(try kinds(of: files))
    }

    static func fileName(_ path: String) -> String {
        String(path.split(separator: "/", omittingEmptySubsequences: false).last ?? Substring(path))
    }
}

// MARK: - Tokens

struct Token: Equatable {
    enum Kind: Equatable {
        case identifier  // keywords too; a backticked name without its backticks
        case punctuation  // one character
        case string  // a whole string literal, interpolations included
        case directive  // `#if`, `#endif`, `#selector`, ...: the text after `#`
    }

    var kind: Kind
    var text: String
    var line: Int
    var column: Int

    func isPunctuation(_ c: Character) -> Bool { kind == .punctuation && text == String(c) }
    func isIdentifier(_ name: String) -> Bool { kind == .identifier && text == name }
}

/// Swift text to tokens, with comments dropped and string literals (raw, multi-line, interpolated) as one token:
/// enough to find declarations and braces, not a Swift parser.
struct Lexer {
    struct Problem { var line: Int, column: Int, message: String }

    private let chars: [Character]
    private var i = 0
    private var line = 1
    private var column = 1
    private(set) var problems: [Problem] = []

    init(_ text: String) { chars = Array(text) }

    private func peek(_ offset: Int = 0) -> Character? { i + offset < chars.count ? chars[i + offset] : nil }

    private mutating func advance() {
        if chars[i] == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
        i += 1
    }

    private mutating func advance(_ n: Int) { for _ in 0..<n where i < chars.count { advance() } }

    mutating func tokenize() -> [Token] {
        var tokens: [Token] = []
        while let token = next() { tokens.append(token) }
        return tokens
    }

    private static func isIdentifierStart(_ c: Character) -> Bool { c == "_" || c.isLetter }
    private static func isIdentifierPart(_ c: Character) -> Bool { c == "_" || c.isLetter || c.isNumber }

    /// The next token, nil at the end.
    mutating func next() -> Token? {
        while let c = peek() {
            let (l, col) = (line, column)
            if c.isWhitespace {
                advance()
            } else if c == "/", peek(1) == "/" {
                while let d = peek(), d != "\n" { _ = d; advance() }
            } else if c == "/", peek(1) == "*" {
                skipBlockComment()
            } else if c == "\"" {
                skipString(hashes: 0)
                return Token(kind: .string, text: "\"", line: l, column: col)
            } else if c == "#" {
                var n = 0
                while peek(n) == "#" { n += 1 }
                if peek(n) == "\"" {
                    advance(n)
                    skipString(hashes: n)
                    return Token(kind: .string, text: "#\"", line: l, column: col)
                }
                advance()
                var name = ""
                while let d = peek(), Self.isIdentifierPart(d) { name.append(d); advance() }
                return Token(kind: .directive, text: name, line: l, column: col)
            } else if c == "`" {
                advance()
                var name = ""
                while let d = peek(), d != "`", d != "\n" { name.append(d); advance() }
                if peek() == "`" { advance() }
                return Token(kind: .identifier, text: name, line: l, column: col)
            } else if Self.isIdentifierStart(c) || c == "$" {
                var name = ""
                while let d = peek(), Self.isIdentifierPart(d) || d == "$" { name.append(d); advance() }
                return Token(kind: .identifier, text: name, line: l, column: col)
            } else if c.isNumber {
                var text = ""
                while let d = peek(), Self.isIdentifierPart(d) || d == "." && (peek(1)?.isNumber ?? false) { text.append(d); advance() }
                return Token(kind: .identifier, text: text, line: l, column: col)
            } else {
                advance()
                return Token(kind: .punctuation, text: String(c), line: l, column: col)
            }
        }
        return nil
    }

    private mutating func skipBlockComment() {
        let (l, col) = (line, column)
        advance(2)
        var depth = 1
        while depth > 0 {
            guard let c = peek() else {
                problems.append(Problem(line: l, column: col, message: "a block comment that is not closed"))
                return
            }
            if c == "/", peek(1) == "*" { depth += 1; advance(2) }
            else if c == "*", peek(1) == "/" { depth -= 1; advance(2) }
            else { advance() }
        }
    }

    /// At the opening quote(s) of a string with `hashes` `#`s before it (already skipped); skips to after its end
    /// (the quotes and the `#`s).
    private mutating func skipString(hashes: Int) {
        let (l, col) = (line, column)
        let multiline = peek() == "\"" && peek(1) == "\"" && peek(2) == "\""
        advance(multiline ? 3 : 1)
        func closes(_ lexer: Lexer) -> Int? {
            let quotes = multiline ? 3 : 1
            for k in 0..<quotes where lexer.peek(k) != "\"" { return nil }
            for k in 0..<hashes where lexer.peek(quotes + k) != "#" { return nil }
            return quotes + hashes
        }
        while let c = peek() {
            if let n = closes(self) { advance(n); return }
            if c == "\n", !multiline { break }
            if c == "\\" {
                var n = 0
                while n < hashes, peek(1 + n) == "#" { n += 1 }
                if n == hashes {
                    advance(1 + hashes)
                    if peek() == "(" {
                        skipInterpolation()
                    } else if peek() != nil {
                        advance()  // the escaped character
                    }
                    continue
                }
            }
            advance()
        }
        problems.append(Problem(line: l, column: col, message: "a string literal that is not closed"))
    }

    /// At the `(` of an interpolation: skips to after its `)`, strings and comments inside included.
    private mutating func skipInterpolation() {
        advance()
        var depth = 1
        while depth > 0, peek() != nil {
            guard let token = next() else { break }
            if token.isPunctuation("(") { depth += 1 }
            if token.isPunctuation(")") { depth -= 1 }
        }
    }
}

// MARK: - Declarations

/// Walks the tokens with a stack of scopes (types, other braces) and `#if` blocks, and reads every binding
/// that declares a step kind or constructs one.
struct DeclarationReader {
    let tokens: [Token]
    let file: String
    private(set) var kinds: [DeclaredStepKind] = []
    private(set) var problems: [StepKindProblem] = []

    init(tokens: [Token], file: String) {
        self.tokens = tokens
        self.file = file
    }

    private struct Scope {
        /// The type's name for a type body (`struct`, `enum`, `class`, `actor`, `extension`, `protocol`), nil for
        /// any other brace (a function body, a closure, an accessor).
        var type: String?
        var isProtocol = false
        var isPrivate = false
    }

    private static let typeKeywords: Set<String> = ["struct", "enum", "class", "actor", "extension", "protocol"]
    private static let modifiers: Set<String> = [
        "public", "internal", "private", "fileprivate", "open", "package", "static", "class", "final", "nonisolated",
        "lazy", "override", "dynamic", "weak", "unowned", "required", "convenience", "mutating", "nonmutating",
        "indirect", "borrowing", "consuming",
    ]
    private static let keywords = Set<String>([
        "func", "var", "let", "init", "subscript", "case", "where", "in", "typealias", "associatedtype",
    ]).union(typeKeywords)

    /// Indexes of `StepKind(` / `StepKind.init(` constructions a declaration accounted for.
    private var accounted: Set<Int> = []

    private mutating func problem(_ token: Token, _ message: String) {
        problems.append(StepKindProblem(file: file, line: token.line, column: token.column, message: message))
    }

    private func token(_ k: Int) -> Token? { k >= 0 && k < tokens.count ? tokens[k] : nil }

    /// Whether a `StepKind` construction starts at k: `StepKind(` or `StepKind.init(`.
    private func isConstruction(at k: Int) -> Bool {
        guard let t = token(k), t.isIdentifier("StepKind") else { return false }
        if token(k + 1)?.isPunctuation("(") == true { return true }
        return token(k + 1)?.isPunctuation(".") == true && token(k + 2)?.isIdentifier("init") == true
            && token(k + 3)?.isPunctuation("(") == true
    }

    /// The modifiers (and attributes) written before the token at k.
    private func modifiers(before k: Int) -> [String] {
        var found: [String] = []
        var j = k - 1
        while let t = token(j) {
            if t.isPunctuation(")") {  // `private(set)`, `@available(...)`
                var depth = 0
                while let u = token(j) {
                    if u.isPunctuation(")") { depth += 1 }
                    if u.isPunctuation("(") { depth -= 1; if depth == 0 { break } }
                    j -= 1
                }
                j -= 1
                continue
            }
            guard t.kind == .identifier else { break }
            if token(j - 1)?.isPunctuation("@") == true {  // an attribute
                j -= 2
                continue
            }
            guard Self.modifiers.contains(t.text) else { break }
            found.append(t.text)
            j -= 1
        }
        return found
    }

    mutating func read() {
        var scopes: [Scope] = []
        var conditionals: [Token] = []  // the open `#if`s
        var pendingType: (name: String, isProtocol: Bool, isPrivate: Bool, isExtension: Bool)?
        var parens = 0  // ( and [ depth since the pending type's name: its `{` is the first at depth 0

        var k = 0
        while k < tokens.count {
            let t = tokens[k]
            switch t.kind {
            case .directive:
                if t.text == "if" { conditionals.append(t) }
                if t.text == "endif", !conditionals.isEmpty { conditionals.removeLast() }
            case .identifier where Self.typeKeywords.contains(t.text):
                // `class func`/`class var` are members, not types; `protocol P: class` is a constraint.
                // `import struct M.T` names a type without declaring one.
                if token(k - 1)?.isIdentifier("import") != true, let name = token(k + 1), name.kind == .identifier,
                   !Self.keywords.contains(name.text), !Self.modifiers.contains(name.text) || t.text != "class" {
                    var qualified = name.text
                    var j = k + 2  // `extension A.B`
                    while token(j)?.isPunctuation(".") == true, let part = token(j + 1), part.kind == .identifier {
                        qualified += "." + part.text
                        j += 2
                    }
                    let mods = modifiers(before: k)
                    pendingType = (qualified, t.text == "protocol", mods.contains("private") || mods.contains("fileprivate"),
                                   t.text == "extension")
                    parens = 0
                    k = j
                    continue
                }
            case .identifier where t.text == "let" || t.text == "var":
                k = readBinding(at: k, scopes: scopes, inConditional: conditionals.last)
                continue
            case .punctuation:
                switch t.text {
                case "(", "[": parens += 1
                case ")", "]": parens -= 1
                case "{":
                    if let pending = pendingType, parens <= 0 {
                        let outer = scopes.last?.type.map { $0 + "." } ?? ""
                        let name = pending.isExtension ? pending.name : outer + pending.name
                        let local = scopes.contains { $0.type == nil }
                        // A type inside a function cannot be named from the generated file: mark it so.
                        scopes.append(Scope(type: local ? nil : name, isProtocol: pending.isProtocol,
                                            isPrivate: pending.isPrivate || scopes.last?.isPrivate == true))
                        pendingType = nil
                    } else {
                        scopes.append(Scope(type: nil))
                    }
                case "}":
                    if !scopes.isEmpty { scopes.removeLast() }
                default: break
                }
            default: break
            }
            if isConstruction(at: k), !accounted.contains(k) {
                problem(t, "reading the step kinds of \(StepRegistryScanner.fileName(file)): a StepKind is constructed "
                    + "outside the form the registry generator reads, \(StepRegistryScanner.expectedForm); it would be "
                    + "missing from StepRegistry.kinds")
            }
            k += 1
        }
        if let open = conditionals.last {
            problem(open, "reading the step kinds of \(StepRegistryScanner.fileName(file)): an `#if` with no `#endif`")
        }
    }

    /// At `let`/`var`: reads the binding (its name, its type annotation, the start of its initializer); records a
    /// step kind or a problem when it declares or constructs one. Returns the index to go on from (the name).
    private mutating func readBinding(at k: Int, scopes: [Scope], inConditional: Token?) -> Int {
        let keyword = tokens[k]
        guard let nameToken = token(k + 1), nameToken.kind == .identifier else { return k + 1 }
        // The annotation: the tokens between `:` and `=` / `{` / the next declaration, at bracket depth 0.
        var j = k + 2
        var annotation: [Token] = []
        if token(j)?.isPunctuation(":") == true {
            j += 1
            var depth = 0
            while let u = token(j) {
                if depth == 0, u.isPunctuation("=") || u.isPunctuation("{") || u.isPunctuation("}")
                    || u.isPunctuation(",") || u.isPunctuation(";") || (u.kind == .identifier && (Self.keywords.contains(u.text)
                        || Self.modifiers.contains(u.text)) && u.line != keyword.line) || u.kind == .directive {
                    break
                }
                if u.isPunctuation("(") || u.isPunctuation("[") || u.isPunctuation("<") { depth += 1 }
                if u.isPunctuation(")") || u.isPunctuation("]") || u.isPunctuation(">") && token(j - 1)?.isPunctuation("-") != true {
                    depth -= 1
                }
                annotation.append(u)
                j += 1
            }
        }
        let annotated = annotation.count == 1 && annotation[0].isIdentifier("StepKind")
        var constructionIndex: Int?
        if token(j)?.isPunctuation("=") == true, isConstruction(at: j + 1) { constructionIndex = j + 1 }
        guard annotated || constructionIndex != nil else { return k + 1 }

        let scope = scopes.last
        let mods = modifiers(before: k)
        let where_ = "reading the step kinds of \(StepRegistryScanner.fileName(file)): `\(nameToken.text)`"
        let form = "declare it as \(StepRegistryScanner.expectedForm)"
        if let constructionIndex { accounted.insert(constructionIndex) }

        // Inside a function, a closure or an accessor: a local value, not a declaration (a construction is reported
        // as such by `read`, unless it is accounted for here).
        if let scope, scope.type == nil {
            if let constructionIndex {
                accounted.remove(constructionIndex)
            }
            return k + 1
        }
        if scope == nil {
            problem(nameToken, "\(where_) is a StepKind outside any type; \(form)")
        } else if let scope, scope.isProtocol {
            problem(nameToken, "\(where_) is a StepKind requirement of a protocol; \(form)")
        } else if !mods.contains("static") {
            problem(nameToken, "\(where_) is an instance property; \(form)")
        } else if keyword.text != "let" {
            problem(nameToken, "\(where_) is a `static var`; \(form)")
        } else if token(j)?.isPunctuation("=") != true {
            problem(nameToken, "\(where_) has no initializer (a computed property?); \(form)")
        } else if mods.contains("private") || mods.contains("fileprivate") || scope?.isPrivate == true {
            problem(nameToken, "\(where_) is private, so the generated registry cannot name it; make it internal or public")
        } else if let open = inConditional {
            problem(nameToken, "\(where_) is inside the `#if` of line \(open.line), which the generator cannot evaluate; "
                + "declare step kinds unconditionally")
        } else if let type = scope?.type {
            kinds.append(DeclaredStepKind(file: file, line: nameToken.line, type: type, name: nameToken.text))
        }
        return k + 1
    }
}
