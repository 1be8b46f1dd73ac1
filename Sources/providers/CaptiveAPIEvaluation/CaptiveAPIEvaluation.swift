// com.hotspotlab.captive-api.evaluation: the evaluation extension of the captive-api app, a reference provider and a template for vendors
// (the extension is this one file, the logic it calls is the app's library; written as for iOS 26 with `import NEHotspotHelperCompat` in place of
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
    // What every reference app's evaluation extension does (ReferenceHelperSupport), with this app's settings.
    let evaluation: ConfiguredNetworkEvaluation

    init() {
        // A usage error is logged and exits 64.
        let logic = CaptiveAPILogic(options: CaptiveAPIHelperOptions.fromCommandLineOrExit { log("evaluation: \($0)") })
        evaluation = ConfiguredNetworkEvaluation(options: logic.options, filter: logic.filter, log: log)
    }

    func start() async -> Bool { evaluation.start() }

    func stop(reason: NEProviderStopReason) async { evaluation.stop(reason) }

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        evaluation.response(to: command)
    }
}
