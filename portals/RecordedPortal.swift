import Foundation
import Synchronization

/// A real venue's portal brought in from a browser's HAR capture (`hotspot-lab portal import`, docs/FIELD-FAILURES.md):
/// serves the recorded answers, with fresh per-station tokens, cookies and session ids and the station's own MAC and
/// IP where the venue put the client's; the recorded sign-in opens the gate only when the station's own values and
/// the portal's `username`/`password` settings come back; otherwise the recorded refusal is served.
public struct RecordedPortal: PortalKind {
    public static let definition = PortalKindDefinition(
        name: "recorded", login: true,
        settings: [
            .required("definition", .nonEmptyText, "the recorded portal's definition (JSON from `hotspot-lab portal import`); a relative path is from the topology's folder"),
            .optional("username", .text, default: "", "the credential the capture's first credential field must carry"),
            .optional("password", .text, default: "", "the credential the capture's second credential field must carry"),
        ],
        summary: "a real venue's portal replayed from a HAR capture")

    public let recorded: RecordedPortalDefinition
    let settings: [String: String]
    let matcher: RequestMatcher
    let state = StationValues()

    public init(settings: [String: String]) throws {
        let values = try Self.definition.validate(settings)
        recorded = try RecordedPortalDefinition.load(path: try values.required("definition"))
        self.settings = values.values
        matcher = Self.matcher(recorded)
    }

    /// For tests: a definition already in memory.
    public init(recorded: RecordedPortalDefinition, settings: [String: String] = [:]) {
        self.recorded = recorded
        self.settings = settings
        matcher = Self.matcher(recorded)
    }

    /// One pattern per exchange (same indices). Refusals are served for a failed sign-in and the probe's answer for
    /// intercepted requests: neither is matched directly.
    static func matcher(_ recorded: RecordedPortalDefinition) -> RequestMatcher {
        RequestMatcher(recorded.exchanges.map { exchange in
            exchange.role == "refusal" || exchange.role == "probe"
                ? RequestMatcher.Pattern(method: "-", path: "-")
                : RequestMatcher.Pattern(method: exchange.request.method, path: exchange.request.path,
                                         fields: exchange.request.fields.filter { !$0.value.contains("{{") })
        })
    }

    public func respond(to request: PortalRequest, context: any PortalContext) async -> PortalResponse {
        let mac = await context.clientMAC(clientIP: request.clientIP)
        if request.intercepted, let probe = recorded.probe {
            return render(probe.response, request: request, context: context, mac: mac)
        }
        var fields = request.query
        for (name, value) in request.form { fields[name] = value }
        guard let index = matcher.match(method: request.method, path: request.path, fields: fields) else {
            if request.path == "/logoff", let response = await handleLogoff(request, context: context) { return response }
            logLine("recorded portal: \(request.method) \(request.path) from \(request.clientIP): not in the capture (404)")
            return .html(404, "Not in the capture", "<p>\(Markup.escape(request.method)) \(Markup.escape(request.path)) is not in the capture \(Markup.escape(recorded.source)).</p>")
        }
        let exchange = recorded.exchanges[index]
        guard exchange.role == "sign-in" else { return render(exchange.response, request: request, context: context, mac: mac) }
        if let problem = signInProblem(exchange.request, request: request, fields: fields, mac: mac) {
            logLine("recorded portal: sign-in from \(request.clientIP) refused: \(problem)")
            if let refusal = recorded.refusal { return render(refusal.response, request: request, context: context, mac: mac) }
            return .html(403, "Sign-in refused", "<p>\(Markup.escape(problem))</p>")
        }
        do { try await context.login(clientIP: request.clientIP) } catch { return loginFailed(error) }
        let response = render(exchange.response, request: request, context: context, mac: mac)
        state.rotate(clientIP: request.clientIP)
        return response
    }

    /// Nil when the sign-in carries this station's values and the configured credentials; else what is wrong.
    func signInProblem(_ pattern: RecordedRequest, request: PortalRequest, fields: [String: String], mac: String?) -> String? {
        var expected: [(what: String, pattern: String, found: String?)] = pattern.fields.sorted { $0.key < $1.key }.map {
            ("field `\($0.key)`", $0.value, fields[$0.key])
        }
        expected.append(("path", pattern.path, request.path))
        if recorded.requireCookies {
            expected += pattern.cookies.sorted { $0.key < $1.key }.map { ("cookie `\($0.key)`", $0.value, request.cookies[$0.key]) }
        } else {
            // Checked when the client sends it back (the reference helper keeps no cookies).
            expected += pattern.cookies.sorted { $0.key < $1.key }.compactMap { c in
                request.cookies[c.key].map { ("cookie `\(c.key)`", c.value, $0) }
            }
        }
        for (what, pattern, found) in expected {
            guard let found else { return "\(what) missing" }
            guard let captured = Template.match(pattern, found) else { return "\(what) is `\(found)`, not the recorded value" }
            for (name, value) in captured {
                guard name != "portal", let own = self.value(name, clientIP: request.clientIP, mac: mac, portalURL: "") else { continue }
                if name.hasPrefix("setting:") {
                    if value != own { return "\(what): wrong \(name.dropFirst(8))" }
                } else if normalized(name, value) != normalized(name, own) {
                    return "\(what) carries `\(value)`, not this station's \(name) (`\(own)`)"
                }
            }
        }
        return nil
    }

    func normalized(_ name: String, _ value: String) -> String {
        recorded.variables.first { $0.name == name }?.kind == "mac"
            ? value.lowercased().replacingOccurrences(of: "-", with: ":") : value
    }

    func value(_ name: String, clientIP: String, mac: String?, portalURL: String) -> String? {
        if name == "portal" { return portalURL.hasSuffix("/") ? String(portalURL.dropLast()) : portalURL }
        if name.hasPrefix("setting:") { return settings[String(name.dropFirst(8))] ?? "" }
        guard let variable = recorded.variables.first(where: { $0.name == name }) else { return nil }
        switch variable.kind {
        case "ip": return clientIP
        case "mac": return Self.style(mac ?? "00:00:00:00:00:00", like: variable.alphabet)
        default: return state.value(variable, clientIP: clientIP)
        }
    }

    /// A MAC written as the capture wrote it (`AA-BB-...` or `aa:bb:...`).
    static func style(_ mac: String, like example: String) -> String {
        var out = mac.lowercased()
        if example.contains("-") { out = out.replacingOccurrences(of: ":", with: "-") }
        if example.contains(where: { $0.isUppercase }) { out = out.uppercased() }
        return out
    }

    func render(_ response: RecordedResponse, request: PortalRequest, context: any PortalContext, mac: String?) -> PortalResponse {
        let fill = { (text: String) in
            Template.render(text) { self.value($0, clientIP: request.clientIP, mac: mac, portalURL: context.portalURL) }
        }
        var headers: [String: String] = [:]
        for (name, value) in response.headers { headers[name] = fill(value) }
        return PortalResponse(status: response.status, headers: headers, body: fill(response.body))
    }
}

/// Each station's fresh tokens, cookies and session ids (made at first use, new after each sign-in).
final class StationValues: Sendable {
    private let values = Synchronization.Mutex<[String: [String: String]]>([:])

    func value(_ variable: RecordedVariable, clientIP: String) -> String {
        values.withLock { values in
            if let known = values[clientIP]?[variable.name] { return known }
            let fresh = Self.fresh(variable)
            values[clientIP, default: [:]][variable.name] = fresh
            return fresh
        }
    }

    /// After a sign-in: tokens and session ids are new for the next visit (cookies too).
    func rotate(clientIP: String) {
        values.withLock { _ = $0.removeValue(forKey: clientIP) }
    }

    static func fresh(_ variable: RecordedVariable) -> String {
        let alphabet: [Character]
        switch variable.alphabet {
        case "hex": alphabet = Array("0123456789abcdef")
        case "HEX": alphabet = Array("0123456789ABCDEF")
        case "digits": alphabet = Array("0123456789")
        default: alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        }
        var generator = SystemRandomNumberGenerator()
        return String((0..<max(variable.length, 8)).map { _ in alphabet[Int(generator.next(upperBound: UInt(alphabet.count)))] })
    }
}
