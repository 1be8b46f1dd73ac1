// The words a topology and a scenario use for a lab's links (the lab's services build them: LabServices).

/// How a hotspot's LAN side is made.
public enum HotspotLinkMode: Sendable, Equatable {
    /// A mac80211_hwsim radio in the hotspot namespace, served by hostapd (needs hwsim: the VM).
    case radio
    /// The native tier: no radio. Without stations, a veth pair to a per-hotspot station namespace stands in for
    /// the radio link (the gate/portal tests); with stations, each hotspot's LAN is a bridge and each station's Wi-Fi
    /// is a veth end the lab attaches to a hotspot's bridge (`StationLink`, docs/STATION.md "The native tier").
    case veth

    /// The tier reports name: `radio` (mac80211_hwsim, hostapd, wpa_supplicant) or `native` (links the lab moves).
    public var tier: String { self == .radio ? "radio" : "native" }
}

/// Where a `link:` fault applies: the hotspot's uplink (toward the internet) or its radio side (toward the
/// stations).
public enum LinkSide: String, Sendable, CaseIterable { case uplink, radio }

/// The received signal mac80211_hwsim gives: -50 dBm plus the sender's tx power in dBm, which mac80211 takes as a
/// whole number from 0 dBm (the weakest, -50 dBm received) to the channel's 20 dBm (-30 dBm). A `signal:` step's range.
public enum RadioSignal {
    public static let range: ClosedRange<Int> = -50 ... -30
}
