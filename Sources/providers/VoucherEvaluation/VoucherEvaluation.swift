// com.hotspotlab.voucher.evaluation: the evaluation extension of the voucher app, a reference provider and a template for vendors
// (copy this one file; written as for iOS 26 with `import NEHotspotHelperCompat` in place of
// `import NetworkExtension`).
//
// No network here (hotspotd starts it in a namespace with only `lo`): it decides from the scan list and the
// network it is given. It claims, with high confidence, the networks the app is configured for
// (`--network SSID[:PASSWORD]`, the settings of hotspot-helper-voucher) and nothing else; the authentication
// extension answers unsupportedNetwork when the network turns out not to be its kind.
//
//   hotspot-provider-voucher-evaluation [--network SSID[:PASSWORD]]...      (launched by hotspotd: docs/PROVIDERS.md)
import NEHotspotHelperCompat
import VoucherHelper

@main
final class VoucherEvaluationProvider: NEHotspotEvaluationProvider {
    let logic: VoucherLogic

    init() {
        do {
            logic = VoucherLogic(options: try VoucherHelperOptions.parse(Array(CommandLine.arguments.dropFirst())))
        } catch {
            log("evaluation: \(error)")
            exit(64)
        }
    }

    func start() async -> Bool {
        log("evaluation: started; networks [\(logic.options.networks.map(\.ssid).joined(separator: ", "))]")
        return true
    }

    func stop(reason: NEProviderStopReason) async {
        log("evaluation: stopped (\(reason))")
    }

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        let label = "evaluation: \(command.commandType) #\(command.identifier)"
        switch command.commandType {
        case .filterScanList:
            let (claimed, reason) = logic.filter(command.networkList ?? [])
            log("\(label): \(reason)")
            let response = command.createResponse(.success)
            response.setNetworkList(claimed)
            return response
        case .evaluate:
            guard let network = command.network else {
                log("\(label): no network in the command: success with none")
                return command.createResponse(.success)
            }
            let configured = logic.options.networks.contains { $0.ssid == network.ssid }
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
