import HotspotCore
import HotspotProtocol
import LabTopology
/// wpa_supplicant.conf for a station: its known networks, all `disabled=1` (the lab decides when the
/// device joins), `id_str "manual"` for those the topology marks `auto-join: false`.
public enum WPASupplicantConfig {
    public static func render(_ station: Station, topology: Topology, controlDirectory: String, labLogDirectory: String) throws -> String {
        var lines = ["ctrl_interface=\(controlDirectory)", "ap_scan=1", "update_config=0", ""]
        for known in station.knownNetworks {
            guard let hotspot = topology.hotspots.first(where: { $0.rawSSID == known.rawSSID }) else { continue }
            // A PSK network without its psk is not written (wpa_supplicant refuses such a block): joining it
            // adds it with the password a helper set in its filterScanList answer.
            if case .wpa2PSK = hotspot.security, known.psk == nil { continue }
            // The SSID as quoted text, or as hex for any other bytes (WPAText.networkValue).
            var block = ["ssid=\(WPAText.networkValue(known.rawSSID))", "scan_ssid=\(hotspot.hidden ? 1 : 0)", "scan_freq=\(hotspot.scanFrequencies)",
                         "disabled=1", "id_str=\"\(known.autoJoin ? "auto" : "manual")\""]
            switch hotspot.security {
            case .open:
                block.append("key_mgmt=NONE")
            case .wpa2PSK:
                block += ["key_mgmt=WPA-PSK", "proto=RSN", "pairwise=CCMP"]
                if let psk = known.psk { block.append("psk=\"\(psk)\"") }
            case .wpa2Enterprise(let method, _):
                block += ["key_mgmt=WPA-EAP", "identity=\"\(known.identity ?? "")\"", "password=\"\(known.password ?? "")\""]
                switch method {
                case .peap: block += ["eap=PEAP", "phase2=\"auth=MSCHAPV2\"", "ca_cert=\"\(labLogDirectory)/\(hotspot.name)/server.pem\""]
                case .pwd: block.append("eap=PWD")
                }
            }
            lines.append("network={")
            lines += block.map { "    " + $0 }
            lines.append("}")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
