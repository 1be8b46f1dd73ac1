// The evaluation extension every reference app has (Sources/providers/<App>Evaluation calls it).
import Foundation
import HotspotHelper

/// The evaluation extension of every reference app. It has no network (hotspotd starts it in a namespace with only
/// `lo`), so it decides from what it is given: filterScanList claims what `filter` claims (the configured networks),
/// evaluate gives `high` to a configured SSID and `none` to any other; anything else is commandNotRecognized.
/// Immutable after init (hence `@unchecked Sendable`: the closures are the logic's methods and a log function).
public struct ConfiguredNetworkEvaluation: @unchecked Sendable {  // @unchecked: lets only; `log` and `filter` are the helper's own, called from one provider task
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
