// What the reference helpers do alike around their own logic: the decision type, the connectivity probe and a
// portal's redirects, one command's log label and logged HTTP, the answers, the legacy helper's entry point, and
// the evaluation extension every reference app has.
import Foundation
import HotspotHelper

// MARK: - Decisions

/// What to answer, and why (one line in the log).
public struct Decision {
    public var result: HotspotHelperResult
    public var confidence: HotspotHelperConfidence?
    public var reason: String

    public init(result: HotspotHelperResult, confidence: HotspotHelperConfidence? = nil, reason: String) {
        (self.result, self.confidence, self.reason) = (result, confidence, reason)
    }
}

// MARK: - The probe and the portal

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

// MARK: - One command

/// filterScanList's choice: the networks claimed, and why (`ReferenceHelperOptions.claimConfigured`).
public typealias NetworkFilter = ([HotspotNetwork]) -> (claimed: [HotspotNetwork], reason: String)

/// filterScanList: success with the networks `filter` claims, the reason logged.
private func claimedResponse(_ command: HotspotHelperCommand, _ filter: NetworkFilter, label: String,
                             log: (String) -> Void) -> HotspotHelperResponse
{
    let (claimed, reason) = filter(command.networkList ?? [])
    log("\(label): \(reason)")
    let response = command.createResponse(.success)
    response.setNetworkList(claimed)
    return response
}

/// One command as a reference helper runs it: its label in the log, its HTTP (the helper's timeout, each exchange
/// logged), and its answers with their log lines.
public struct HelperCommandRun {
    public let command: HotspotHelperCommand
    /// `TYPE #ID SSID (BSSID)`.
    public let label: String
    public let http: HTTPSend
    let log: (String) -> Void

    /// Logs that the command arrived. `showsLocation`: the HTTP log lines name a redirect's Location.
    public init(_ command: HotspotHelperCommand, httpTimeout: Duration, showsLocation: Bool = true,
                log: @escaping (String) -> Void)
    {
        let label = "\(command.commandType) #\(command.identifier)" + (command.network.map { " \($0.ssid) (\($0.bssid))" } ?? "")
        log("\(label): received" + (command.deadlineMilliseconds.map { " deadline \(Int($0)) ms" } ?? " no deadline"))
        self.command = command
        self.label = label
        self.log = log
        http = { (request) throws(HotspotTrafficError) -> HotspotHTTPResponse in
            var r = request
            if r.timeout == nil { r.timeout = httpTimeout }
            let response = try command.http(r)
            let location = showsLocation ? response.redirectURL.map { " Location \($0)" } ?? "" : ""
            log("\(label): \(r.method) \(r.url) -> \(response.status)\(location)")
            return response
        }
    }

    /// The command's network's SSID ("" without one).
    public var ssid: String { command.network?.ssid ?? "" }

    /// filterScanList: success with the networks `filter` claims.
    public func claim(_ filter: NetworkFilter) -> HotspotHelperResponse {
        claimedResponse(command, filter, label: label, log: log)
    }

    /// evaluate: the network with the confidence `decide` gives, and its result; success with none when the command
    /// names no network (`logsMissingNetwork`: saying so in the log).
    public func evaluate(logsMissingNetwork: Bool = false, _ decide: () -> Decision) -> HotspotHelperResponse {
        guard let network = command.network else {
            if logsMissingNetwork { log("\(label): no network in the command: answering success with none") }
            return command.createResponse(.success)
        }
        let d = decide()
        network.setConfidence(d.confidence ?? HotspotHelperConfidence.none)
        log("\(label): confidence \(network.confidence): \(d.reason)")
        let response = command.createResponse(d.result)
        response.setNetwork(network)
        return response
    }

    /// The decision's result.
    public func answer(_ d: Decision) -> HotspotHelperResponse {
        log("\(label): \(d.result): \(d.reason)")
        return command.createResponse(d.result)
    }

    /// presentUI of a helper that needs no user input: success.
    public func nothingToShow(_ why: String) -> HotspotHelperResponse {
        log("\(label): success: nothing to show (\(why))")
        return command.createResponse(.success)
    }

    public func notRecognized() -> HotspotHelperResponse {
        log("\(label): commandNotRecognized")
        return command.createResponse(.commandNotRecognized)
    }

    /// Delivers `response` to `command` (the legacy helper), unless hotspotd withdrew the command meanwhile; nil:
    /// nothing to answer.
    public static func deliver(_ response: HotspotHelperResponse?, to command: HotspotHelperCommand, log: (String) -> Void) {
        guard let response else { return }
        if command.isCancelled {
            log("\(command.commandType) #\(command.identifier): withdrawn by hotspotd meanwhile: not answering")
            return
        }
        if !response.deliver() { log("\(command.commandType) #\(command.identifier): the answer could not be delivered: \(HotspotHelper.lastError ?? "?")") }
    }
}

// MARK: - The legacy helper's entry point

/// Parses the command line (usage on stdout and exit 0 for `--help`; a usage error on stderr and exit 64),
/// registers with hotspotd on a concurrent queue named `program` (a slow command never holds up another), logs
/// `registered as ID ("NAME"); DETAILS`, and runs until hotspotd goes away (exit 0; exit 2 when registering fails).
public func runReferenceHelper<Options: ReferenceHelperOptions>(
    _: Options.Type, program: String, log: (String) -> Void,
    handler: (Options) -> HotspotHelper.Handler, details: (Options) -> String
) -> Never {
    let options: Options
    do {
        options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
    } catch {
        let help = error.description.hasPrefix("usage:")
        (help ? FileHandle.standardOutput : FileHandle.standardError).write(Data("\(error)\n".utf8))
        exit(help ? 0 : 64)
    }
    let queue = DispatchQueue(label: program, attributes: .concurrent)
    let registered = HotspotHelper.register(
        options: HotspotHelperOptions(displayName: options.displayName, identifier: options.identifier, socketPath: options.socketPath),
        queue: queue, handler: handler(options)
    )
    guard registered else {
        log("register failed: \(HotspotHelper.lastError ?? "unknown error")")
        exit(2)
    }
    log("registered as \(options.identifier) (\"\(options.displayName)\"); " + details(options))
    while HotspotHelper.isConnected { usleep(50_000) }
    log("hotspotd went away: exiting")
    exit(0)
}

// MARK: - The evaluation extension

/// The evaluation extension of every reference app. It has no network (hotspotd starts it in a namespace with only
/// `lo`), so it decides from what it is given: filterScanList claims what `filter` claims (the configured networks),
/// evaluate gives `high` to a configured SSID and `none` to any other; anything else is commandNotRecognized.
/// Immutable after init (hence `@unchecked Sendable`: the closures are the logic's methods and a log function).
public struct ConfiguredNetworkEvaluation: @unchecked Sendable {
    let networks: [(ssid: String, password: String?)]
    let filter: NetworkFilter
    let log: (String) -> Void

    public init<Options: ReferenceHelperOptions>(options: Options, filter: @escaping NetworkFilter, log: @escaping (String) -> Void) {
        (networks, self.filter, self.log) = (options.networks, filter, log)
    }

    /// `start()`: logs the configured networks.
    public func start() -> Bool {
        log("evaluation: started; networks [\(networks.map(\.ssid).joined(separator: ", "))]")
        return true
    }

    /// `stop(reason:)`: logs why.
    public func stop(_ reason: HotspotProviderStopReason) {
        log("evaluation: stopped (\(reason))")
    }

    /// `handleCommand(_:)`: the answer.
    public func response(to command: HotspotHelperCommand) -> HotspotHelperResponse {
        let label = "evaluation: \(command.commandType) #\(command.identifier)"
        switch command.commandType {
        case .filterScanList:
            return claimedResponse(command, filter, label: label, log: log)
        case .evaluate:
            guard let network = command.network else {
                log("\(label): no network in the command: success with none")
                return command.createResponse(.success)
            }
            let configured = networks.contains { $0.ssid == network.ssid }
            network.setConfidence(configured ? .high : .none)
            log("\(label): \(network.ssid): confidence \(network.confidence) (\(configured ? "a configured network" : "not configured"))")
            let response = command.createResponse(.success)
            response.setNetwork(network)
            return response
        default:
            log("\(label): not an evaluation command: commandNotRecognized")
            return command.createResponse(.commandNotRecognized)
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
