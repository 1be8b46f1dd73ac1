// hotspot-helper-captive-api: a reference Hotspot Helper for RFC 8908/8910 networks, and a template for
// vendors (copy this folder: this file, the logic, and main.swift, the entry point; its provider pair in
// Sources/providers shares this file; what the reference helpers share is in Sources/helpers/Support).
//
// A network that follows RFC 8910 announces its captive portal API in DHCP option 114; the API (RFC 8908)
// answers `application/captive+json` with `captive`, `user-portal-url`, `seconds-remaining` and
// `can-extend-session`. No HTML guessing: the helper asks the API.
//   evaluate      option 114 in the lease and the API says captive: true -> high; else none
//   authenticate  accept at the user portal (this lab's: POST /accept with accept=yes), then the API must
//                 say captive: false
//   maintain      API captive: false -> success (extending the session when it may and < 60 s remain);
//                 captive: true -> authenticationRequired
//   logoff        the portal's /logoff
//
//   hotspot-helper-captive-api [--network SSID[:PASSWORD]]... [--name NAME] [--identifier ID] [--socket PATH]
//                              [--http-timeout SECONDS]
//
// Every command and decision is one line on stderr. All traffic goes through `command.http` (marked so it
// passes while the station suppresses IP; redirects not followed; bounded by the command's deadline).
import Foundation
import HotspotHelper
import ReferenceHelperSupport
import Synchronization

// MARK: - Options

public struct CaptiveAPIHelperOptions: ReferenceHelperOptions {
    public var displayName = "Captive API"
    public var identifier = "com.hotspotlab.captive-api"
    public var socketPath: String?
    public var networks: [(ssid: String, password: String?)] = []
    public var httpTimeout: Duration = .seconds(8)
    /// Extend the session when fewer seconds than this remain (and the API allows it).
    public var extendBelowSeconds = 60

    public static let usage = """
        usage: hotspot-helper-captive-api [--network SSID[:PASSWORD]]... [--name NAME] [--identifier ID] [--socket PATH]
                                          [--http-timeout SECONDS]
        """

    /// No flags of its own: those all reference helpers take are parsed by `ReferenceHelperOptions.parse`.
    public init() {}
}

public func log(_ line: String) {
    FileHandle.standardError.write(Data("hotspot-helper-captive-api: \(line)\n".utf8))
}

// MARK: - The API (pure parsing: unit-tested on what the lab's captive-api portal answers)

/// An RFC 8908 API state.
struct CaptiveAPIState: Equatable {
    var captive: Bool
    var userPortalURL: String?
    var venueInfoURL: String?
    var secondsRemaining: Int?
    var canExtendSession: Bool

    /// Parses the JSON object; nil when it is not one or has no boolean `captive` (RFC 8908 requires it).
    static func parse(_ body: [UInt8]) -> CaptiveAPIState? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
              let captive = object["captive"] as? Bool
        else { return nil }
        return CaptiveAPIState(
            captive: captive, userPortalURL: object["user-portal-url"] as? String, venueInfoURL: object["venue-info-url"] as? String,
            secondsRemaining: (object["seconds-remaining"] as? NSNumber)?.intValue,
            canExtendSession: object["can-extend-session"] as? Bool ?? false)
    }
}

enum CaptiveAPI {
    static let mediaType = "application/captive+json"

    /// GETs the API. Throws for transport errors; a non-200 answer or a body that is not the API's JSON is a
    /// `HotspotTrafficError` too (with the status in words).
    static func fetch(_ uri: String, _ http: HTTPSend) throws(HotspotTrafficError) -> CaptiveAPIState {
        let response = try http(.get(uri, headers: [("Accept", mediaType)]))
        guard response.status == 200 else {
            throw HotspotTrafficError("read the captive portal API", uri, detail: "HTTP \(response.status)")
        }
        guard let state = CaptiveAPIState.parse(response.body) else {
            throw HotspotTrafficError("read the captive portal API", uri,
                                      detail: "not \(mediaType) with a boolean \"captive\" (Content-Type \(response.header("Content-Type") ?? "none"))")
        }
        return state
    }

    /// The first POST form of the user portal, as a browser would submit it, plus accept=yes; nil when there
    /// is none (then this lab's `/accept` is used).
    static func acceptForm(in html: String, page: HotspotURL) -> (url: HotspotURL, fields: [(name: String, value: String)])? {
        guard let start = html.range(of: "<form", options: .caseInsensitive),
              let end = html[start.upperBound...].firstIndex(of: ">") else { return nil }
        let tag = html[start.upperBound..<end]
        guard tag.range(of: "method=\"post\"", options: .caseInsensitive) != nil
            || tag.range(of: "method='post'", options: .caseInsensitive) != nil
            || tag.range(of: "method=post", options: .caseInsensitive) != nil else { return nil }
        var action = ""
        if let a = tag.range(of: "action=", options: .caseInsensitive), a.upperBound < tag.endIndex {
            let rest = tag[a.upperBound...]
            if let quote = rest.first, quote == "\"" || quote == "'" {
                action = String(rest.dropFirst().prefix { $0 != quote })
            } else {
                action = String(rest.prefix { !$0.isWhitespace && $0 != ">" })
            }
        }
        guard let url = page.resolving(action) else { return nil }
        return (url, [("accept", "yes")])
    }
}

// MARK: - Decisions (`Decision`, `HTTPSend`: ReferenceHelperSupport)

public final class CaptiveAPILogic: @unchecked Sendable {  // @unchecked: `options` (not declared Sendable) is set once; the portals are in a Mutex
    public let options: CaptiveAPIHelperOptions
    /// Per SSID: the user portal signed in to (for logoff and extend).
    private let signedIn = Synchronization.Mutex<[String: HotspotURL]>([:])

    /// The portals' cookies (a session cookie set on the user portal's page goes back on the POST).
    let cookies = HotspotCookieJar()

    public init(options: CaptiveAPIHelperOptions) { self.options = options }

    public func filter(_ networks: [HotspotNetwork]) -> (claimed: [HotspotNetwork], reason: String) {
        options.claimConfigured(networks)
    }

    /// The API URI from DHCP option 114, or the reason there is none.
    func apiURI(_ lease: [String: String]) -> String? {
        HotspotHelperEnvironment.captivePortalAPI(lease: lease)
    }

    func evaluate(_ http: HTTPSend, lease: [String: String]) -> Decision {
        guard let uri = apiURI(lease) else {
            return Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "no option 114 in the lease: not mine")
        }
        do {
            let state = try CaptiveAPI.fetch(uri, http)
            if state.captive {
                return Decision(result: .success, confidence: .high, reason: "the API \(uri) says captive (user portal \(state.userPortalURL ?? "none"))")
            }
            return Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "the API \(uri) says not captive")
        } catch {
            return Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "\(error): not mine")
        }
    }

    func authenticate(_ http: HTTPSend, ssid: String, lease: [String: String]) -> Decision {
        withCookies(cookies, http) { http in authenticateKeepingCookies(http, ssid: ssid, lease: lease) }
    }

    private func authenticateKeepingCookies(_ http: HTTPSend, ssid: String, lease: [String: String]) -> Decision {
        guard let uri = apiURI(lease) else {
            return Decision(result: .unsupportedNetwork, reason: "no option 114 in the lease (anymore)")
        }
        do {
            let before = try CaptiveAPI.fetch(uri, http)
            guard before.captive else {
                if let portal = before.userPortalURL.flatMap(HotspotURL.init) { remember(portal, ssid) }
                return Decision(result: .success, reason: "the API says not captive already")
            }
            guard let portalText = before.userPortalURL, let portal = HotspotURL(portalText) else {
                return Decision(result: .unsupportedNetwork, reason: "the API names no plain-HTTP user-portal-url (\(before.userPortalURL ?? "none"))")
            }
            // Accept as a person would at the user portal: read the page, submit its form.
            let page = try http(.get(portal.description))
            if page.status >= 500 { return Decision(result: .temporaryFailure, reason: "the user portal answered \(page.status)") }
            let (target, fields) = CaptiveAPI.acceptForm(in: page.text, page: portal) ?? (portal.resolving("/accept")!, [("accept", "yes")])
            let accepted = try http(.postForm(target.description, fields: fields))
            switch accepted.status {
            case 200...399: break
            case 400...499: return Decision(result: .failure, reason: "accepting at \(target) refused (\(accepted.status))")
            default: return Decision(result: .temporaryFailure, reason: "accepting at \(target): the portal answered \(accepted.status)")
            }
            let after = try CaptiveAPI.fetch(uri, http)
            guard !after.captive else {
                return Decision(result: .temporaryFailure, reason: "accepted at \(target), but the API still says captive")
            }
            remember(portal, ssid)
            return Decision(result: .success, reason: "accepted at \(target); the API says not captive"
                + (after.secondsRemaining.map { ", \($0) s remaining" } ?? ""))
        } catch {
            return Decision(result: .temporaryFailure, reason: "\(error)")
        }
    }

    func maintain(_ http: HTTPSend, ssid: String, lease: [String: String]) -> Decision {
        withCookies(cookies, http) { http in maintainKeepingCookies(http, ssid: ssid, lease: lease) }
    }

    private func maintainKeepingCookies(_ http: HTTPSend, ssid: String, lease: [String: String]) -> Decision {
        guard let uri = apiURI(lease) else { return Decision(result: .failure, reason: "no option 114 in the lease (anymore)") }
        do {
            let state = try CaptiveAPI.fetch(uri, http)
            if state.captive { return Decision(result: .authenticationRequired, reason: "the API says captive: signed out") }
            var reason = "the API says not captive" + (state.secondsRemaining.map { ", \($0) s remaining" } ?? "")
            if state.canExtendSession, let left = state.secondsRemaining, left < options.extendBelowSeconds,
               let portal = state.userPortalURL.flatMap(HotspotURL.init) ?? portals(ssid), let extend = portal.resolving("/extend")
            {
                do {
                    let response = try http(.postForm(extend.description, fields: []))
                    reason += (200...299).contains(response.status) ? "; extended the session at \(extend)"
                        : "; extending at \(extend) answered \(response.status)"
                } catch {
                    reason += "; extending at \(extend) failed: \(error)"
                }
            }
            return Decision(result: .success, reason: reason)
        } catch {
            return Decision(result: .failure, reason: "\(error)")
        }
    }

    func logoff(_ http: HTTPSend, ssid: String, lease: [String: String]) -> Decision {
        withCookies(cookies, http) { http in logoffKeepingCookies(http, ssid: ssid, lease: lease) }
    }

    private func logoffKeepingCookies(_ http: HTTPSend, ssid: String, lease: [String: String]) -> Decision {
        var portal = portals(ssid)
        if portal == nil, let uri = apiURI(lease) {
            portal = (try? CaptiveAPI.fetch(uri, http))?.userPortalURL.flatMap(HotspotURL.init)
        }
        guard let portal, let target = portal.resolving("/logoff") else {
            return Decision(result: .failure, reason: "no user portal known for \(ssid) to log off at")
        }
        return Decision.logoff(at: target, http) { signedIn.withLock { $0[ssid] = nil } }
    }

    private func portals(_ ssid: String) -> HotspotURL? { signedIn.withLock { $0[ssid] } }
    private func remember(_ portal: HotspotURL, _ ssid: String) { signedIn.withLock { $0[ssid] = portal } }

    /// Runs one command and answers it (the legacy helper; the provider pair returns `response(to:)` instead).
    public func handle(_ command: HotspotHelperCommand) {
        HelperCommandRun.deliver(response(to: command), to: command, log: log)
    }

    /// Runs one command and returns its answer.
    public func response(to command: HotspotHelperCommand) -> HotspotHelperResponse {
        let run = HelperCommandRun(command, httpTimeout: options.httpTimeout, showsLocation: false, log: log)
        let lease = HotspotHelperEnvironment.dhcpLease()
        switch command.commandType {
        case .filterScanList:
            return run.claim(filter)
        case .evaluate:
            return run.evaluate { evaluate(run.http, lease: lease) }
        case .authenticate:
            return run.answer(authenticate(run.http, ssid: run.ssid, lease: lease))
        case .maintain:
            return run.answer(maintain(run.http, ssid: run.ssid, lease: lease))
        case .logoff:
            return run.answer(logoff(run.http, ssid: run.ssid, lease: lease))
        case .presentUI:
            return run.nothingToShow("the API needs no user input")
        default:
            return run.notRecognized()
        }
    }
}
