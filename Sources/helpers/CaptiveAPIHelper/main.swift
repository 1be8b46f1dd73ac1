// hotspot-helper-captive-api's entry point: options, registration, the wait (`runReferenceHelper`, shared by the
// reference helpers). What it does is in CaptiveAPIHelper.swift (the reference helper's logic, shared with its
// provider pair in Sources/providers).
import CaptiveAPIHelper
import HotspotHelper
import ReferenceHelperSupport

runReferenceHelper(
    CaptiveAPIHelperOptions.self, program: "hotspot-helper-captive-api", log: log,
    handler: { CaptiveAPILogic(options: $0).handle },
    details: { options in
        "networks [\(options.networks.map(\.ssid).joined(separator: ", "))]; lease \(HotspotHelperEnvironment.dhcpLeasePath ?? "none")"
    }
)
