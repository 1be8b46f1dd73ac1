// hotspot-helper-portal: a reference Hotspot Helper, and a template for vendors (copy this folder: this file, the logic,
// and main.swift, the entry point; the portal provider pair in Sources/providers shares this file; what the reference
// helpers share is in Sources/helpers/Support).
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
import ReferenceHelperSupport
import Synchronization

// MARK: - Options

public struct PortalHelperOptions: ReferenceHelperOptions {
    public var displayName = "Portal Login"
    public var identifier = "com.hotspotlab.portal"
    public var socketPath: String?
    public var account: (username: String, password: String)?
    /// The address to type on a portal that asks for an e-mail address only (`email` kind).
    public var email: String?
    /// Networks to claim in filterScanList: SSID -> password (nil for an open network).
    public var networks: [(ssid: String, password: String?)] = []
    public var httpTimeout: Duration = .seconds(8)

    public static let usage = """
        usage: hotspot-helper-portal [--account USER:PASSWORD] [--email ADDRESS] [--network SSID[:PASSWORD]]... [--name NAME]
                                     [--identifier ID] [--socket PATH] [--http-timeout SECONDS]
        """

    public init() {}

    /// `--account` and `--email`; the flags all reference helpers take are parsed by `ReferenceHelperOptions.parse`.
    public mutating func parseOwn(_ flag: String, _ value: String) throws(HelperUsageError) -> Bool {
        switch flag {
        case "--account":
            guard let colon = value.firstIndex(of: ":"), colon != value.startIndex else {
                throw HelperUsageError(description: "--account: expected USER:PASSWORD, found `\(value)`")
            }
            account = (String(value[..<colon]), String(value[value.index(after: colon)...]))
        case "--email":
            guard let at = value.firstIndex(of: "@"), at != value.startIndex, value.index(after: at) != value.endIndex,
                  !value.contains(" ") else {
                throw HelperUsageError(description: "--email: expected an address such as someone@example.com, found `\(value)`")
            }
            email = value
        default: return false
        }
        return true
    }
}

/// One line on stderr per command and per decision.
public func log(_ line: String) {
    FileHandle.standardError.write(Data("hotspot-helper-portal: \(line)\n".utf8))
}

// MARK: - Reading portal pages (pure: unit-tested on the pages the lab's portal kinds render)

// The forms of a page are read by the shared parser (`HTMLScan` in ReferenceHelperSupport); what they are is
// decided here (`PortalPage`).

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

// The probe (`ProbeResult`), the portal page it leads to (`PortalDiscovery`), `HTTPSend` and `Decision` are in
// ReferenceHelperSupport.

enum Portal {
    /// What signing in would start from.
    typealias Discovery = PortalDiscovery<PortalPage>

    /// Probes; when redirected, reads the portal page (following at most 3 more redirects, as a browser
    /// would) and recognizes it (WISPr puts its XML in the redirect itself).
    static func discover(_ http: HTTPSend) throws(HotspotTrafficError) -> Discovery {
        try Discovery.discover(http, readsRedirect: true, recognize: PortalPage.recognize, notAPage: "not a known portal page",
                               notOnPage: "is not a form-login, click-through or WISPr page")
    }
}

// MARK: - Decisions (what to answer, and why)

/// What the helper remembers about a network it signed in to (for logoff).
struct Session {
    var portal: HotspotURL
    var logoffURL: HotspotURL?
}

public final class PortalLogic: @unchecked Sendable {  // @unchecked: `options` (not declared Sendable) is set once; the sessions are in a Mutex
    public let options: PortalHelperOptions
    private let sessions = Synchronization.Mutex<[String: Session]>([:])
    /// The portals' cookies (a session cookie set on the sign-in page goes back on the POST).
    let cookies = HotspotCookieJar()

    public init(options: PortalHelperOptions) { self.options = options }

    func session(for ssid: String) -> Session? { sessions.withLock { $0[ssid] } }
    func remember(_ session: Session?, for ssid: String) { sessions.withLock { $0[ssid] = session } }

    /// filterScanList: only the configured networks; a secure one only with its password.
    public func filter(_ networks: [HotspotNetwork]) -> (claimed: [HotspotNetwork], reason: String) {
        options.claimConfigured(networks, listingSkipped: true)
    }

    func evaluate(_ http: HTTPSend, lease: [String: String]) -> Decision {
        if let api = HotspotHelperEnvironment.captivePortalAPI(lease: lease) {
            return Decision(result: .success, confidence: HotspotHelperConfidence.none,
                            reason: "the network announces an RFC 8908 API (\(api)): left to an API-aware helper")
        }
        return Portal.Discovery.evaluation(
            { try Portal.discover(http) },
            reason: { page, url in "\(page.kind) portal at \(url)" },
            declines: { page, url in
                guard case .email = page, options.email == nil else { return nil }
                return "e-mail portal at \(url) and no --email configured"
            })
    }

    func authenticate(_ http: HTTPSend, ssid: String) -> Decision {
        withCookies(cookies, http) { http in authenticateKeepingCookies(http, ssid: ssid) }
    }

    private func authenticateKeepingCookies(_ http: HTTPSend, ssid: String) -> Decision {
        Portal.Discovery.authentication({ try Portal.discover(http) }, unsupported: "not a portal this helper signs in to") { page, url in
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
        if case .online = try ProbeResult.probe(http) {
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
        ProbeResult.maintenance(http, isPortal: { PortalPage.recognize($0) != nil }, portal: "a portal page")
    }

    func logoff(_ http: HTTPSend, ssid: String) -> Decision {
        withCookies(cookies, http) { http in logoffKeepingCookies(http, ssid: ssid) }
    }

    private func logoffKeepingCookies(_ http: HTTPSend, ssid: String) -> Decision {
        guard let session = session(for: ssid) else {
            return Decision(result: .failure, reason: "no session of this helper on \(ssid) to log off")
        }
        let target = session.logoffURL ?? session.portal.resolving("/logoff")!
        return Decision.logoff(at: target, http, refusal: { response in
            // A WISPr gateway answers with a ResponseCode (150: logged off), whatever the status.
            if let xml = WISPr.document(in: response.text), let code = WISPr.value("ResponseCode", in: xml) {
                return code == "150" ? nil : "WISPr logoff at \(target) answered ResponseCode \(code)"
            }
            return (200...299).contains(response.status) ? nil : "logoff at \(target) answered \(response.status)"
        }, forget: { remember(nil, for: ssid) })
    }

    /// Runs one command and answers it (the legacy helper; the provider pair returns `response(to:)` instead).
    public func handle(_ command: HotspotHelperCommand) {
        HelperCommandRun.deliver(response(to: command), to: command, log: log)
    }

    /// Runs one command and returns its answer.
    public func response(to command: HotspotHelperCommand) -> HotspotHelperResponse {
        let run = HelperCommandRun(command, httpTimeout: options.httpTimeout, log: log)
        switch command.commandType {
        case .filterScanList:
            return run.claim(filter)
        case .evaluate:
            return run.evaluate(logsMissingNetwork: true) { evaluate(run.http, lease: HotspotHelperEnvironment.dhcpLease()) }
        case .authenticate, .maintain, .logoff:
            let ssid = run.ssid
            return run.answer(command.commandType == .authenticate ? authenticate(run.http, ssid: ssid)
                : command.commandType == .maintain ? maintain(run.http) : logoff(run.http, ssid: ssid))
        case .presentUI:
            return run.nothingToShow("this helper needs no user input")
        default:
            return run.notRecognized()
        }
    }
}
