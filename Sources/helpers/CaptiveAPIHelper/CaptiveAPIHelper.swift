// hotspot-helper-captive-api: a reference Hotspot Helper for RFC 8908/8910 networks, and a template for
// vendors (copy this folder: this file, the logic, and main.swift, the entry point; its provider pair in
// Sources/providers shares this file).
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

// MARK: - Options

public struct CaptiveAPIHelperOptions {
    public var displayName = "Captive API"
    public var identifier = "com.hotspotlab.captive-api"
    public var socketPath: String?
    public var networks: [(ssid: String, password: String?)] = []
    public var httpTimeout: Duration = .seconds(8)
    /// Extend the session when fewer seconds than this remain (and the API allows it).
    public var extendBelowSeconds = 60

    static let usage = """
        usage: hotspot-helper-captive-api [--network SSID[:PASSWORD]]... [--name NAME] [--identifier ID] [--socket PATH]
                                          [--http-timeout SECONDS]
        """

    public struct UsageError: Error, CustomStringConvertible {
        public var description: String
    }

    public static func parse(_ arguments: [String]) throws(UsageError) -> CaptiveAPIHelperOptions {
        var options = CaptiveAPIHelperOptions()
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
            case "--network":
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

typealias HTTPSend = (HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse

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

// MARK: - Decisions

struct Decision {
    var result: HotspotHelperResult
    var confidence: HotspotHelperConfidence?
    var reason: String
}

public final class CaptiveAPILogic: @unchecked Sendable {
    public let options: CaptiveAPIHelperOptions
    private let lock = NSLock()
    /// Per SSID: the user portal signed in to (for logoff and extend).
    private var portals: [String: HotspotURL] = [:]

    public init(options: CaptiveAPIHelperOptions) { self.options = options }

    public func filter(_ networks: [HotspotNetwork]) -> (claimed: [HotspotNetwork], reason: String) {
        var claimed: [HotspotNetwork] = []
        for network in networks {
            guard let configured = options.networks.first(where: { $0.ssid == network.ssid }) else { continue }
            if network.isSecure {
                guard let password = configured.password else { continue }
                network.setPassword(password)
            }
            claimed.append(network)
        }
        let reason = options.networks.isEmpty ? "no --network configured: claiming nothing"
            : "claiming \(claimed.count) of \(networks.count): [\(claimed.map(\.ssid).joined(separator: ", "))]"
        return (claimed, reason)
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
        var portal = portals(ssid)
        if portal == nil, let uri = apiURI(lease) {
            portal = (try? CaptiveAPI.fetch(uri, http))?.userPortalURL.flatMap(HotspotURL.init)
        }
        guard let portal, let target = portal.resolving("/logoff") else {
            return Decision(result: .failure, reason: "no user portal known for \(ssid) to log off at")
        }
        do {
            let response = try http(.get(target.description))
            guard (200...299).contains(response.status) else {
                return Decision(result: .failure, reason: "logoff at \(target) answered \(response.status)")
            }
            lock.withLock { portals[ssid] = nil }
            return Decision(result: .success, reason: "logged off at \(target)")
        } catch {
            return Decision(result: .failure, reason: "logoff at \(target) failed: \(error)")
        }
    }

    private func portals(_ ssid: String) -> HotspotURL? { lock.withLock { portals[ssid] } }
    private func remember(_ portal: HotspotURL, _ ssid: String) { lock.withLock { portals[ssid] = portal } }

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
        let ssid = network?.ssid ?? ""
        let label = "\(command.commandType) #\(command.identifier)" + (network.map { " \($0.ssid) (\($0.bssid))" } ?? "")
        log("\(label): received" + (command.deadlineMilliseconds.map { " deadline \(Int($0)) ms" } ?? " no deadline"))
        let http: HTTPSend = { (request) throws(HotspotTrafficError) -> HotspotHTTPResponse in
            var r = request
            if r.timeout == nil { r.timeout = self.options.httpTimeout }
            let response = try command.http(r)
            log("\(label): \(r.method) \(r.url) -> \(response.status)")
            return response
        }
        let lease = HotspotHelperEnvironment.dhcpLease()
        let response: HotspotHelperResponse
        switch command.commandType {
        case .filterScanList:
            let (claimed, reason) = filter(command.networkList ?? [])
            log("\(label): \(reason)")
            response = command.createResponse(.success)
            response.setNetworkList(claimed)
        case .evaluate:
            guard let network else {
                response = command.createResponse(.success)
                break
            }
            let d = evaluate(http, lease: lease)
            network.setConfidence(d.confidence ?? HotspotHelperConfidence.none)
            log("\(label): confidence \(network.confidence): \(d.reason)")
            response = command.createResponse(d.result)
            response.setNetwork(network)
        case .authenticate, .maintain, .logoff:
            let d = switch command.commandType {
            case .authenticate: authenticate(http, ssid: ssid, lease: lease)
            case .maintain: maintain(http, ssid: ssid, lease: lease)
            default: logoff(http, ssid: ssid, lease: lease)
            }
            log("\(label): \(d.result): \(d.reason)")
            response = command.createResponse(d.result)
        case .presentUI:
            log("\(label): success: nothing to show (the API needs no user input)")
            response = command.createResponse(.success)
        default:
            log("\(label): commandNotRecognized")
            response = command.createResponse(.commandNotRecognized)
        }
        return response
    }
}

