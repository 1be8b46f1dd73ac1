import Foundation
import Synchronization

/// The lab internet's HTTPS: a server certificate per SNI name, issued on first use by the lab CA (the `openssl`
/// command, as `PortalTLS` makes the portal's), cached for the process's life in `directory`.
public final class TLSCertificateIssuer: Sendable {
    public let caCertificate: String
    public let caKey: String
    public let openssl: String
    public let directory: String
    /// Held while a certificate is issued: two first handshakes for one name issue it once.
    private let contexts = Synchronization.Mutex<[String: TLSServerContext]>([:])

    public init(caCertificate: String, caKey: String, openssl: String, directory: String) {
        self.caCertificate = caCertificate
        self.caKey = caKey
        self.openssl = openssl
        self.directory = directory
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
                logLine("[tls] SNI \(name ?? "(none)"): \(error)")
                return nil
            }
        }
        return context
    }

    /// One `openssl req -x509 -CA` run (OpenSSL 3): a new key and the certificate the CA signs for `name`.
    func issue(_ name: String) throws -> (certificate: String, key: String) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let base = directory + "/" + name
        let certificate = base + ".pem", key = base + ".key"
        let san = Self.isIPv4(name) || name.contains(":") ? "IP:\(name)" : "DNS:\(name)"   // an IPv6 literal has colons, a name none
        let serial = (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 1...255)) }.joined()
        try run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                 "-CA", caCertificate, "-CAkey", caKey, "-set_serial", "0x" + serial, "-days", "2", "-subj", "/CN=\(name)",
                 "-addext", "subjectAltName=\(san)", "-addext", "basicConstraints=critical,CA:FALSE",
                 "-addext", "keyUsage=critical,digitalSignature", "-addext", "extendedKeyUsage=serverAuth", "-out", certificate],
                what: "issue the certificate of \(name) with \(caCertificate)")
        logLine("[tls] issued a certificate for \(name)")
        return (certificate, key)
    }

    func run(_ arguments: [String], what: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw TLSServerError(operation: what, object: "with \(openssl)", cause: "\(error)")
        }
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TLSServerError(operation: what, object: "with \(openssl) \(arguments.first ?? "")",
                                 cause: "exit \(process.terminationStatus): " + text.split(separator: "\n").suffix(3).joined(separator: " | "))
        }
    }
}
