// Apple's iOS 26 provider spellings on top of HotspotHelper's providers (docs/PROVIDERS.md):
//
//     import NEHotspotHelperCompat          // was: import NetworkExtension
//
//     @main
//     final class MyEvaluation: NEHotspotEvaluationProvider {
//         init() {}
//         func start() async -> Bool { true }
//         func stop(reason: NEProviderStopReason) async {}
//         func handleCommand(_ command: NEHotspotHelperCommand) async -> NEHotspotHelperResponse { ... }
//     }
//
// compiles and runs as an executable hotspotd launches for the app that declares it.

/// Why a provider is stopped (Apple's cases and raw values).
public typealias NEProviderStopReason = HotspotProviderStopReason

/// Apple's ExtensionFoundation protocol an extension's `@main` type adopts. Here its `main()` is the provider
/// runtime's: it registers with hotspotd from the environment hotspotd sets, runs the provider until it is
/// stopped, and exits.
public protocol AppExtension {
    init()
    static func main() async
}

/// `NEHotspotEvaluationProvider`: filterScanList and evaluate, in a sandbox with no network.
public protocol NEHotspotEvaluationProvider: AppExtension, HotspotEvaluationProvider {}

/// `NEHotspotAuthenticationProvider`: authenticate, maintain, presentUI and logoff.
public protocol NEHotspotAuthenticationProvider: AppExtension, HotspotAuthenticationProvider {}
