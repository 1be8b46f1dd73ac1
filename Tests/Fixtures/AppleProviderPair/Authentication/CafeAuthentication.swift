// An authentication extension as written for iOS 26, with only `import NetworkExtension` changed to
// `import NEHotspotHelperCompat` (Apple's names only, `@main` included). ProviderTests runs it as hotspotd would.
import NEHotspotHelperCompat

@main
final class CafeAuthentication: NEHotspotAuthenticationProvider {
    init() {}

    func start() async -> Bool {
        return true
    }

    func stop(reason: NEProviderStopReason) async {}

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        switch command.commandType {
        case .authenticate, .maintain, .logoff, .presentUI:
            return command.createResponse(.success)
        default:
            return command.createResponse(.commandNotRecognized)
        }
    }
}
