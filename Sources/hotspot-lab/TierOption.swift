import ArgumentParser
import LabKit

/// `--link radio|native` (`veth` is accepted for `native`): the tier a lab command runs in (docs/SCENARIOS.md,
/// "Tiers"). radio: mac80211_hwsim radios, hostapd and wpa_supplicant (the host kernel when it has hwsim, else the
/// VM); native: no radio, the stations' Wi-Fi are links the lab attaches to the hotspots' segments, on the host
/// kernel (no VM), everything above the radio the same.
struct TierOption: ParsableArguments {
    @Option(name: .customLong("link"), help: "radio (mac80211_hwsim, hostapd, wpa_supplicant: the VM where the host has no hwsim) or native (links the lab moves, on the host kernel, no VM; `veth` is the same).")
    var link: String?

    /// The tier asked for (nil: the command's default).
    func mode() throws -> HotspotLinkMode? {
        guard let link else { return nil }
        switch link {
        case "radio": return .radio
        case "native", "veth": return .veth
        default: throw ValidationError("--link: expected radio or native (veth), found `\(link)`")
        }
    }
}
