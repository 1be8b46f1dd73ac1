import Foundation
import HotspotSystem
import LabTopology
import LabVM
import Portals

/// `PortalTLS`'s certificates (LabTopology has its names and settings): the lab CA, made with the `openssl` command
/// (on the host, or once per VM boot), and the portal's server certificate, issued in process by the CA
/// (`TLSCertificateIssuer.issueServerCertificate`).
extension PortalTLS {
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
        if let shared = sharedBootCA() { return shared }
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

    /// The folder of the VM's results share that holds the boot's CA when the host made it (`prepareBootCA`).
    public static let bootCAShareFolder = "boot-ca"

    /// Inside the VM: the CA the host made in the results share before the boot, if it did.
    static func sharedBootCA(share: String? = InVM.resultsDirectory) -> String? {
        guard let share else { return nil }
        let dir = share + "/" + bootCAShareFolder
        let files = FileManager.default
        return files.fileExists(atPath: dir + "/ca.pem") && files.fileExists(atPath: dir + "/ca.key") ? dir : nil
    }

    /// On the host, before a VM run: the boot's CA made in `<share>/boot-ca` with the host's openssl (milliseconds
    /// here), which the first lab inside takes instead of running `openssl req` under TCG (0.3-0.5 s of its bring-up,
    /// and twice when two labs start at once: bench/README.md, stop 40). Throws when it cannot be made; the caller
    /// says so and the VM makes its own as before.
    public static func prepareBootCA(share: String, openssl: String) throws {
        let dir = share + "/" + bootCAShareFolder
        do { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
            throw SystemError("create the boot CA's folder", dir, reason: "\(error)")
        }
        _ = try makeCA(in: dir, name: "boot", openssl: openssl)
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
        // In this process (libcrypto), not two openssl runs: each was a process start under the VM's emulation.
        try TLSCertificateIssuer.issueServerCertificate(name: name, subjectAltName: "DNS:\(name),IP:\(gatewayAddress)",
                                                        caCertificate: ca, caKey: labLogDirectory + "/tls/ca.key",
                                                        certificate: cert + ".tmp", key: key)
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
