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

    @Test("wpa_supplicant's printf_encode decoded to the SSID's bytes (golden lines as wpa_supplicant prints them)")
    func printfDecode() {
        #expect(WPAText.ssid(printfEncoded: "Cafe Lumiere").bytes == Array("Cafe Lumiere".utf8))
        #expect(WPAText.ssid(printfEncoded: #"Caf\xe9"#).bytes == [0x43, 0x61, 0x66, 0xE9])
        #expect(WPAText.ssid(printfEncoded: #"Caf\xc3\xa9"#) == SSID("Café"))   // UTF-8 is escaped too
        #expect(WPAText.ssid(printfEncoded: #"a\\b\"c\n\r\t\e"#).bytes == [0x61, 0x5C, 0x62, 0x22, 0x63, 0x0A, 0x0D, 0x09, 0x1B])
        #expect(WPAText.ssid(printfEncoded: #"\x00\x00"#).bytes == [0, 0])
        #expect(WPAText.ssid(printfEncoded: #"\101\7"#).bytes == [0x41, 0x07])    // octal, as printf_decode reads it
        #expect(WPAText.ssid(printfEncoded: #"x\xg"#).bytes == [0x78, 0x67])     // \x without hex digits: dropped
        #expect(WPAText.ssid(printfEncoded: #"end\"#).bytes == Array(#"end\"#.utf8))
    }

    @Test("printf_encode and back: every byte value survives; the encoding is wpa_supplicant's (golden)")
    func printfRoundTrip() {
        let all = SSID(bytes: (0...255).map { UInt8($0) })
        #expect(WPAText.ssid(printfEncoded: WPAText.printfEncode(all)) == all)
        #expect(WPAText.printfEncode(SSID(bytes: [0x43, 0x61, 0x66, 0xE9, 0x22, 0x5C, 0x0A, 0x1B, 0x7F])) == #"Caf\xe9\"\\\n\e\x7f"#)
    }

    @Test("SET_NETWORK / wpa_supplicant.conf ssid values: quoted plain text, hex for anything else (golden)")
    func networkValue() {
        #expect(WPAText.networkValue("Cafe Lumiere") == "\"Cafe Lumiere\"")
        #expect(WPAText.networkValue("Café") == "\"Café\"")
        #expect(WPAText.networkValue(SSID(bytes: [0x43, 0x61, 0x66, 0xE9])) == "436166e9")
        #expect(WPAText.networkValue("say \"hi\"") == "7361792022686922")
        #expect(WPAText.networkValue("a\nb") == "610a62")
    }

    @Test("SCAN_RESULTS and LIST_NETWORKS lines: SSIDs decoded to bytes, tabs inside an SSID kept (golden)")
    func scanResultsAndNetworks() {
        let reply = """
            bssid / frequency / signal level / flags / ssid
            02:00:00:00:01:00\t2437\t-40\t[ESS]\tCaf\\xe9
            02:00:00:00:02:00\t2412\t-70\t[WPA2-PSK-CCMP][ESS]\tEvil\\nName
            02:00:00:00:03:00\t2462\t-50\t[ESS]\t\\x00\\x00
            """
        let results = WPAText.scanResults(reply)
        #expect(results.count == 3)
        #expect(results[0].ssid.bytes == [0x43, 0x61, 0x66, 0xE9] && results[0].frequency == 2437)
        #expect(results[0].network.rawSSID == results[0].ssid && results[0].network.security == .open)
        #expect(results[1].ssid == SSID("Evil\nName") && results[1].network.security == .wpa2Personal)
        #expect(results[2].ssid.bytes == [0, 0])
        let networks = WPAText.listNetworks("network id / ssid / bssid / flags\n0\tCaf\\xe9\tany\t[DISABLED]\n1\tHome\tany\t")
        #expect(networks.map(\.id) == ["0", "1"])
        #expect(networks[0].ssid.hex == "436166e9" && networks[0].flags == "[DISABLED]")
        #expect(networks[1].ssid == "Home")
    }

    @Test("SCAN_RESULTS as the networks a station shows: each BSSID once (case aside), hidden SSIDs (empty, NUL-filled) left out")
    func visibleNetworks() {
        let reply = """
            bssid / frequency / signal level / flags / ssid
            02:00:00:00:01:00\t2437\t-40\t[ESS]\tCafe
            02:00:00:00:01:00\t2437\t-41\t[ESS]\tCafe
            02:00:00:00:0A:00\t2437\t-45\t[ESS]\tLounge
            02:00:00:00:0a:00\t2437\t-45\t[ESS]\tLounge
            02:00:00:00:02:00\t2412\t-70\t[WPA2-PSK-CCMP][ESS]\tBank
            02:00:00:00:03:00\t2462\t-50\t[ESS]\t\\x00\\x00
            02:00:00:00:04:00\t2462\t-50\t[ESS]\t
            """
        let networks = WPAText.visibleNetworks(reply)
        #expect(networks.map(\.rawSSID) == [SSID("Cafe"), SSID("Lounge"), SSID("Bank")])
        #expect(networks.map(\.bssid) == ["02:00:00:00:01:00", "02:00:00:00:0A:00", "02:00:00:00:02:00"])
        #expect(networks[2].security == .wpa2Personal)
        // The same lines through scanResults keep every one: the filtering is visibleNetworks' own.
        #expect(WPAText.scanResults(reply).count == 7)
    }
}
