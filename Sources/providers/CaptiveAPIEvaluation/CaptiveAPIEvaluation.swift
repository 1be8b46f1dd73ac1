// com.hotspotlab.captive-api.evaluation: the evaluation extension of the captive-api app, a reference provider and a template for vendors
// (copy this one file; written as for iOS 26 with `import NEHotspotHelperCompat` in place of
// `import NetworkExtension`).
//
// No network here (hotspotd starts it in a namespace with only `lo`): it decides from the scan list and the
// network it is given. It claims, with high confidence, the networks the app is configured for
// (`--network SSID[:PASSWORD]`, the settings of hotspot-helper-captive-api) and nothing else; the authentication
// extension answers unsupportedNetwork when the network turns out not to be its kind.
//
//   hotspot-provider-captive-api-evaluation [--network SSID[:PASSWORD]]...      (launched by hotspotd: docs/PROVIDERS.md)
import NEHotspotHelperCompat
import CaptiveAPIHelper
import ReferenceHelperSupport

@main
final class CaptiveAPIEvaluationProvider: NEHotspotEvaluationProvider {
    let logic: CaptiveAPILogic

    init() {
        // A usage error is logged and exits 64 (ReferenceHelperSupport).
        logic = CaptiveAPILogic(options: CaptiveAPIHelperOptions.fromCommandLineOrExit { log("evaluation: \($0)") })
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
