// What the reference helpers decide alike on a captive portal: the decision type, the connectivity probe, the
// portal page it leads to (read by each helper's own recognizer), and evaluate, authenticate, maintain and logoff
// on them.
import Foundation
import HotspotHelper

/// What to answer, and why (one line in the log).
public struct Decision {
    public var result: HotspotHelperResult
    public var confidence: HotspotHelperConfidence?
    public var reason: String

    public init(result: HotspotHelperResult, confidence: HotspotHelperConfidence? = nil, reason: String) {
        (self.result, self.confidence, self.reason) = (result, confidence, reason)
    }
}

/// How the logic reaches the network: `command.http` in the helper (marked, deadline-bound), a fake in tests.
public typealias HTTPSend = (HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse

/// What the connectivity probe found.
public enum ProbeResult {
    /// The success page: the internet is reachable.
    case online
    /// Redirected to a portal (the 302 itself; its body may carry WISPr XML).
    case redirected(HotspotHTTPResponse, to: HotspotURL)
    /// Some other answer (a portal served in place, an error page, an empty page).
    case other(HotspotHTTPResponse)

    /// GETs the probe URL of the environment.
    public static func probe(_ http: HTTPSend) throws(HotspotTrafficError) -> ProbeResult {
        let response = try http(.get(HotspotHelperEnvironment.probeURL))
        if response.status == 200, HotspotHelperEnvironment.isProbeSuccess(response.text) { return .online }
        if let target = response.redirectURL { return .redirected(response, to: target) }
        return .other(response)
    }
}

/// What signing in would start from: the probe, and the portal page it leads to, read by a helper's recognizer.
public enum PortalDiscovery<Page> {
    case online
    /// A page the helper handles, at `url`.
    case page(Page, url: HotspotURL)
    /// Captive (or broken) in a way the helper does not handle; the reason in words.
    case unknown(String)

    /// Probes; when redirected, reads the portal page (following at most 3 more redirects, as a browser would) and
    /// recognizes it. `readsRedirect`: the redirect's own body is recognized first (WISPr puts its XML there).
    /// `notAPage` ends the reason for a probe answered in place with something else ("not a voucher page");
    /// `notOnPage` for a portal page that is not one ("asks for no voucher").
    public static func discover(_ http: HTTPSend, readsRedirect: Bool = false, recognize: (String) -> Page?,
                                notAPage: String, notOnPage: String) throws(HotspotTrafficError) -> PortalDiscovery
    {
        switch try ProbeResult.probe(http) {
        case .online:
            return .online
        case .other(let response):
            if let page = recognize(response.text) { return .page(page, url: response.url) }
            return .unknown("the probe answered \(response.status) with \(response.body.count) bytes that are \(notAPage)")
        case .redirected(let redirect, var target):
            if readsRedirect, let page = recognize(redirect.text) { return .page(page, url: target) }
            for _ in 0..<4 {
                let response = try http(.get(target.description))
                if let next = response.redirectURL {
                    target = next
                    continue
                }
                guard (200...299).contains(response.status) else {
                    return .unknown("the portal page \(target) answered \(response.status)")
                }
                if let page = recognize(response.text) { return .page(page, url: target) }
                return .unknown("the portal page \(target) \(notOnPage)")
            }
            return .unknown("the portal redirects more than 4 times (last \(target))")
        }
    }
}

// MARK: - Decisions on a portal

extension PortalDiscovery {
    /// evaluate on what `discover` finds: high confidence for a page the helper handles (`reason` says what it is),
    /// none for anything else (why, then ": not mine"), also for a page `declines` gives a reason not to take.
    public static func evaluation(_ discover: () throws -> PortalDiscovery,
                                  reason: (Page, HotspotURL) -> String,
                                  declines: (Page, HotspotURL) -> String? = { _, _ in nil }) -> Decision
    {
        let notMine = { (why: String) in Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "\(why): not mine") }
        do {
            switch try discover() {
            case .online:
                return Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "the probe succeeds: not captive")
            case .page(let page, let url):
                if let why = declines(page, url) { return notMine(why) }
                return Decision(result: .success, confidence: .high, reason: reason(page, url))
            case .unknown(let why):
                return notMine(why)
            }
        } catch {
            return notMine("no answer I can use (\(error))")
        }
    }

    /// authenticate on what `discover` finds: success when the probe already succeeds, unsupportedNetwork for what the
    /// helper does not handle (why, then `unsupported`), temporaryFailure when it cannot be found out; `onPage` decides
    /// on a page the helper handles.
    public static func authentication(_ discover: () throws -> PortalDiscovery,
                                      unsupported: String, onPage: (Page, HotspotURL) -> Decision) -> Decision
    {
        let discovery: PortalDiscovery
        do { discovery = try discover() } catch {
            return Decision(result: .temporaryFailure, reason: "portal unreachable: \(error)")
        }
        switch discovery {
        case .online:
            return Decision(result: .success, reason: "the probe already succeeds")
        case .unknown(let why):
            return Decision(result: .unsupportedNetwork, reason: "\(why): \(unsupported)")
        case .page(let page, let url):
            return onPage(page, url)
        }
    }
}

extension ProbeResult {
    /// maintain: success while the probe succeeds; authenticationRequired when it is redirected or shows a page
    /// `isPortal` recognizes (`portal` names it: "a portal page"); failure for anything else.
    public static func maintenance(_ http: HTTPSend, isPortal: (String) -> Bool, portal: String) -> Decision {
        do {
            switch try probe(http) {
            case .online:
                return Decision(result: .success, reason: "the probe succeeds")
            case .redirected(_, let target):
                return Decision(result: .authenticationRequired, reason: "the probe is redirected to \(target): signed out")
            case .other(let response):
                if isPortal(response.text) {
                    return Decision(result: .authenticationRequired, reason: "the probe shows \(portal): signed out")
                }
                return Decision(result: .failure, reason: "the probe answered \(response.status) with something unknown")
            }
        } catch {
            return Decision(result: .failure, reason: "probe failed: \(error)")
        }
    }
}

extension Decision {
    /// logoff: GETs `target`; success, once `forget` has dropped the session, when `refusal` finds nothing wrong with
    /// the answer (by default: it is 2xx); else failure with `refusal`'s reason.
    public static func logoff(at target: HotspotURL, _ http: HTTPSend, refusal: ((HotspotHTTPResponse) -> String?)? = nil,
                              forget: () -> Void) -> Decision
    {
        do {
            let response = try http(.get(target.description))
            let refused = refusal.map { $0(response) }
                ?? ((200...299).contains(response.status) ? nil : "logoff at \(target) answered \(response.status)")
            if let refused { return Decision(result: .failure, reason: refused) }
            forget()
            return Decision(result: .success, reason: "logged off at \(target)")
        } catch {
            return Decision(result: .failure, reason: "logoff at \(target) failed: \(error)")
        }
    }
}
