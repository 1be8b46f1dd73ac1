import Foundation
import HotspotSystem

/// The https-only portal (portal setting `https-only: "true"`, docs/TOPOLOGY.md): a throwaway CA per lab, a
/// server certificate per hotspot for the portal's DNS name, and the names and ports involved. Made with the
/// `openssl` command (as the PEAP certificate is).
public enum PortalTLS {
    /// The portal setting that turns it on.
    public static let setting = "https-only"
    /// The TLS port on the gateway address (the gate lets unauthenticated clients reach it).
    public static let port = 443

    /// True when the portal settings ask for HTTPS only (`https-only: "true"`).
    public static func isHTTPSOnly(_ settings: [String: String]) -> Bool { settings[setting] == "true" }

    /// Checks the setting's value: `true` or `false`; nil when valid.
    public static func problem(_ value: String) -> String? {
        value == "true" || value == "false" ? nil : "expected \"true\" or \"false\", found `\(value)`"
    }

    /// `portal.<hotspot>.example`: the name on the certificate; the hotspot's dnsmasq resolves it to the gateway.
    public static func hostName(hotspot: String) -> String { "portal.\(hotspot).example" }

    /// `https://portal.<hotspot>.example/`
    public static func url(hotspot: String) -> String { "https://\(hostName(hotspot: hotspot))/" }

    /// The lab's CA certificate (what `HOTSPOT_CA_FILE` names for the station's helpers).
    public static func caFile(labLogDirectory: String) -> String { labLogDirectory + "/tls/ca.pem" }

    /// The CA bundle for tools in a station (curl, OpenSSL, Python): the lab CA, then the system store's CAs.
    public static func caBundle(labLogDirectory: String) -> String { labLogDirectory + "/tls/ca-bundle.pem" }

    /// The environment variables a station's helpers get set to `caBundle` (curl, OpenSSL, Python requests).
    public static let bundleVariables = ["SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"]

    /// The system store that `caBundle` appends to the lab CA (when it exists).
    public static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

    /// Writes `caBundle` from the lab CA and `systemStore`; returns its path.
    @discardableResult
    public static func makeCABundle(labLogDirectory: String, systemStore: String = systemBundle) throws -> String {
        let ca = caFile(labLogDirectory: labLogDirectory)
        let bundle = caBundle(labLogDirectory: labLogDirectory)
        guard let labCA = FileManager.default.contents(atPath: ca) else {
            throw SystemError("make the CA bundle", bundle, reason: "the lab CA \(ca) cannot be read")
        }
        // Bytes, not text: the system store is about 200 KB, and decoding and re-encoding it cost a visible share of
        // a lab's start in a debug build under TCG.
        var bytes = labCA
        if bytes.last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
        if let system = FileManager.default.contents(atPath: systemStore) { bytes.append(system) }
        do { try bytes.write(to: URL(fileURLWithPath: bundle), options: .atomic) } catch {
            throw SystemError("write the CA bundle", bundle, reason: "\(error)")
        }
        return bundle
    }

    /// The lab CA's private key (the internet's HTTPS issues its certificates with it).
    public static func caKey(labLogDirectory: String) -> String { labLogDirectory + "/tls/ca.key" }
}
