// A provider pair written as for iOS 26 with only `import NetworkExtension` changed to
// `import NEHotspotHelperCompat` (Apple's names only; `@main` is left out because a test bundle has its own
// entry point: the reference providers in Sources/providers carry it).
import NEHotspotHelperCompat

final class CafeEvaluationProvider: NEHotspotEvaluationProvider {
    let knownSSIDs = ["Cafe Lumiere"]

    init() {}

    func start() async -> Bool {
        return true
    }

    func stop(reason: NEProviderStopReason) async {
        if reason == .idleTimeout || reason == .configurationDisabled {
            NSLog("evaluation provider stopped: \(reason.rawValue)")
        }
    }

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        switch command.commandType {
        case .filterScanList:
            let known = (command.networkList ?? []).filter { knownSSIDs.contains($0.ssid) }
            let response = command.createResponse(NEHotspotHelperResult.success)
            response.setNetworkList(known)
            return response
        case .evaluate:
            guard let network = command.network else { return command.createResponse(.failure) }
            network.setConfidence(knownSSIDs.contains(network.ssid) ? NEHotspotHelperConfidence.high : .none)
            let response = command.createResponse(NEHotspotHelperResult.success)
            response.setNetwork(network)
            return response
        default:
            return command.createResponse(NEHotspotHelperResult.commandNotRecognized)
        }
    }
}

final class CafeAuthenticationProvider: NEHotspotAuthenticationProvider {
    init() {}

    func start() async -> Bool { true }

    func stop(reason: NEProviderStopReason) async {}

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        switch command.commandType {
        case .authenticate, .maintain, .logoff:
            return command.createResponse(NEHotspotHelperResult.success)
        case .presentUI:
            return command.createResponse(.success)
        default:
            return command.createResponse(.commandNotRecognized)
        }
    }
}

/// The app's side: enable the providers and pre-evaluate one SSID.
func enableCafeProviders(_ manager: NEHotspotManager) async throws {
    try await manager.loadFromPreferences()
    manager.isEnabled = true
    manager.evaluatedSSIDs = ["Cafe Lumiere"]
    manager.evaluationProviderBundleIdentifier = "com.example.cafe.evaluation"
    try await manager.saveToPreferences()
}
