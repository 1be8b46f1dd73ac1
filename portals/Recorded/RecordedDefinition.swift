import Foundation

// A recorded portal: what `hotspot-lab portal import` makes of a HAR capture and the `recorded` kind serves.
// JSON, pretty-printed with sorted keys so it reads and diffs well; `{{name}}` marks a per-station value.

/// The requests to match, the responses to serve, and which request signs in.
public struct RecordedPortalDefinition: Codable, Sendable, Equatable {
    public static let currentFormat = "hotspotlab-recorded-portal/1"
    public var format: String
    /// The capture's file name (never its contents).
    public var source: String
    /// The hosts the capture's portal answered on; in the lab they are all the lab portal (`{{portal}}`).
    public var portalHosts: [String]
    /// Per-station values: served fresh for each station and checked when they come back.
    public var variables: [RecordedVariable]
    public var exchanges: [RecordedExchange]
    /// Cookies the portal set must come back on the sign-in (off by default: the reference helper keeps no cookies).
    public var requireCookies: Bool

    public init(source: String, portalHosts: [String], variables: [RecordedVariable], exchanges: [RecordedExchange], requireCookies: Bool = false) {
        format = Self.currentFormat
        self.source = source
        self.portalHosts = portalHosts
        self.variables = variables
        self.exchanges = exchanges
        self.requireCookies = requireCookies
    }

    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// Reads and checks a definition file; errors name the file, the line and column when the JSON is broken, and
    /// the field (`exchanges[2].role`).
    public static func load(path: String) throws -> RecordedPortalDefinition {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw RecordedDefinitionError(file: path, field: "", message: "cannot read the file: \(error.localizedDescription)")
        }
        return try parse(data, file: path)
    }

    public static func parse(_ data: Data, file: String) throws -> RecordedPortalDefinition {
        do { _ = try JSONSerialization.jsonObject(with: data) } catch {
            let position = HARDocument.jsonPosition(error, in: data).map { " at \($0)" } ?? ""
            throw RecordedDefinitionError(file: file, field: "", message: "not JSON\(position): \(HARDocument.jsonProblem(error))")
        }
        let definition: RecordedPortalDefinition
        do { definition = try JSONDecoder().decode(RecordedPortalDefinition.self, from: data) } catch let error as DecodingError {
            throw RecordedDefinitionError(file: file, field: String(HARDocument.decodingPath(error).drop { $0 == "." }),
                                          message: HARDocument.decodingProblem(error))
        }
        try definition.check(file: file)
        return definition
    }

    /// The roles an exchange can have.
    public static let roles = ["probe", "page", "asset", "sign-in", "refusal"]

    func check(file: String) throws {
        func fail(_ field: String, _ message: String) -> RecordedDefinitionError {
            RecordedDefinitionError(file: file, field: field, message: message)
        }
        guard format == Self.currentFormat else { throw fail("format", "expected \"\(Self.currentFormat)\", found \"\(format)\"") }
        guard !exchanges.isEmpty else { throw fail("exchanges", "empty; expected at least the probe's answer") }
        let names = Set(variables.map(\.name))
        for (i, variable) in variables.enumerated() where !RecordedVariable.kinds.contains(variable.kind) {
            throw fail("variables[\(i)].kind", "expected one of \(RecordedVariable.kinds.joined(separator: ", ")), found `\(variable.kind)`")
        }
        for (i, exchange) in exchanges.enumerated() {
            guard Self.roles.contains(exchange.role) else {
                throw fail("exchanges[\(i)].role", "expected one of \(Self.roles.joined(separator: ", ")), found `\(exchange.role)`")
            }
            guard (100...599).contains(exchange.response.status) else {
                throw fail("exchanges[\(i)].response.status", "expected an HTTP status 100...599, found \(exchange.response.status)")
            }
            guard exchange.request.path.hasPrefix("/") || exchange.role == "probe" else {
                throw fail("exchanges[\(i)].request.path", "expected a path starting with /, found `\(exchange.request.path)`")
            }
            let texts = [("request.path", exchange.request.path), ("response.body", exchange.response.body)]
                + exchange.request.fields.map { ("request.fields.\($0.key)", $0.value) }
                + exchange.response.headers.map { ("response.headers.\($0.key)", $0.value) }
            for (field, text) in texts {
                for name in Template.names(in: text) where !Template.builtIn(name) && !names.contains(Template.base(name)) {
                    throw fail("exchanges[\(i)].\(field)", "`{{\(name)}}` is not a variable of this definition (variables: \(names.sorted().joined(separator: ", ")))")
                }
            }
        }
        guard exchanges.contains(where: { $0.role == "probe" }) else { throw fail("exchanges", "no exchange with role probe (the answer to an intercepted request)") }
        if exchanges.filter({ $0.role == "sign-in" }).count > 1 { throw fail("exchanges", "more than one exchange with role sign-in") }
    }

    public var signIn: RecordedExchange? { exchanges.first { $0.role == "sign-in" } }
    public var refusal: RecordedExchange? { exchanges.first { $0.role == "refusal" } }
    public var probe: RecordedExchange? { exchanges.first { $0.role == "probe" } }
}

public struct RecordedDefinitionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var field: String
    public var message: String
    public init(file: String, field: String, message: String) {
        self.file = file
        self.field = field
        self.message = message
    }
    public var description: String { "read recorded portal \(file): " + (field.isEmpty ? "" : "\(field): ") + message }
}

/// A per-station value: `mac` and `ip` are the station's own; `token`, `cookie` and `session` are fresh random
/// strings shaped like the recorded one (`length`, `alphabet`).
public struct RecordedVariable: Codable, Sendable, Equatable {
    public static let kinds = ["mac", "ip", "token", "cookie", "session"]
    public var name: String
    public var kind: String
    public var length: Int
    /// `hex`, `HEX` or `alnum` (tokens); for a MAC its style: `:` or `-` separated, lower or upper case (`aa:bb`, `AA-BB`).
    public var alphabet: String

    public init(name: String, kind: String, length: Int, alphabet: String) {
        self.name = name
        self.kind = kind
        self.length = length
        self.alphabet = alphabet
    }
}

/// One request and its answer.
public struct RecordedExchange: Codable, Sendable, Equatable {
    /// `probe` (any intercepted request), `page`, `asset`, `sign-in` (serving it opens the gate), `refusal` (the
    /// answer to a sign-in whose credentials or per-station values are wrong).
    public var role: String
    /// Where it came from in the capture (`log.entries[4]`).
    public var entry: Int
    public var request: RecordedRequest
    public var response: RecordedResponse

    public init(role: String, entry: Int, request: RecordedRequest, response: RecordedResponse) {
        self.role = role
        self.entry = entry
        self.request = request
        self.response = response
    }
}

public struct RecordedRequest: Codable, Sendable, Equatable {
    public var method: String
    /// The path; may contain `{{session-…}}`.
    public var path: String
    /// Query and body fields that matter: a literal, `{{variable}}` (must be this station's value) or
    /// `{{setting:username}}` (must be the portal's setting).
    public var fields: [String: String]
    /// Cookies that came back (`{{cookie-…}}`), checked when `requireCookies`.
    public var cookies: [String: String]

    public init(method: String, path: String, fields: [String: String] = [:], cookies: [String: String] = [:]) {
        self.method = method
        self.path = path
        self.fields = fields
        self.cookies = cookies
    }
}

public struct RecordedResponse: Codable, Sendable, Equatable {
    public var status: Int
    /// Location, Content-Type, Set-Cookie, Refresh as recorded (templated).
    public var headers: [String: String]
    public var body: String

    public init(status: Int, headers: [String: String] = [:], body: String = "") {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// `{{name}}` and `{{name|url}}` placeholders: rendering and matching.
public enum Template {
    /// Placeholders the portal fills without a variable: `portal` (its base URL, no trailing slash), `setting:NAME`.
    static func builtIn(_ name: String) -> Bool { base(name) == "portal" || name.hasPrefix("setting:") }

    /// `mac|url` -> `mac`.
    public static func base(_ name: String) -> String { name.split(separator: "|", maxSplits: 1).first.map(String.init) ?? name }

    public static func names(in text: String) -> [String] {
        var out: [String] = []
        var rest = text[...]
        while let open = rest.range(of: "{{"), let close = rest.range(of: "}}", range: open.upperBound..<rest.endIndex) {
            out.append(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return out
    }

    /// Replaces each `{{name}}` by `value(base name)`, percent-encoded for `{{name|url}}`; unknown names stay.
    public static func render(_ text: String, _ value: (String) -> String?) -> String {
        guard text.contains("{{") else { return text }
        var out = ""
        var rest = text[...]
        while let open = rest.range(of: "{{"), let close = rest.range(of: "}}", range: open.upperBound..<rest.endIndex) {
            out += rest[..<open.lowerBound]
            let name = String(rest[open.upperBound..<close.lowerBound])
            if let v = value(base(name)) {
                out += name.hasSuffix("|url") ? urlEncode(v) : v
            } else {
                out += rest[open.lowerBound..<close.upperBound]
            }
            rest = rest[close.upperBound...]
        }
        return out + rest
    }

    /// Matches `value` against `pattern`, each `{{name}}` standing for any (non-empty) text; the captured values by
    /// base name, or nil when the literal parts differ.
    public static func match(_ pattern: String, _ value: String) -> [String: String]? {
        var parts: [(literal: String, name: String?)] = []
        var rest = pattern[...]
        while let open = rest.range(of: "{{"), let close = rest.range(of: "}}", range: open.upperBound..<rest.endIndex) {
            parts.append((String(rest[..<open.lowerBound]), String(rest[open.upperBound..<close.lowerBound])))
            rest = rest[close.upperBound...]
        }
        parts.append((String(rest), nil))
        var captured: [String: String] = [:]
        var remaining = value[...]
        for (index, part) in parts.enumerated() {
            guard remaining.hasPrefix(part.literal) else { return nil }
            remaining = remaining.dropFirst(part.literal.count)
            guard let name = part.name else { continue }
            let next = parts[index + 1].literal
            let end: Substring.Index
            if next.isEmpty {
                // The placeholder runs to the next '/' (paths) or to the end.
                end = index + 1 == parts.count - 1 ? remaining.endIndex : (remaining.firstIndex(of: "/") ?? remaining.endIndex)
            } else {
                guard let r = remaining.range(of: next) else { return nil }
                end = r.lowerBound
            }
            var text = String(remaining[..<end])
            if name.hasSuffix("|url") { text = text.removingPercentEncoding ?? text }
            captured[base(name)] = text
            remaining = remaining[end...]
        }
        return remaining.isEmpty ? captured : nil
    }

    public static func urlEncode(_ text: String) -> String {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}

/// Finds the recorded exchange a request asks for: same method, same path (placeholders match any segment text),
/// and every literal field that matters equal; among several, the one with most literal fields. A small public
/// type so other lab servers (the lab internet) can answer from a capture the same way.
public struct RequestMatcher: Sendable {
    public struct Pattern: Sendable, Equatable {
        public var method: String
        public var path: String
        public var fields: [String: String]
        public init(method: String, path: String, fields: [String: String] = [:]) {
            self.method = method
            self.path = path
            self.fields = fields
        }
    }

    public var patterns: [Pattern]
    public init(_ patterns: [Pattern]) { self.patterns = patterns }

    /// The index of the best pattern for the request, nil when none matches.
    public func match(method: String, path: String, fields: [String: String]) -> Int? {
        var best: (index: Int, score: Int)?
        for (index, pattern) in patterns.enumerated() {
            guard pattern.method.uppercased() == method.uppercased(), Template.match(pattern.path, path) != nil else { continue }
            var score = 0
            var fits = true
            for (name, expected) in pattern.fields where Template.names(in: expected).isEmpty {
                if fields[name] == expected { score += 1 } else { fits = false }
            }
            guard fits else { continue }
            if let current = best, current.score >= score { continue }
            best = (index, score)
        }
        return best?.index
    }
}
