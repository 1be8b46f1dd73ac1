// hotspot-helper-portal's entry point: options, registration, the wait (`runReferenceHelper`, shared by the
// reference helpers). What it does is in PortalHelper.swift (the reference helper's logic, shared with the portal
// provider pair in Sources/providers).
import HotspotHelper
import PortalHelper
import ReferenceHelperSupport

// Concurrent: a slow portal never holds up filterScanList.
runReferenceHelper(
    PortalHelperOptions.self, program: "hotspot-helper-portal", log: log,
    handler: { PortalLogic(options: $0).handle },
    details: { options in
        "account \(options.account.map { $0.username } ?? "none"); "
            + "networks [\(options.networks.map(\.ssid).joined(separator: ", "))]; probe \(HotspotHelperEnvironment.probeURL)"
    }
)
