import HotspotCore
import HotspotProtocol
import HotspotStation
import Testing

/// The pure parts of the station (no root): wpa_supplicant's text as hotspot facts, and the mark numbers.
@Suite("wpa_supplicant text and the command traffic mark")
struct WPATextTests {
    @Test("key_mgmt and RSSI as the network a helper sees")
    func securityAndStrength() {
        #expect(WPAText.security(keyMgmt: "NONE") == .open)
        #expect(WPAText.security(keyMgmt: "WPA2-PSK") == .wpa2Personal)
        #expect(WPAText.security(keyMgmt: "WPA-PSK") == .wpa2Personal)
        #expect(WPAText.security(keyMgmt: "WPA2/IEEE 802.1X/EAP") == .wpa2Enterprise)
        #expect(WPAText.security(keyMgmt: "WPA-EAP") == .wpa2Enterprise)
        #expect(WPAText.security(keyMgmt: "[WPA2-PSK-CCMP][ESS]") == .wpa2Personal)
        #expect(WPAText.security(keyMgmt: "SAE") == .wpa2Personal)
        #expect(WPAText.strength(rssi: -30) == 1)
        #expect(WPAText.strength(rssi: -95) == 0)
        #expect(abs(WPAText.strength(rssi: -60) - 0.5) < 1e-9)
    }

    @Test("the suppression lets exactly the helpers' mark through (0x4853, the one shared definition)")
    func markRuleUsesTheSharedMark() {
        #expect(commandTrafficMark == 0x4853)
        #expect(IPSuppression.commandTrafficMark == commandTrafficMark)
        #expect(IPSuppression.table == 18515)
    }
}
