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

    /// Makes the lab's throwaway CA (valid two days) in `<labLogDirectory>/tls/`, unless it is there already.
    @discardableResult
    public static func makeCA(labLogDirectory: String, openssl: String) throws -> String {
        let dir = labLogDirectory + "/tls"
        let cert = caFile(labLogDirectory: labLogDirectory)
        if FileManager.default.fileExists(atPath: cert) { return cert }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try run(openssl, [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", dir + "/ca.key", "-out", cert + ".tmp", "-days", "2",
            "-subj", "/CN=HotspotLab throwaway CA \((labLogDirectory as NSString).lastPathComponent)",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ], what: "make the lab CA in \(dir)")
        guard rename(cert + ".tmp", cert) == 0 else { throw SystemError.current("rename", cert + ".tmp") }
        return cert
    }

    /// A server certificate signed by the lab CA for `portal.<hotspot>.example` and the gateway address (valid two
    /// days), in the hotspot's folder: returns (certificate, key). Made once per hotspot and lab.
    public static func makeServerCertificate(labLogDirectory: String, hotspot: String, gatewayAddress: String,
                                             openssl: String) throws -> (certificate: String, key: String) {
        let ca = try makeCA(labLogDirectory: labLogDirectory, openssl: openssl)
        let dir = labLogDirectory + "/" + hotspot
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let cert = dir + "/portal-tls.pem"
        let key = dir + "/portal-tls.key"
        if FileManager.default.fileExists(atPath: cert), FileManager.default.fileExists(atPath: key) { return (cert, key) }
        let name = hostName(hotspot: hotspot)
        let csr = dir + "/portal-tls.csr"
        let ext = dir + "/portal-tls.ext"
        try run(openssl, ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                          "-keyout", key, "-out", csr, "-subj", "/CN=\(name)"], what: "make the portal key of \(hotspot)")
        try """
            subjectAltName=DNS:\(name),IP:\(gatewayAddress)
            basicConstraints=critical,CA:FALSE
            keyUsage=critical,digitalSignature
            extendedKeyUsage=serverAuth

            """.write(toFile: ext, atomically: true, encoding: .utf8)
        let serial = (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 1...255)) }.joined()
        try run(openssl, ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", labLogDirectory + "/tls/ca.key",
                          "-set_serial", "0x" + serial, "-days", "2", "-out", cert + ".tmp", "-extfile", ext],
                what: "sign the portal certificate of \(hotspot) for \(name)")
        guard rename(cert + ".tmp", cert) == 0 else { throw SystemError.current("rename", cert + ".tmp") }
        return (cert, key)
    }

    static func run(_ openssl: String, _ arguments: [String], what: String) throws {
        let result = try ProcessRunner.run(ProcessConfiguration(openssl, arguments), timeout: .seconds(30))
        guard result.status.succeeded else {
            throw SystemError(what, "with \(openssl) \(arguments.first ?? "")",
                              reason: "\(result.status): " + result.stderr.split(separator: "\n").suffix(3).joined(separator: " | "))
        }
    }
}
