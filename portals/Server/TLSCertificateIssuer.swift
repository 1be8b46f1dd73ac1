import CTLSShim
import Foundation
import Synchronization

/// The lab internet's HTTPS: a server certificate per SNI name, issued on first use by the lab CA (in this process,
/// with libcrypto: `hsl_issue_certificate`), cached for the process's life in `directory`.
public final class TLSCertificateIssuer: Sendable {
    public let caCertificate: String
    public let caKey: String
    public let directory: String
    /// Where it says what it issued and what it could not (the process's standard output unless given).
    public let log: PortalLog
    /// Held while a certificate is issued: two first handshakes for one name issue it once.
    private let contexts = Synchronization.Mutex<[String: TLSServerContext]>([:])

    public init(caCertificate: String, caKey: String, directory: String, log: PortalLog = .standardOutput) {
        self.caCertificate = caCertificate
        self.caKey = caKey
        self.directory = directory
        self.log = log
    }

    /// A DNS name (letters, digits, `-`, `.`; at most 253 characters), an IPv4 address or an IPv6 address (in its
    /// canonical text, `::1`), lower-cased; nil otherwise.
    public static func normalizedName(_ name: String) -> String? {
        let lower = name.lowercased()
        if lower.contains(":") {
            var address = in6_addr()
            guard inet_pton(AF_INET6, lower, &address) == 1 else { return nil }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
            return String(cString: text)
        }
        guard !lower.isEmpty, lower.count <= 253, !lower.hasPrefix("."), !lower.hasPrefix("-"), !lower.contains(".."),
              lower.unicodeScalars.allSatisfy({ ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "." })
        else { return nil }
        return lower
    }

    static func isIPv4(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }

    /// The TLS context with a certificate for `name`, issued now if it is the first time.
    public func context(for name: String) throws -> TLSServerContext {
        guard let name = Self.normalizedName(name) else {
            throw TLSServerError(operation: "issue a certificate", object: "for `\(name)`", cause: "not a DNS name or an IP address")
        }
        return try contexts.withLock { contexts in
            if let context = contexts[name] { return context }
            let (certificate, key) = try issue(name)
            let context = try TLSServerContext(certificateFile: certificate, keyFile: key)
            contexts[name] = context
            return context
        }
    }

    /// The server's context: each name's certificate issued on its first handshake, `defaultName`'s for clients
    /// without SNI. Nothing is issued before the first client.
    public func serverContext(defaultName: String) throws -> TLSServerContext {
        let context = try TLSServerContext()
        context.selectCertificate { [self] name in
            do { return try self.context(for: name ?? defaultName) } catch {
                self.log.line("[tls] SNI \(name ?? "(none)"): \(error)")
                return nil
            }
        }
        return context
    }

    /// A new key and the certificate the CA signs for `name`, what `openssl req -x509 -CA -newkey ec` made (it was run
    /// here until stop 40: under the VM's emulation its process start cost 0.3-0.45 s on the first handshake of each
    /// name).
    func issue(_ name: String) throws -> (certificate: String, key: String) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let base = directory + "/" + name
        let certificate = base + ".pem", key = base + ".key"
        let san = Self.isIPv4(name) || name.contains(":") ? "IP:\(name)" : "DNS:\(name)"   // an IPv6 literal has colons, a name none
        try Self.issueServerCertificate(name: name, subjectAltName: san, caCertificate: caCertificate, caKey: caKey,
                                        certificate: certificate, key: key)
        log.line("[tls] issued a certificate for \(name)")
        return (certificate, key)
    }

    /// A TLS server's certificate for `name` (CN) with `subjectAltName` (`DNS:name`, `IP:address`, comma-separated),
    /// signed by the CA, valid two days, and its new P-256 key (mode 0600), written as PEM: what
    /// `openssl req -x509 -CA -newkey ec` makes, in this process (`hsl_issue_certificate`). The https-only portals'
    /// certificates (`PortalTLS`) are made the same way.
    public static func issueServerCertificate(name: String, subjectAltName: String, caCertificate: String, caKey: String,
                                              certificate: String, key: String, days: Int32 = 2) throws {
        var error = [CChar](repeating: 0, count: 1024)
        guard hsl_issue_certificate(caCertificate, caKey, name, subjectAltName, days, certificate, key, &error, error.count) == 1 else {
            throw TLSServerError(operation: "issue the certificate of \(name)", object: "with the CA \(caCertificate)",
                                 cause: String(cString: error))
        }
    }
}
