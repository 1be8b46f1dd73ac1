// hotspot-helper-voucher's entry point: options, registration, the wait (`runReferenceHelper`, shared by the
// reference helpers). What it does is in VoucherHelper.swift (the reference helper's logic, shared with its
// provider pair in Sources/providers).
import HotspotHelper
import ReferenceHelperSupport
import VoucherHelper

// Concurrent: presentUI waits for the user without holding up other commands.
runReferenceHelper(
    VoucherHelperOptions.self, program: "hotspot-helper-voucher", log: log,
    handler: { VoucherLogic(options: $0).handle },
    details: { options in
        "networks [\(options.networks.map(\.ssid).joined(separator: ", "))]; "
            + "UI \(options.uiDirectory ?? "none"); probe \(HotspotHelperEnvironment.probeURL)"
    }
)
