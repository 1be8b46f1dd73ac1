// One command as a reference helper runs it (its log label, its logged HTTP, its answers) and the legacy helper's
// entry point.
import Foundation
import HotspotHelper

/// filterScanList's choice: the networks claimed, and why (`ReferenceHelperOptions.claimConfigured`).
public typealias NetworkFilter = ([HotspotNetwork]) -> (claimed: [HotspotNetwork], reason: String)

/// filterScanList: success with the networks `filter` claims, the reason logged.
func claimedResponse(_ command: HotspotHelperCommand, _ filter: NetworkFilter, label: String,
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
