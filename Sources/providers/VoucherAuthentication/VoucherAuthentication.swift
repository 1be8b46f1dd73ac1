// com.hotspotlab.voucher.authentication: the authentication extension of the voucher app, a reference provider
// and a template for vendors (the extension is this one file, the logic it calls is the app's library; written as for iOS 26 with `import NEHotspotHelperCompat` in
// place of `import NetworkExtension`).
//
// It does what hotspot-helper-voucher does (the same `VoucherLogic`): authenticate finds the voucher page, posts a
// notification and answers uiRequired; presentUI waits for the user's code ($HOTSPOT_HELPER_UI/input), posts it
// and probes. Its traffic is bound to the command (`command.http`). It returns its response; the SDK delivers it.
//
//   hotspot-provider-voucher-authentication [--http-timeout SECONDS] [--ui DIRECTORY]   (launched by hotspotd)
import NEHotspotHelperCompat
import VoucherHelper
import ReferenceHelperSupport

@main
final class VoucherAuthenticationProvider: NEHotspotAuthenticationProvider {
    let logic: VoucherLogic

    init() {
        // A usage error is logged and exits 64 (ReferenceHelperSupport).
        logic = VoucherLogic(options: VoucherHelperOptions.fromCommandLineOrExit { log("authentication: \($0)") })
    }

    func start() async -> Bool {
        log("authentication: started; UI \(logic.options.uiDirectory ?? "none"); probe \(HotspotHelperEnvironment.probeURL)")
        return true
    }

    func stop(reason: NEProviderStopReason) async { log("authentication: stopped (\(reason))") }

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        // The portal and the user are waited for off Swift's cooperative threads.
        let logic = self.logic
        let response = await HotspotHelper.blocking { logic.response(to: command) }
        // nil: hotspotd withdrew presentUI while the user was typing; the SDK does not deliver a withdrawn answer.
        return response ?? command.createResponse(.failure)
    }
}
