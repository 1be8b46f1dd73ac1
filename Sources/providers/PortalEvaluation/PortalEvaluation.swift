// com.hotspotlab.portal.evaluation: the evaluation extension of the portal app, a reference provider and a
// template for vendors (the extension is this one file, the logic it calls is the app's library; written as for iOS 26 with `import NEHotspotHelperCompat` in place
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
    // What every reference app's evaluation extension does (ReferenceHelperSupport), with this app's settings.
    let evaluation: ConfiguredNetworkEvaluation

    init() {
        // A usage error is logged and exits 64.
        let logic = PortalLogic(options: PortalHelperOptions.fromCommandLineOrExit { log("evaluation: \($0)") })
        evaluation = ConfiguredNetworkEvaluation(options: logic.options, filter: logic.filter, log: log)
    }

    func start() async -> Bool { evaluation.start() }

    func stop(reason: NEProviderStopReason) async { evaluation.stop(reason) }

    func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse {
        evaluation.response(to: command)
    }
}
