// com.hotspotlab.captive-api.authentication: the authentication extension of the captive-api app, a reference
// provider and a template for vendors (the extension is this one file, the logic it calls is the app's library; written as for iOS 26 with
// `import NEHotspotHelperCompat` in place of `import NetworkExtension`).
//
// It does what hotspot-helper-captive-api does (the same `CaptiveAPILogic`): the RFC 8908 API announced by DHCP
// option 114, the user portal's accept form, session extension in maintain. Its traffic is bound to the command
// (`command.http`). It returns its response; the SDK delivers it.
//
//   hotspot-provider-captive-api-authentication [--http-timeout SECONDS]      (launched by hotspotd)
import NEHotspotHelperCompat
import CaptiveAPIHelper
import ReferenceHelperSupport

@main
final class CaptiveAPIAuthenticationProvider: NEHotspotAuthenticationProvider {
    let logic: CaptiveAPILogic

    init() {
        // A usage error is logged and exits 64 (ReferenceHelperSupport).
        logic = CaptiveAPILogic(options: CaptiveAPIHelperOptions.fromCommandLineOrExit { log("authentication: \($0)") })
    }

    func start() async -> Bool {
        log("authentication: started; API \(HotspotHelperEnvironment.captivePortalAPI() ?? "not announced yet")")
        return true
    }

    func stop(reason: NEProviderStopReason) async { log("authentication: stopped (\(reason))") }

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        let logic = self.logic
        return await HotspotHelper.blocking { logic.response(to: command) }
    }
}
