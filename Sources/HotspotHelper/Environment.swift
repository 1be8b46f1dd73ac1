#if canImport(Glibc)
import Glibc
#endif
import HotspotProtocol
import HotspotSystem

/// What the station tells a helper through its environment (docs/PROTOCOL.md, "Helper environment"):
///
/// | variable | what |
/// |---|---|
/// | `HOTSPOT_HELPER_SOCKET` | hotspotd's helper socket |
/// | `HOTSPOT_RESOLV_CONF` | a file of `nameserver A.B.C.D` lines: the DNS servers of the current network |
/// | `HOTSPOT_DHCP_LEASE` | a file of `key=value` lines from the DHCP client: ip, subnet, router, dns, opt114; on an IPv6-only network hotspotd's ip6, router6, dns, ra37 |
/// | `HOTSPOT_HELPER_UI` | a directory; the user's typing arrives as the file `input` in it |
/// | `HOTSPOT_PROBE_URL` | the connectivity probe (default Apple's) |
/// | `HOTSPOT_CA_FILE` | a PEM file of CA certificates `https://` servers are verified against (default: the system store) |
public enum HotspotHelperEnvironment {
    public static let caFileVariable = "HOTSPOT_CA_FILE"
    public static let resolvConfVariable = "HOTSPOT_RESOLV_CONF"
    public static let dhcpLeaseVariable = "HOTSPOT_DHCP_LEASE"
    public static let uiDirectoryVariable = "HOTSPOT_HELPER_UI"
    public static let probeURLVariable = "HOTSPOT_PROBE_URL"

    public static let defaultResolvConf = "/etc/resolv.conf"
    public static let defaultProbeURL = "http://captive.apple.com/hotspot-detect.html"
    /// Apple's success page: the probe answers exactly this when the internet is reachable.
    public static let probeSuccessBody = "<HTML><HEAD><TITLE>Success</TITLE></HEAD><BODY>Success</BODY></HTML>"
    /// The file in `$HOTSPOT_HELPER_UI` the user's input arrives in.
    public static let uiInputFile = "input"

    static func variable(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }

    /// `$HOTSPOT_CA_FILE`: the trust anchors for `https://` (nil: the system store; see `HotspotTLSTrust`).
    public static var caFile: String? { variable(caFileVariable) }

    /// `$HOTSPOT_PROBE_URL`, else Apple's probe.
    public static var probeURL: String { variable(probeURLVariable) ?? defaultProbeURL }

    /// True when `body` is the probe's success page (surrounding white space ignored).
    public static func isProbeSuccess(_ body: String) -> Bool {
        trimmed(body) == probeSuccessBody
    }

    /// `$HOTSPOT_RESOLV_CONF`, else /etc/resolv.conf.
    public static var resolvConfPath: String { variable(resolvConfVariable) ?? defaultResolvConf }

    /// The nameservers of `resolvConfPath` (an unreadable file names none).
    public static func nameservers() -> [String] {
        parseResolvConf(readSmallFile(resolvConfPath) ?? "")
    }

    /// `nameserver ADDRESS` lines, IPv4 or IPv6 (others, comments and scoped link-local servers are skipped).
    public static func parseResolvConf(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard fields.count >= 2, fields[0] == "nameserver", !fields[1].hasPrefix("["), IPLiteral(String(fields[1])) != nil else { return nil }
            return String(fields[1])
        }
    }

    /// `$HOTSPOT_DHCP_LEASE`, nil when not set.
    public static var dhcpLeasePath: String? { variable(dhcpLeaseVariable) }

    /// The current lease (`ip`, `subnet`, `router`, `dns`, `opt114`, ...); empty when there is none.
    public static func dhcpLease() -> [String: String] {
        guard let path = dhcpLeasePath, let text = readSmallFile(path) else { return [:] }
        return parseLease(text)
    }

    /// `key=value` lines; the value is everything after the first `=` (blank lines and `#` comments skipped):
    /// `DHCPLeaseFile.fields`, the reader hotspotd uses too.
    public static func parseLease(_ text: String) -> [String: String] { DHCPLeaseFile.fields(text) }

    /// The RFC 8910 captive portal API URI of the current lease, nil when not announced: DHCPv4 option 114
    /// (`opt114`), else the Router Advertisement's option 37 (`ra37`, written by hotspotd on an IPv6-only network).
    public static func captivePortalAPI(lease: [String: String]? = nil) -> String? {
        let fields = lease ?? dhcpLease()
        if let value = fields["opt114"], let uri = decodeOption114(value) { return uri }
        guard let value = fields["ra37"] else { return nil }
        let uri = trimmed(value)
        return uri.isEmpty ? nil : uri
    }

    /// busybox udhcpc exports option 114 as hex (`687474703a2f2f...`); other clients give the text itself.
    /// Returns the URI, nil for an empty value.
    public static func decodeOption114(_ value: String) -> String? {
        let v = trimmed(value)
        guard !v.isEmpty else { return nil }
        let digits = Array(v.utf8)
        let isHex = digits.count % 2 == 0 && digits.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0)
        }
        guard isHex else { return v }
        func nibble(_ c: UInt8) -> UInt8 { c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10 }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) { bytes.append(nibble(digits[i]) << 4 | nibble(digits[i + 1])) }
        while bytes.last == 0 { bytes.removeLast() }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    /// `$HOTSPOT_HELPER_UI`, nil when the station offers no UI.
    public static var uiDirectory: String? { variable(uiDirectoryVariable) }

    /// `$HOTSPOT_HELPER_UI/input`.
    public static var uiInputPath: String? { uiDirectory.map { $0 + "/" + uiInputFile } }

    /// Waits for the user's input (presentUI): polls `DIRECTORY/input` (default `$HOTSPOT_HELPER_UI`) every
    /// `pollInterval`, and once it is there reads it, removes it and returns its text without the trailing
    /// newline. Nil when there is no UI directory, when `timeout` passes, or when `stop` returns true (e.g.
    /// `{ command.isCancelled }`). Whoever writes the file should write it elsewhere and rename it into place.
    public static func waitForUserInput(directory: String? = nil, pollInterval: Duration = .milliseconds(50),
                                        timeout: Duration? = nil, stop: () -> Bool = { false }) -> String?
    {
        guard let directory = directory ?? uiDirectory else { return nil }
        let path = directory + "/" + uiInputFile
        let end = timeout.map { SystemMonotonicClock.read() + $0 }
        while true {
            if access(path, F_OK) == 0, let text = readSmallFile(path) {
                unlink(path)
                var t = text
                while t.hasSuffix("\n") || t.hasSuffix("\r") { t.removeLast() }
                return t
            }
            if stop() { return nil }
            if let end, SystemMonotonicClock.read() >= end { return nil }
            var ts = timespec(tv_sec: Int(pollInterval.components.seconds),
                              tv_nsec: Int(pollInterval.components.attoseconds / 1_000_000_000))
            nanosleep(&ts, nil)
        }
    }

    static func trimmed(_ s: String) -> String {
        let isSpace = { (c: Character) in c == " " || c == "\t" || c == "\n" || c == "\r" }
        guard let first = s.firstIndex(where: { !isSpace($0) }), let last = s.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(s[first...last])
    }
}
