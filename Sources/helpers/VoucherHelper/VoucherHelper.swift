// hotspot-helper-voucher: a reference Hotspot Helper that needs the user, and a template for vendors (copy
// this folder: this file, the logic, and main.swift, the entry point; its provider pair in Sources/providers
// shares this file; what the reference helpers share is in Sources/helpers/Support).
//
// It claims captive networks whose portal asks for a voucher code (a hotel room, a café receipt). It cannot
// sign in alone: authenticate posts a notification ("Sign in to <ssid>") and answers uiRequired; when the
// user opens the helper, hotspotd sends presentUI (no deadline), the helper waits for what the user types
// (the lab writes it to `$HOTSPOT_HELPER_UI/input`), posts the voucher and checks the probe.
//
//   hotspot-helper-voucher [--network SSID[:PASSWORD]]... [--name NAME] [--identifier ID] [--socket PATH]
//                          [--http-timeout SECONDS]
//
// Every command and decision is one line on stderr. All traffic goes through `command.http` (marked so it
// passes while the station suppresses IP; redirects not followed; bounded by the command's deadline).
import Foundation
import HotspotHelper
import ReferenceHelperSupport
import Synchronization

// MARK: - Options

public struct VoucherHelperOptions: ReferenceHelperOptions {
    public var displayName = "Voucher"
    public var identifier = "com.hotspotlab.voucher"
    public var socketPath: String?
    /// Networks to claim in filterScanList: SSID -> password (nil for an open network).
    public var networks: [(ssid: String, password: String?)] = []
    public var httpTimeout: Duration = .seconds(8)
    /// Where the user's typing arrives (the file `input` in it); default `$HOTSPOT_HELPER_UI`.
    public var uiDirectory: String? = HotspotHelperEnvironment.uiDirectory

    public static let usage = """
        usage: hotspot-helper-voucher [--network SSID[:PASSWORD]]... [--name NAME] [--identifier ID] [--socket PATH]
                                      [--http-timeout SECONDS] [--ui DIRECTORY]
        """

    public init() {}

    /// `--ui`; the flags all reference helpers take are parsed by `ReferenceHelperOptions.parse`.
    public mutating func parseOwn(_ flag: String, _ value: String) throws(HelperUsageError) -> Bool {
        guard flag == "--ui" else { return false }
        uiDirectory = value
        return true
    }
}

public func log(_ line: String) {
    FileHandle.standardError.write(Data("hotspot-helper-voucher: \(line)\n".utf8))
}

// MARK: - Reading the portal page (pure: unit-tested on the pages the lab's portal kinds render)

// The forms of a page are read by the shared parser (`HTMLScan` in ReferenceHelperSupport, which keeps each field's
// `placeholder`); what they are is decided here (`VoucherPage`).

/// A voucher form: one code to type (no password), where to send it.
struct VoucherPage: Equatable, Sendable {
    var form: HTMLForm
    var codeField: String

    static let words = ["voucher", "code", "access", "ticket", "pin", "coupon"]

    /// Recognizes a voucher page: a form with exactly one field to type, not a password, whose name,
    /// placeholder or label speaks of a voucher/code; nil for anything else.
    static func recognize(_ html: String) -> VoucherPage? {
        for form in HTMLScan.forms(in: html) {
            let typed = form.fields.filter { ["text", "number", "tel", "password", ""].contains($0.type) }
            guard typed.count == 1, let field = typed.first, field.type != "password", !field.name.isEmpty else { continue }
            let wording = (field.name + " " + field.placeholder + " " + form.text + " " + form.action).lowercased()
            if words.contains(where: { wording.contains($0) }) { return VoucherPage(form: form, codeField: field.name) }
        }
        return nil
    }

    /// The form's fields with the code filled in (hidden fields kept, placeholders dropped).
    func submission(code: String) -> [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        for field in form.fields where !field.name.isEmpty {
            if field.name == codeField {
                out.append((field.name, code))
            } else if field.type == "hidden" {
                out.append((field.name, field.value))
            }
        }
        return out
    }
}

// MARK: - The probe and the portal

// The probe (`ProbeResult`), the portal page it leads to (`PortalDiscovery`), `HTTPSend` and `Decision` are in
// ReferenceHelperSupport.

enum Portal {
    typealias Discovery = PortalDiscovery<VoucherPage>

    /// Probes; when redirected, reads the portal page (at most 4 redirects) and looks for a voucher form.
    static func discover(_ http: HTTPSend) throws(HotspotTrafficError) -> Discovery {
        try Discovery.discover(http, recognize: VoucherPage.recognize, notAPage: "not a voucher page", notOnPage: "asks for no voucher")
    }
}

// MARK: - Decisions

public final class VoucherLogic: @unchecked Sendable {  // @unchecked: `options` (not declared Sendable) is set once; pages and sessions are in a Mutex
    public let options: VoucherHelperOptions
    /// Per SSID: the voucher page found by authenticate (for presentUI), then the portal signed in to (for logoff).
    private struct Known {
        var pages: [String: (page: VoucherPage, url: HotspotURL)] = [:]
        var sessions: [String: HotspotURL] = [:]
    }
    private let state = Synchronization.Mutex(Known())

    /// The portals' cookies, for the helper's life: the cookie the voucher page sets at authenticate goes back on
    /// presentUI's POST.
    let cookies = HotspotCookieJar()

    public init(options: VoucherHelperOptions) { self.options = options }

    public func filter(_ networks: [HotspotNetwork]) -> (claimed: [HotspotNetwork], reason: String) {
        options.claimConfigured(networks)
    }

    func evaluate(_ http: HTTPSend) -> Decision {
        Portal.Discovery.evaluation({ try Portal.discover(http) }, reason: { _, url in "voucher portal at \(url)" })
    }

    /// Finds the voucher page; the user must type the code: notify, then uiRequired.
    func authenticate(_ http: HTTPSend, ssid: String) -> Decision {
        withCookies(cookies, http) { http in authenticateKeepingCookies(http, ssid: ssid) }
    }

    private func authenticateKeepingCookies(_ http: HTTPSend, ssid: String) -> Decision {
        Portal.Discovery.authentication({ try Portal.discover(http) }, unsupported: "no voucher to enter") { page, url in
            state.withLock { $0.pages[ssid] = (page, url) }
            let posted = HotspotHelper.postNotification(title: "Sign in to \(ssid)", body: "Tap to enter your voucher")
            return Decision(result: .uiRequired, reason: "voucher portal at \(url): the user must type the code (notification posted: \(posted))")
        }
    }

    /// presentUI: waits for the user's voucher (no deadline), posts it, checks the probe. Nil when the command
    /// was withdrawn while waiting (nothing to answer).
    func presentUI(_ http: HTTPSend, ssid: String, cancelled: () -> Bool) -> Decision? {
        withCookies(cookies, http) { http in presentUIKeepingCookies(http, ssid: ssid, cancelled: cancelled) }
    }

    private func presentUIKeepingCookies(_ http: HTTPSend, ssid: String, cancelled: () -> Bool) -> Decision? {
        guard let uiDirectory = options.uiDirectory else {
            return Decision(result: .failure, reason: "no $\(HotspotHelperEnvironment.uiDirectoryVariable): nowhere to ask the user")
        }
        var known = state.withLock { $0.pages[ssid] }
        if known == nil {
            // Not seen by this process (it restarted): look again.
            do {
                switch try Portal.discover(http) {
                case .online: return Decision(result: .success, reason: "the probe already succeeds")
                case .unknown(let why): return Decision(result: .unsupportedNetwork, reason: "\(why): no voucher to enter")
                case .page(let page, let url): known = (page, url)
                }
            } catch {
                return Decision(result: .temporaryFailure, reason: "portal unreachable: \(error)")
            }
        }
        guard let (page, url) = known else { return nil }
        log("presentUI \(ssid): waiting for the voucher in \(uiDirectory)/\(HotspotHelperEnvironment.uiInputFile)")
        guard let typed = HotspotHelperEnvironment.waitForUserInput(directory: uiDirectory, stop: cancelled) else { return nil }
        let code = typed.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !code.isEmpty else { return Decision(result: .failure, reason: "the user entered no voucher") }
        guard let action = url.resolving(page.form.action) else {
            return Decision(result: .unsupportedNetwork, reason: "the voucher form's action \(page.form.action) is not plain HTTP")
        }
        do {
            let fields = page.submission(code: code)
            let response = page.form.method == "post" ? try http(.postForm(action.description, fields: fields))
                : try http(.get(action.description + "?" + HotspotHTTPRequest.formEncode(fields)))
            switch response.status {
            case 200...399: break
            case 400...499: return Decision(result: .failure, reason: "voucher \(code) refused (\(response.status))")
            default: return Decision(result: .temporaryFailure, reason: "voucher: the portal answered \(response.status)")
            }
            guard case .online = try ProbeResult.probe(http) else {
                return Decision(result: .temporaryFailure, reason: "the portal accepted the voucher, but the probe is still captive")
            }
            state.withLock {
                $0.pages[ssid] = nil
                $0.sessions[ssid] = url
            }
            return Decision(result: .success, reason: "voucher accepted at \(url.origin); the probe succeeds")
        } catch {
            return Decision(result: .temporaryFailure, reason: "posting the voucher failed: \(error)")
        }
    }

    func maintain(_ http: HTTPSend) -> Decision {
        ProbeResult.maintenance(http, isPortal: { VoucherPage.recognize($0) != nil }, portal: "the voucher page")
    }

    func logoff(_ http: HTTPSend, ssid: String) -> Decision {
        withCookies(cookies, http) { http in logoffKeepingCookies(http, ssid: ssid) }
    }

    private func logoffKeepingCookies(_ http: HTTPSend, ssid: String) -> Decision {
        guard let portal = state.withLock({ $0.sessions[ssid] }), let target = portal.resolving("/logoff") else {
            return Decision(result: .failure, reason: "no session of this helper on \(ssid) to log off")
        }
        return Decision.logoff(at: target, http) { state.withLock { $0.sessions[ssid] = nil } }
    }

    /// Runs one command and answers it (the legacy helper; the provider pair returns `response(to:)` instead).
    public func handle(_ command: HotspotHelperCommand) {
        HelperCommandRun.deliver(response(to: command), to: command, log: log)
    }

    /// Runs one command and returns its answer (nil: withdrawn while waiting for the user).
    public func response(to command: HotspotHelperCommand) -> HotspotHelperResponse? {
        let run = HelperCommandRun(command, httpTimeout: options.httpTimeout, log: log)
        switch command.commandType {
        case .filterScanList:
            return run.claim(filter)
        case .evaluate:
            return run.evaluate { evaluate(run.http) }
        case .presentUI:
            guard let d = presentUI(run.http, ssid: run.ssid, cancelled: { command.isCancelled }) else {
                log("\(run.label): withdrawn by hotspotd while waiting for the user: not answering")
                return nil
            }
            return run.answer(d)
        case .authenticate, .maintain, .logoff:
            let ssid = run.ssid
            return run.answer(command.commandType == .authenticate ? authenticate(run.http, ssid: ssid)
                : command.commandType == .maintain ? maintain(run.http) : logoff(run.http, ssid: ssid))
        default:
            return run.notRecognized()
        }
    }
}
