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

/// The station's DHCP lease file (docs/STATION.md): `key=value` lines (ip, subnet, mask, router, dns, lease,
/// serverid, opt114) that the DHCP client's script writes, hotspotd configures the interface from, and helpers read
/// through `$HOTSPOT_DHCP_LEASE`. One reader for both sides.
public enum DHCPLeaseFile {
    /// The lines as a dictionary: the value is everything after the first `=`, the line trimmed of spaces and tabs
    /// (lines end in LF, CR LF or CR); blank lines, `#` comments and lines without `=` are skipped; the last of a repeated key wins.
    public static func fields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for raw in text.split(whereSeparator: \.isNewline) {  // "\r\n" is one Character: splitting on "\n" keeps it
            let isSpace = { (c: Character) in c == " " || c == "\t" }
            guard let first = raw.firstIndex(where: { !isSpace($0) }), let last = raw.lastIndex(where: { !isSpace($0) }) else { continue }
            let line = raw[first...last]
            guard !line.hasPrefix("#"), let eq = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        return fields
    }
}

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

    /// An SSID as wpa_supplicant prints it (`STATUS` `ssid=`, `SCAN_RESULTS`, `LIST_NETWORKS`, events: its
    /// `wpa_ssid_txt`, i.e. `printf_encode`): bytes 0x20-0x7E as themselves except `\` and `"`, which are
    /// `\\` and `\"`; `\n` `\r` `\t` `\e`; every other byte (UTF-8 too) `\xNN`. Decoded as wpa_supplicant's
    /// own `printf_decode` does (octal `\NNN` too; an unknown escape is dropped).
    public static func ssid(printfEncoded text: Substring) -> SSID {
        let chars = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(chars.count)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            i += 1
            guard c == 0x5C, i < chars.count else {   // not a backslash (or a trailing one): itself
                out.append(c)
                continue
            }
            let e = chars[i]
            i += 1
            switch e {
            case 0x5C: out.append(0x5C)
            case 0x22: out.append(0x22)
            case 0x6E: out.append(0x0A)   // n
            case 0x72: out.append(0x0D)   // r
            case 0x74: out.append(0x09)   // t
            case 0x65: out.append(0x1B)   // e
            case 0x78:                    // x: one or two hex digits
                guard i < chars.count, let high = SSIDHex.value(chars[i]) else { break }
                i += 1
                if i < chars.count, let low = SSIDHex.value(chars[i]) {
                    out.append(high << 4 | low)
                    i += 1
                } else {
                    out.append(high)
                }
            case 0x30...0x37:             // octal, up to three digits
                var value = Int(e - 0x30)
                var digits = 1
                while digits < 3, i < chars.count, (0x30...0x37).contains(chars[i]) {
                    value = value * 8 + Int(chars[i] - 0x30)
                    i += 1
                    digits += 1
                }
                out.append(UInt8(truncatingIfNeeded: value))
            default: break
            }
        }
        return SSID(bytes: out)
    }

    public static func ssid(printfEncoded text: String) -> SSID { ssid(printfEncoded: text[...]) }

    /// An SSID as wpa_supplicant's `printf_encode` writes it (the inverse of `ssid(printfEncoded:)`).
    public static func printfEncode(_ ssid: SSID) -> String {
        var out = ""
        for b in ssid.bytes {
            switch b {
            case 0x5C: out += "\\\\"
            case 0x22: out += "\\\""
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x1B: out += "\\e"
            case 0x20...0x7E: out.unicodeScalars.append(Unicode.Scalar(b))
            default: out += "\\x" + SSID(bytes: [b]).hex
            }
        }
        return out
    }

    /// An SSID as a `SET_NETWORK ID ssid VALUE` value (and a wpa_supplicant.conf `ssid=`): quoted text for
    /// printable ASCII and UTF-8 without `"` or control characters (as before), else unquoted hex (any bytes).
    public static func networkValue(_ ssid: SSID) -> String {
        let plain = ssid.isUTF8 && !ssid.bytes.isEmpty && !ssid.bytes.contains { $0 < 0x20 || $0 == 0x7F || $0 == 0x22 || $0 == 0x5C }
        return plain ? "\"" + ssid.text + "\"" : ssid.hex
    }

    /// One line of `SCAN_RESULTS` (`bssid / frequency / signal level / flags / ssid`, tab-separated).
    public struct ScanResult: Sendable, Hashable {
        public var bssid: String
        public var frequency: Int?
        public var signalLevel: Double?
        public var flags: String
        public var ssid: SSID

        /// The network a helper is shown (the flags name the key management as STATUS's key_mgmt does).
        public var network: HotspotNetwork {
            HotspotNetwork(rawSSID: ssid, bssid: bssid, signalStrength: WPAText.strength(rssi: signalLevel ?? -60),
                           security: WPAText.security(keyMgmt: flags))
        }
    }

    /// `SCAN_RESULTS` (a header line, then one line per BSS), SSIDs decoded to their bytes.
    public static func scanResults(_ reply: String) -> [ScanResult] {
        reply.split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false)
            guard f.count >= 5 else { return nil }
            return ScanResult(bssid: String(f[0]), frequency: Int(f[1]), signalLevel: Double(f[2]), flags: String(f[3]),
                              ssid: ssid(printfEncoded: f[4]))
        }
    }

    /// `SCAN_RESULTS` as the networks a station shows (each BSSID once, SSIDs as their bytes); hidden SSIDs (empty, or
    /// NUL-filled) are skipped.
    public static func visibleNetworks(_ reply: String) -> [HotspotNetwork] {
        var seen = Set<String>()
        return scanResults(reply).compactMap { result -> HotspotNetwork? in
            guard let first = result.ssid.bytes.first, first != 0, seen.insert(result.bssid.lowercased()).inserted else { return nil }
            return result.network
        }
    }

    /// `LIST_NETWORKS` (`network id / ssid / bssid / flags`): id, SSID (decoded) and flags of each.
    public static func listNetworks(_ reply: String) -> [(id: String, ssid: SSID, flags: String)] {
        reply.split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard f.count >= 2 else { return nil }
            return (String(f[0]), ssid(printfEncoded: f[1]), f.count > 3 ? String(f[3]) : "")
        }
    }
}

enum SSIDHex {
    static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}
