// An evaluation extension as written for iOS 26, with only `import NetworkExtension` changed to
// `import NEHotspotHelperCompat` (Apple's names only, `@main` included). ProviderTests runs it as hotspotd would.
import NEHotspotHelperCompat

@main
final class CafeEvaluation: NEHotspotEvaluationProvider {
    init() {}

    func start() async -> Bool {
        return true
    }

    func stop(reason: NEProviderStopReason) async {
        NSLog("CafeEvaluation stopped: %d", reason.rawValue)
    }

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        guard command.commandType == .evaluate, let network = command.network else {
            return command.createResponse(.commandNotRecognized)
        }
        network.setConfidence(network.ssid == "Cafe Lumiere" ? .high : .none)
        let response = command.createResponse(.success)
        response.setNetwork(network)
        return response
    }
}
