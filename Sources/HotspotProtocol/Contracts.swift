import HotspotCore

// Facts hotspotd, its station, the helper SDK and the lab share. They live here, in the pure protocol
// layer, so that a reader of a trace (the lab) or a sender of command traffic (a helper) need not link
// the daemon or the station to know them.

/// The trace format (docs/TRACE.md) hotspotd writes; in every `start` record. A replay refuses a newer one.
public let traceFormatVersion = 1

/// The SO_MARK of the sockets a helper uses for its commands (0x4853, "HS"). The station's IP suppression
/// (policy routing, docs/STATION.md) lets exactly these through; it also numbers its suppression table
/// with it.
public let commandTrafficMark: UInt32 = 0x4853

/// How wpa_supplicant's text replies (`STATUS`, `SCAN_RESULTS`, `SIGNAL_POLL`) read as hotspot facts.
public enum WPAText {
    /// A `key_mgmt` value (`WPA2-PSK`, `SAE`, `WPA2/IEEE 802.1X/EAP`, `NONE`) or a scan result's flags
    /// (`[WPA2-PSK-CCMP][ESS]`) as a security type.
    public static func security(keyMgmt: String) -> SecurityType {
        let k = keyMgmt.uppercased()
        if k.contains("EAP") || k.contains("802.1X") { return .wpa2Enterprise }
        if k.contains("PSK") || k.contains("SAE") { return .wpa2Personal }
        return .open
    }

    /// RSSI in dBm as 0.0 ... 1.0 (-90 dBm or less is 0, -30 dBm or more is 1).
    public static func strength(rssi: Double) -> Double {
        min(1, max(0, (rssi + 90) / 60))
    }
}
