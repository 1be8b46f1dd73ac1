// com.hotspotlab.portal.evaluation: the evaluation extension of the portal app, a reference provider and a
// template for vendors (copy this one file; written as for iOS 26 with `import NEHotspotHelperCompat` in place
// of `import NetworkExtension`).
//
// It runs in a sandbox with no network (hotspotd starts it in a namespace with only `lo`), so it decides from
// what it is given: the scan list and the network. It claims, with high confidence, the networks the app is
// configured for (`--network SSID[:PASSWORD]`, the same settings as hotspot-helper-portal) and nothing else;
// whether the portal is one it can sign in to is found out by the authentication extension, which answers
// unsupportedNetwork when it is not.
//
//   hotspot-provider-portal-evaluation [--network SSID[:PASSWORD]]...      (launched by hotspotd: docs/PROVIDERS.md)
import NEHotspotHelperCompat
import PortalHelper
import ReferenceHelperSupport

@main
final class PortalEvaluationProvider: NEHotspotEvaluationProvider {
    let logic: PortalLogic

    init() {
        // A usage error is logged and exits 64 (ReferenceHelperSupport).
        logic = PortalLogic(options: PortalHelperOptions.fromCommandLineOrExit { log("evaluation: \($0)") })
    }

    func start() async -> Bool {
        log("evaluation: started; networks [\(logic.options.networks.map(\.ssid).joined(separator: ", "))]")
        return true
    }

    func stop(reason: NEProviderStopReason) async {
        log("evaluation: stopped (\(reason))")
    }

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        // The evaluation every reference app shares (ReferenceHelperSupport): filterScanList claims the configured
        // networks (`logic.filter`), evaluate gives a configured SSID high confidence and any other none.
        evaluateConfiguredNetworks(command, options: logic.options, filter: logic.filter, log: log)
    }
}
