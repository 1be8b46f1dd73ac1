// com.hotspotlab.portal.authentication: the authentication extension of the portal app, a reference provider
// and a template for vendors (the extension is this one file, the logic it calls is the app's library; written as for iOS 26 with `import NEHotspotHelperCompat` in
// place of `import NetworkExtension`).
//
// It signs in exactly as hotspot-helper-portal does (form-login, click-through, WISPr 1.0; the same
// `PortalLogic`), with its traffic bound to the command (`command.http`: marked sockets that pass the
// station's IP suppression). It returns its response; the SDK delivers it.
//
//   hotspot-provider-portal-authentication [--account USER:PASSWORD] [--http-timeout SECONDS]
//                                          (launched by hotspotd: docs/PROVIDERS.md)
import NEHotspotHelperCompat
import PortalHelper
import ReferenceHelperSupport

@main
final class PortalAuthenticationProvider: NEHotspotAuthenticationProvider {
    let logic: PortalLogic

    init() {
        // A usage error is logged and exits 64 (ReferenceHelperSupport).
        logic = PortalLogic(options: PortalHelperOptions.fromCommandLineOrExit { log("authentication: \($0)") })
    }

    func start() async -> Bool {
        log("authentication: started; account \(logic.options.account?.username ?? "none"); probe \(HotspotHelperEnvironment.probeURL)")
        return true
    }

    func stop(reason: NEProviderStopReason) async { log("authentication: stopped (\(reason))") }

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        // Signing in blocks on the portal: off Swift's cooperative threads.
        let logic = self.logic
        return await HotspotHelper.blocking { logic.response(to: command) }
    }
}
