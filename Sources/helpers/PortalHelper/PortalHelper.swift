// hotspot-helper-portal: a reference Hotspot Helper, and a template for vendors (copy this folder: this file, the logic,
// and main.swift, the entry point; the portal provider pair in Sources/providers shares this file).
//
// It signs in, as a person would, to the captive portals that need nothing but an account or a click:
//   - form-login:    a page with a username/password form        -> POST the account
//   - click-through: a page with terms to accept                   -> POST the form with the box ticked
//   - WISPr 1.0:     <WISPAccessGatewayParam> XML in the redirect  -> POST UserName/Password to LoginURL
// and claims nothing else (voucher pages, RFC 8908 API networks, broken portals are left to other helpers).
//
//   hotspot-helper-portal [--account USER:PASSWORD] [--network SSID[:PASSWORD]]... [--name NAME]
//                         [--identifier ID] [--socket PATH] [--http-timeout SECONDS]
//
// Every command and every decision is one line on stderr. All traffic goes through `command.http`, which
// marks its sockets (`HotspotHelper.commandTrafficMark`) so it passes while the station suppresses IP, never
// follows redirects (the helper must see the portal's 302), and never outlives the command's deadline.
// The station's environment (docs/PROTOCOL.md, "Helper environment") gives the nameservers, the DHCP lease,
// the probe URL and the trust anchors for https:// (`HOTSPOT_CA_FILE`).
//
// A portal served over HTTPS only (the probe's 302 points to https://, plain HTTP only redirects) is signed in
// to the same way: the redirect is followed to the https:// page and the form is posted over TLS, the portal's
// certificate verified (chain and host name) by `command.http`. A certificate that does not verify is a
// temporary failure with the verify error in the reason; the helper never skips the verification.
import Foundation
import HotspotHelper

// MARK: - Options

public struct PortalHelperOptions {
    public var displayName = "Portal Login"
    public var identifier = "com.hotspotlab.portal"
    public var socketPath: String?
    public var account: (username: String, password: String)?
    /// The address to type on a portal that asks for an e-mail address only (`email` kind).
    public var email: String?
    /// Networks to claim in filterScanList: SSID -> password (nil for an open network).
    public var networks: [(ssid: String, password: String?)] = []
    public var httpTimeout: Duration = .seconds(8)

    static let usage = """
        usage: hotspot-helper-portal [--account USER:PASSWORD] [--email ADDRESS] [--network SSID[:PASSWORD]]... [--name NAME]
                                     [--identifier ID] [--socket PATH] [--http-timeout SECONDS]
        """

    public struct UsageError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Plain `--flag VALUE` / `--flag=VALUE` parsing.
    public static func parse(_ arguments: [String]) throws(UsageError) -> PortalHelperOptions {
        var options = PortalHelperOptions()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--help" || argument == "-h" { throw UsageError(description: usage) }
            guard argument.hasPrefix("--") else { throw UsageError(description: "unexpected argument `\(argument)`\n\(usage)") }
            var flag = argument
            var value: String?
            if let eq = argument.firstIndex(of: "=") {
                flag = String(argument[..<eq])
                value = String(argument[argument.index(after: eq)...])
            } else {
                value = rest.popFirst()
            }
            guard let value else { throw UsageError(description: "\(flag) needs a value\n\(usage)") }
            switch flag {
            case "--account":
                guard let colon = value.firstIndex(of: ":"), colon != value.startIndex else {
                    throw UsageError(description: "--account: expected USER:PASSWORD, found `\(value)`")
                }
                options.account = (String(value[..<colon]), String(value[value.index(after: colon)...]))
            case "--email":
                guard let at = value.firstIndex(of: "@"), at != value.startIndex, value.index(after: at) != value.endIndex,
                      !value.contains(" ") else {
                    throw UsageError(description: "--email: expected an address such as someone@example.com, found `\(value)`")
                }
                options.email = value
            case "--network":
                // SSID[:PASSWORD]: the first colon separates (an SSID containing a colon cannot be configured).
                let parts = value.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard !parts[0].isEmpty, parts[0].utf8.count <= 32 else {
                    throw UsageError(description: "--network: expected SSID[:PASSWORD] with an SSID of 1 to 32 bytes, found `\(value)`")
                }
                options.networks.append((parts[0], parts.count > 1 ? parts[1] : nil))
            case "--name":
                guard !value.isEmpty, value.count <= 15 else { throw UsageError(description: "--name: 1 to 15 characters, found `\(value)`") }
                options.displayName = value
            case "--identifier": options.identifier = value
            case "--socket": options.socketPath = value
            case "--http-timeout":
                guard let seconds = Double(value), seconds > 0, seconds <= 300 else {
                    throw UsageError(description: "--http-timeout: seconds, more than 0 and at most 300, found `\(value)`")
                }
                options.httpTimeout = .milliseconds(Int64(seconds * 1000))
            default:
                throw UsageError(description: "unknown option \(flag)\n\(usage)")
            }
        }
        return options
    }
}

/// One line on stderr per command and per decision.
public func log(_ line: String) {
    FileHandle.standardError.write(Data("hotspot-helper-portal: \(line)\n".utf8))
}

// MARK: - Reading portal pages (pure: unit-tested on the pages the lab's portal kinds render)

/// An `<input>` or a named `<button>` of a form.
struct FormField: Equatable {
    var name: String
    var type: String
    var value: String
}

/// A `<form>`: where it goes, how, and its fields; `text` is its visible text (tags removed).
struct HTMLForm: Equatable {
    var action: String
    var method: String
    var fields: [FormField]
    var text: String

    /// Fields a person would have to type into.
    var typedFields: [FormField] { fields.filter { ["text", "email", "tel", "number", "password", ""].contains($0.type) } }
    var passwordField: FormField? { fields.first { $0.type == "password" } }

    /// What the browser submits without typing: hidden fields, ticked boxes, the first named submit button.
    var defaultSubmission: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        var buttonTaken = false
        for field in fields where !field.name.isEmpty {
            switch field.type {
            case "hidden": out.append((field.name, field.value))
            case "checkbox": out.append((field.name, field.value.isEmpty ? "on" : field.value))
            case "submit" where !buttonTaken:
                buttonTaken = true
                out.append((field.name, field.value))
            default: break
            }
        }
        return out
    }
}

enum HTMLScan {
    /// Every form of the page, in order.
    static func forms(in html: String) -> [HTMLForm] {
        var forms: [HTMLForm] = []
        var rest = html[...]
        while let open = rest.range(of: "<form", options: .caseInsensitive) {
            guard let tagEnd = rest[open.upperBound...].firstIndex(of: ">") else { break }
            let attributes = attributes(of: rest[open.upperBound..<tagEnd])
            let bodyStart = rest.index(after: tagEnd)
            let close = rest[bodyStart...].range(of: "</form", options: .caseInsensitive)
            let body = rest[bodyStart..<(close?.lowerBound ?? rest.endIndex)]
            forms.append(HTMLForm(action: attributes["action"] ?? "", method: (attributes["method"] ?? "get").lowercased(),
                                  fields: fields(in: body), text: visibleText(body)))
            rest = rest[(close?.upperBound ?? rest.endIndex)...]
        }
        return forms
    }

    /// `<input>` tags and named `<button>`s, in order.
    static func fields(in body: Substring) -> [FormField] {
        var out: [FormField] = []
        var rest = body
        while let lt = rest.firstIndex(of: "<") {
            let after = rest[rest.index(after: lt)...]
            guard let gt = after.firstIndex(of: ">") else { break }
            let tag = after[..<gt]
            let name = tag.prefix { $0.isLetter }.lowercased()
            if name == "input" || name == "button" {
                let a = attributes(of: tag.dropFirst(name.count))
                let type = (a["type"] ?? (name == "button" ? "submit" : "text")).lowercased()
                out.append(FormField(name: a["name"] ?? "", type: type, value: a["value"] ?? ""))
            }
            rest = after[after.index(after: gt)...]
        }
        return out
    }

    /// `name="v"`, `name='v'`, `name=v` and bare `name`; names lowercased, entities decoded.
    static func attributes(of text: Substring) -> [String: String] {
        var out: [String: String] = [:]
        var i = text.startIndex
        func skipSpace() { while i < text.endIndex, text[i].isWhitespace || text[i] == "/" { i = text.index(after: i) } }
        while true {
            skipSpace()
            guard i < text.endIndex else { break }
            let nameStart = i
            while i < text.endIndex, !text[i].isWhitespace, text[i] != "=", text[i] != ">" { i = text.index(after: i) }
            let name = text[nameStart..<i].lowercased()
            skipSpace()
            var value = ""
            if i < text.endIndex, text[i] == "=" {
                i = text.index(after: i)
                while i < text.endIndex, text[i].isWhitespace { i = text.index(after: i) }
                if i < text.endIndex, text[i] == "\"" || text[i] == "'" {
                    let quote = text[i]
                    let start = text.index(after: i)
                    let end = text[start...].firstIndex(of: quote) ?? text.endIndex
                    value = String(text[start..<end])
                    i = end < text.endIndex ? text.index(after: end) : end
                } else {
                    let start = i
                    while i < text.endIndex, !text[i].isWhitespace { i = text.index(after: i) }
                    value = String(text[start..<i])
                }
            }
            if !name.isEmpty, out[name] == nil { out[name] = decodeEntities(value) }
            if i == nameStart { i = text.index(after: i) }
        }
        return out
    }

    static func decodeEntities(_ s: String) -> String {
        guard s.contains("&") else { return s }
        return s.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The text outside tags and comments, white space collapsed.
    static func visibleText(_ html: Substring) -> String {
        var out = ""
        var rest = html
        while let lt = rest.firstIndex(of: "<") {
            out += rest[..<lt]
            let after = rest[lt...]
            if after.hasPrefix("<!--") {
                rest = after.range(of: "-->").map { after[$0.upperBound...] } ?? ""
            } else {
                rest = after.firstIndex(of: ">").map { after[after.index(after: $0)...] } ?? ""
            }
            out += " "
        }
        out += rest
        return decodeEntities(out.split(whereSeparator: \.isWhitespace).joined(separator: " "))
    }
}

/// WISPr 1.0 (the Wi-Fi Alliance's "universal access method" XML in an HTML comment).
enum WISPr {
    /// The `<WISPAccessGatewayParam>` document of a page, nil when there is none.
    static func document(in html: String) -> String? {
        guard let start = html.range(of: "<WISPAccessGatewayParam", options: .caseInsensitive),
              let end = html.range(of: "</WISPAccessGatewayParam>", options: .caseInsensitive, range: start.upperBound..<html.endIndex)
        else { return nil }
        return String(html[start.lowerBound..<end.upperBound])
    }

    /// The text of the first `<tag>...</tag>` (entities decoded).
    static func value(_ tag: String, in xml: String) -> String? {
        guard let open = xml.range(of: "<\(tag)>", options: .caseInsensitive),
              let close = xml.range(of: "</\(tag)>", options: .caseInsensitive, range: open.upperBound..<xml.endIndex)
        else { return nil }
        return HTMLScan.decodeEntities(xml[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// A portal page this helper can sign in to.
enum PortalPage: Equatable {
    /// A username/password form.
    case formLogin(HTMLForm, usernameField: String, passwordField: String)
    /// Terms to accept, nothing to type.
    case clickThrough(HTMLForm)
    /// One e-mail field to type, nothing else (`<input type="email">`).
    case email(HTMLForm, field: String)
    /// A WISPr gateway (MessageType 100 Redirect) with its LoginURL.
    case wispr(loginURL: String)

    var kind: String {
        switch self {
        case .formLogin: "form-login"
        case .clickThrough: "click-through"
        case .email: "e-mail"
        case .wispr: "WISPr"
        }
    }

    /// Recognizes the page, nil for anything this helper does not sign in to (a voucher to type, an empty
    /// page, an error page...).
    static func recognize(_ html: String) -> PortalPage? {
        if let xml = WISPr.document(in: html), let login = WISPr.value("LoginURL", in: xml), !login.isEmpty,
           WISPr.value("MessageType", in: xml) ?? "100" == "100"
        {
            return .wispr(loginURL: login)
        }
        for form in HTMLScan.forms(in: html) {
            let typed = form.typedFields
            if let password = form.passwordField {
                // A username is the first typed field that is not the password.
                guard let user = typed.first(where: { $0.type != "password" && !$0.name.isEmpty }), !password.name.isEmpty else { continue }
                return .formLogin(form, usernameField: user.name, passwordField: password.name)
            }
            if typed.count == 1, typed[0].type == "email", !typed[0].name.isEmpty {
                return .email(form, field: typed[0].name)
            }
            guard typed.isEmpty else { continue } // something to type that is not a password: not for this helper
            let wording = (form.text + " " + form.fields.map(\.name).joined(separator: " ")).lowercased()
            let speaksOfTerms = ["terms", "accept", "agree", "conditions"].contains { wording.contains($0) }
            if form.fields.contains(where: { $0.type == "checkbox" }) && speaksOfTerms {
                return .clickThrough(form)
            }
        }
        return nil
    }
}

// MARK: - The probe and the portal

/// How the logic reaches the network: `command.http` in the helper (marked, deadline-bound), a fake in tests.
typealias HTTPSend = (HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse

/// What the connectivity probe found.
enum ProbeResult {
    /// The success page: the internet is reachable.
    case online
    /// Redirected to a portal (the 302 itself; its body may carry WISPr XML).
    case redirected(HotspotHTTPResponse, to: HotspotURL)
    /// Some other answer (a portal served in place, an error page, an empty page).
    case other(HotspotHTTPResponse)
}

enum Portal {
    static func probe(_ http: HTTPSend) throws(HotspotTrafficError) -> ProbeResult {
        let response = try http(.get(HotspotHelperEnvironment.probeURL))
        if response.status == 200, HotspotHelperEnvironment.isProbeSuccess(response.text) { return .online }
        if let target = response.redirectURL { return .redirected(response, to: target) }
        return .other(response)
    }

    /// What signing in would start from.
    enum Discovery {
        case online
        /// A page this helper signs in to, at `url`.
        case page(PortalPage, url: HotspotURL)
        /// Captive (or broken) in a way this helper does not handle; the reason in words.
        case unknown(String)
    }

    /// Probes; when redirected, reads the portal page (following at most 3 more redirects, as a browser
    /// would) and recognizes it.
    static func discover(_ http: HTTPSend) throws(HotspotTrafficError) -> Discovery {
        switch try probe(http) {
        case .online:
            return .online
        case .other(let response):
            if let page = PortalPage.recognize(response.text) { return .page(page, url: response.url) }
            return .unknown("the probe answered \(response.status) with \(response.body.count) bytes that are not a known portal page")
        case .redirected(let redirect, var target):
            // WISPr puts its XML in the redirect itself.
            if let page = PortalPage.recognize(redirect.text) { return .page(page, url: target) }
            for _ in 0..<4 {
                let response = try http(.get(target.description))
                if let next = response.redirectURL {
                    target = next
                    continue
                }
                guard (200...299).contains(response.status) else {
                    return .unknown("the portal page \(target) answered \(response.status)")
                }
                if let page = PortalPage.recognize(response.text) { return .page(page, url: target) }
                return .unknown("the portal page \(target) is not a form-login, click-through or WISPr page")
            }
            return .unknown("the portal redirects more than 4 times (last \(target))")
        }
    }
}

// MARK: - Decisions (what to answer, and why)

struct Decision {
    var result: HotspotHelperResult
    var confidence: HotspotHelperConfidence?
    var reason: String
}

/// What the helper remembers about a network it signed in to (for logoff).
struct Session {
    var portal: HotspotURL
    var logoffURL: HotspotURL?
}

public final class PortalLogic: @unchecked Sendable {
    public let options: PortalHelperOptions
    private let lock = NSLock()
    private var sessions: [String: Session] = [:]

    public init(options: PortalHelperOptions) { self.options = options }

    func session(for ssid: String) -> Session? { lock.withLock { sessions[ssid] } }
    func remember(_ session: Session?, for ssid: String) { lock.withLock { sessions[ssid] = session } }

    /// filterScanList: only the configured networks; a secure one only with its password.
    public func filter(_ networks: [HotspotNetwork]) -> (claimed: [HotspotNetwork], reason: String) {
        var claimed: [HotspotNetwork] = []
        var skipped: [String] = []
        for network in networks {
            guard let configured = options.networks.first(where: { $0.ssid == network.ssid }) else { continue }
            if network.isSecure {
                guard let password = configured.password else {
                    skipped.append("\(network.ssid) (secure, no password configured)")
                    continue
                }
                network.setPassword(password)
            }
            claimed.append(network)
        }
        let names = claimed.map(\.ssid).joined(separator: ", ")
        var reason = options.networks.isEmpty ? "no --network configured: claiming nothing"
            : "claiming \(claimed.count) of \(networks.count): [\(names)]"
        if !skipped.isEmpty { reason += "; skipped \(skipped.joined(separator: ", "))" }
        return (claimed, reason)
    }

    func evaluate(_ http: HTTPSend, lease: [String: String]) -> Decision {
        if let api = HotspotHelperEnvironment.captivePortalAPI(lease: lease) {
            return Decision(result: .success, confidence: HotspotHelperConfidence.none,
                            reason: "the network announces an RFC 8908 API (\(api)): left to an API-aware helper")
        }
        do {
            switch try Portal.discover(http) {
            case .online:
                return Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "the probe succeeds: not captive")
            case .page(.email, let url) where options.email == nil:
                return Decision(result: .success, confidence: HotspotHelperConfidence.none,
                                reason: "e-mail portal at \(url) and no --email configured: not mine")
            case .page(let page, let url):
                return Decision(result: .success, confidence: .high, reason: "\(page.kind) portal at \(url)")
            case .unknown(let why):
                return Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "\(why): not mine")
            }
        } catch {
            return Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "no answer I can use (\(error)): not mine")
        }
    }

    func authenticate(_ http: HTTPSend, ssid: String) -> Decision {
        let discovery: Portal.Discovery
        do { discovery = try Portal.discover(http) } catch {
            return Decision(result: .temporaryFailure, reason: "portal unreachable: \(error)")
        }
        switch discovery {
        case .online:
            return Decision(result: .success, reason: "the probe already succeeds")
        case .unknown(let why):
            return Decision(result: .unsupportedNetwork, reason: "\(why): not a portal this helper signs in to")
        case .page(let page, let url):
            do {
                return try signIn(page, at: url, http, ssid: ssid)
            } catch {
                return Decision(result: .temporaryFailure, reason: "\(page.kind) sign-in at \(url) failed: \(error)")
            }
        }
    }

    private func signIn(_ page: PortalPage, at url: HotspotURL, _ http: HTTPSend, ssid: String) throws(HotspotTrafficError) -> Decision {
        var logoffURL: HotspotURL?
        switch page {
        case .formLogin(let form, let userField, let passwordField):
            guard let account = options.account else {
                return Decision(result: .failure, reason: "form-login portal at \(url) but no --account configured")
            }
            let fields = form.defaultSubmission + [(userField, account.username), (passwordField, account.password)]
            let response = try submit(form, fields: fields, page: url, http)
            if let refused = judge(response, what: "form-login as \(account.username)") { return refused }
        case .clickThrough(let form):
            let response = try submit(form, fields: form.defaultSubmission, page: url, http)
            if let refused = judge(response, what: "accepting the terms") { return refused }
        case .email(let form, let field):
            guard let email = options.email else {
                return Decision(result: .failure, reason: "e-mail portal at \(url) but no --email configured")
            }
            let response = try submit(form, fields: form.defaultSubmission + [(field, email)], page: url, http)
            if let refused = judge(response, what: "signing in as \(email)") { return refused }
        case .wispr(let loginURL):
            guard let account = options.account else {
                return Decision(result: .failure, reason: "WISPr gateway at \(url) but no --account configured")
            }
            guard let login = url.resolving(loginURL) else {
                return Decision(result: .unsupportedNetwork, reason: "WISPr LoginURL \(loginURL) is not an http:// or https:// URL")
            }
            let response = try http(.postForm(login.description, fields: [
                ("UserName", account.username), ("Password", account.password), ("button", "Login"),
                ("FNAME", "0"), ("OriginatingServer", HotspotHelperEnvironment.probeURL),
            ]))
            let xml = WISPr.document(in: response.text) ?? ""
            let code = WISPr.value("ResponseCode", in: xml)
            switch code {
            case "50":
                logoffURL = WISPr.value("LogoffURL", in: xml).flatMap { url.resolving($0) }
            case "100":
                return Decision(result: .failure, reason: "WISPr login as \(account.username) rejected (ResponseCode 100)")
            case nil:
                if let refused = judge(response, what: "WISPr login") { return refused }
                return Decision(result: .temporaryFailure, reason: "WISPr login answered \(response.status) without an AuthenticationReply")
            default:
                return Decision(result: .temporaryFailure, reason: "WISPr login answered ResponseCode \(code!) (gateway error)")
            }
        }
        // Signed in: the probe must now get through.
        if case .online = try Portal.probe(http) {
            remember(Session(portal: url, logoffURL: logoffURL), for: ssid)
            return Decision(result: .success, reason: "signed in to the \(page.kind) portal at \(url.origin); the probe succeeds")
        }
        return Decision(result: .temporaryFailure, reason: "the \(page.kind) portal accepted, but the probe is still captive")
    }

    /// Submits a form as a browser would (POST body, or GET query).
    private func submit(_ form: HTMLForm, fields: [(name: String, value: String)], page: HotspotURL,
                        _ http: HTTPSend) throws(HotspotTrafficError) -> HotspotHTTPResponse
    {
        guard let action = page.resolving(form.action) else {
            throw HotspotTrafficError("submit the form of", page.description, detail: "its action \(form.action) is not an http:// or https:// URL")
        }
        if form.method == "post" { return try http(.postForm(action.description, fields: fields)) }
        let query = HotspotHTTPRequest.formEncode(fields)
        let base = action.description.split(separator: "?", maxSplits: 1).first.map(String.init) ?? action.description
        return try http(.get(base + (query.isEmpty ? "" : "?" + query)))
    }

    /// nil when the portal accepted (2xx or a redirect); else the decision: refused (4xx) or broken (5xx).
    private func judge(_ response: HotspotHTTPResponse, what: String) -> Decision? {
        switch response.status {
        case 200...399: return nil
        case 401, 403: return Decision(result: .failure, reason: "\(what) refused (\(response.status)): wrong credentials")
        case 400...499: return Decision(result: .failure, reason: "\(what) refused (\(response.status))")
        default: return Decision(result: .temporaryFailure, reason: "\(what): the portal answered \(response.status)")
        }
    }

    func maintain(_ http: HTTPSend) -> Decision {
        do {
            switch try Portal.probe(http) {
            case .online:
                return Decision(result: .success, reason: "the probe succeeds")
            case .redirected(_, let target):
                return Decision(result: .authenticationRequired, reason: "the probe is redirected to \(target): signed out")
            case .other(let response):
                if PortalPage.recognize(response.text) != nil {
                    return Decision(result: .authenticationRequired, reason: "the probe shows a portal page: signed out")
                }
                return Decision(result: .failure, reason: "the probe answered \(response.status) with something unknown")
            }
        } catch {
            return Decision(result: .failure, reason: "probe failed: \(error)")
        }
    }

    func logoff(_ http: HTTPSend, ssid: String) -> Decision {
        guard let session = session(for: ssid) else {
            return Decision(result: .failure, reason: "no session of this helper on \(ssid) to log off")
        }
        let target = session.logoffURL ?? session.portal.resolving("/logoff")!
        do {
            let response = try http(.get(target.description))
            if let xml = WISPr.document(in: response.text), let code = WISPr.value("ResponseCode", in: xml) {
                guard code == "150" else { return Decision(result: .failure, reason: "WISPr logoff at \(target) answered ResponseCode \(code)") }
            } else if !(200...299).contains(response.status) {
                return Decision(result: .failure, reason: "logoff at \(target) answered \(response.status)")
            }
            remember(nil, for: ssid)
            return Decision(result: .success, reason: "logged off at \(target)")
        } catch {
            return Decision(result: .failure, reason: "logoff at \(target) failed: \(error)")
        }
    }

    /// Runs one command and answers it (the legacy helper; the provider pair returns `response(to:)` instead).
    public func handle(_ command: HotspotHelperCommand) {
        let response = response(to: command)
        if command.isCancelled {
            log("\(command.commandType) #\(command.identifier): withdrawn by hotspotd meanwhile: not answering")
            return
        }
        if !response.deliver() { log("\(command.commandType) #\(command.identifier): the answer could not be delivered: \(HotspotHelper.lastError ?? "?")") }
    }

    /// Runs one command and returns its answer.
    public func response(to command: HotspotHelperCommand) -> HotspotHelperResponse {
        let network = command.network
        let label = "\(command.commandType) #\(command.identifier)" + (network.map { " \($0.ssid) (\($0.bssid))" } ?? "")
        let deadline = command.deadlineMilliseconds.map { " deadline \(Int($0)) ms" } ?? " no deadline"
        log("\(label): received\(deadline)")
        let http: HTTPSend = { (request) throws(HotspotTrafficError) -> HotspotHTTPResponse in
            var r = request
            if r.timeout == nil { r.timeout = self.options.httpTimeout }
            let response = try command.http(r)
            log("\(label): \(r.method) \(r.url) -> \(response.status)\(response.redirectURL.map { " Location \($0)" } ?? "")")
            return response
        }
        let response: HotspotHelperResponse
        switch command.commandType {
        case .filterScanList:
            let (claimed, reason) = filter(command.networkList ?? [])
            log("\(label): \(reason)")
            response = command.createResponse(.success)
            response.setNetworkList(claimed)
        case .evaluate:
            guard let network else {
                log("\(label): no network in the command: answering success with none")
                response = command.createResponse(.success)
                break
            }
            let d = evaluate(http, lease: HotspotHelperEnvironment.dhcpLease())
            network.setConfidence(d.confidence ?? HotspotHelperConfidence.none)
            log("\(label): confidence \(network.confidence): \(d.reason)")
            response = command.createResponse(d.result)
            response.setNetwork(network)
        case .authenticate, .maintain, .logoff:
            let ssid = network?.ssid ?? ""
            let d = command.commandType == .authenticate ? authenticate(http, ssid: ssid)
                : command.commandType == .maintain ? maintain(http) : logoff(http, ssid: ssid)
            log("\(label): \(d.result): \(d.reason)")
            response = command.createResponse(d.result)
        case .presentUI:
            log("\(label): success: nothing to show (this helper needs no user input)")
            response = command.createResponse(.success)
        default:
            log("\(label): commandNotRecognized")
            response = command.createResponse(.commandNotRecognized)
        }
        return response
    }
}

