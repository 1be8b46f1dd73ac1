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
        var text = String(decoding: labCA, as: UTF8.self)
        if !text.hasSuffix("\n") { text += "\n" }
        if let system = FileManager.default.contents(atPath: systemStore) { text += String(decoding: system, as: UTF8.self) }
        do { try text.write(toFile: bundle, atomically: true, encoding: .utf8) } catch {
            throw SystemError("write the CA bundle", bundle, reason: "\(error)")
        }
        return bundle
    }

    /// The lab CA's private key (the internet's HTTPS issues its certificates with it).
    public static func caKey(labLogDirectory: String) -> String { labLogDirectory + "/tls/ca.key" }

    /// Inside the hotspot-lab VM: one CA per boot, made by the first lab and copied by the others (its tmpfs /run is
    /// fresh at every boot). `openssl req` took about 0.35 s of every lab's bring-up under TCG (issue 19, "bench
    /// profile"), and an in-VM test run brings up about ninety labs. On a host every lab makes its own.
    static let bootCADirectory = "/run/hotspot-lab-boot-ca"

    /// Makes the lab's throwaway CA (valid two days) in `<labLogDirectory>/tls/`, unless it is there already; in the
    /// VM a copy of the boot's CA (`bootCADirectory`).
    @discardableResult
    public static func makeCA(labLogDirectory: String, openssl: String) throws -> String {
        let dir = labLogDirectory + "/tls"
        let cert = caFile(labLogDirectory: labLogDirectory)
        if FileManager.default.fileExists(atPath: cert) { return cert }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        if InVM.isActive {
            let boot = try bootCA(openssl: openssl)
            for name in ["ca.key", "ca.pem"] {
                try? FileManager.default.removeItem(atPath: dir + "/" + name)
                do { try FileManager.default.copyItem(atPath: boot + "/" + name, toPath: dir + "/" + name) } catch {
                    throw SystemError("copy the boot's lab CA", boot + "/" + name, reason: "\(error)")
                }
            }
            return cert
        }
        return try makeCA(in: dir, name: (labLogDirectory as NSString).lastPathComponent, openssl: openssl)
    }

    /// The boot's CA folder, made once: in a folder of its own first, then renamed into place (two labs starting
    /// at once: the second rename fails and that lab uses the first one's).
    static func bootCA(openssl: String) throws -> String {
        let final = bootCADirectory
        if FileManager.default.fileExists(atPath: final + "/ca.pem") { return final }
        let staging = final + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        _ = try makeCA(in: staging, name: "boot", openssl: openssl)
        if rename(staging, final) != 0 {
            let error = errno
            try? FileManager.default.removeItem(atPath: staging)
            guard FileManager.default.fileExists(atPath: final + "/ca.pem") else {
                throw SystemError("rename", staging + " to " + final, errno: error)
            }
        }
        return final
    }

    /// `openssl req -x509`: a CA key and certificate (ca.key, ca.pem) in `dir`.
    static func makeCA(in dir: String, name: String, openssl: String) throws -> String {
        let cert = dir + "/ca.pem"
        try run(openssl, [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", dir + "/ca.key", "-out", cert + ".tmp", "-days", "2",
            "-subj", "/CN=HotspotLab throwaway CA \(name)",
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
