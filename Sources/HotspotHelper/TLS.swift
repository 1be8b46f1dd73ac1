#if canImport(Glibc)
import Glibc
#endif
import COpenSSL
import CTLSShim
import HotspotSystem

// `https://` for command traffic: TLS (the system OpenSSL) over a `HotspotTCPConnection`, so the socket keeps
// its SO_MARK, and every step (handshake, reads, writes) waits only until the request's deadline.

/// What `https://` servers are verified against.
public enum HotspotTLSTrust: Sendable, Equatable {
    /// The system's store (OpenSSL's default paths; /etc/ssl/certs on Debian).
    case system
    /// A PEM file of CA certificates (in the lab: its throwaway CA, `$HOTSPOT_CA_FILE`).
    case caFile(String)

    /// `$HOTSPOT_CA_FILE` when set and not empty, else the system store.
    public static var fromEnvironment: HotspotTLSTrust {
        HotspotHelperEnvironment.caFile.map { .caFile($0) } ?? .system
    }

    var words: String {
        switch self {
        case .system: return "the system trust store"
        case .caFile(let path): return "the CA file \(path)"
        }
    }
}

/// What a TLS client learned of the server during the handshake: who it is and whether its certificate verified
/// (chain against the trust anchors, leaf naming the host). Handed to `HotspotHTTPClient.serverTrust`, which
/// decides whether to go on (the compat module's server-trust challenge).
public struct HotspotServerTrust: Sendable, Equatable {
    /// The host name (or IPv4 literal) asked for, and the port.
    public var host: String
    public var port: UInt16
    /// The verification failure in words (`certificate verify failed: self-signed certificate (X509 verify error
    /// 18)`), nil when the certificate verified.
    public var failure: String?

    public init(host: String, port: UInt16, failure: String?) {
        self.host = host
        self.port = port
        self.failure = failure
    }

    /// Whether the certificate verified.
    public var verified: Bool { failure == nil }
}

/// One TLS client connection. The chain must verify against the trust anchors and the leaf must name the host
/// (`SSL_set1_host`; an IPv4 or IPv6 literal is checked against the certificate's IP addresses). TLS 1.2 or later.
/// With a `decide` function the handshake completes whatever the verification says and `decide` is asked
/// (false: the handshake fails with the verification failure, or "rejected" when it verified).
final class HotspotTLSConnection: TrafficStream {
    let tcp: HotspotTCPConnection
    private var context: OpaquePointer?
    private var ssl: OpaquePointer?
    /// `host:port` (with the address when the host is a name), for messages.
    let target: String

    private init(tcp: HotspotTCPConnection, context: OpaquePointer, ssl: OpaquePointer) {
        self.tcp = tcp
        self.context = context
        self.ssl = ssl
        target = tcp.target
    }

    deinit { close() }

    /// Makes the TLS session over `tcp` (connected, nonblocking) and completes the handshake before `deadline`.
    /// Errors: `TLS handshake with HOST:PORT (ADDR): certificate verify failed: hostname mismatch`, ... ETIMEDOUT.
    static func handshake(over tcp: HotspotTCPConnection, serverName: String, trust: HotspotTLSTrust,
                          deadline: TrafficDeadline,
                          decide: (@Sendable (HotspotServerTrust) -> Bool)? = nil) throws(HotspotTrafficError) -> HotspotTLSConnection
    {
        let target = tcp.target
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw HotspotTrafficError("create a TLS context for", target, detail: drainErrors() ?? "SSL_CTX_new failed")
        }
        _ = hsl_SSL_CTX_set_min_proto_version(context, hsl_TLS1_2_VERSION())
        hsl_SSL_CTX_ignore_unexpected_eof(context)
        hsl_SSL_CTX_set_nonblocking_modes(context)
        switch trust {
        case .system:
            if SSL_CTX_set_default_verify_paths(context) != 1 {
                SSL_CTX_free(context)
                throw HotspotTrafficError("load \(trust.words) for", target, detail: drainErrors() ?? "SSL_CTX_set_default_verify_paths failed")
            }
        case .caFile(let path):
            if SSL_CTX_load_verify_locations(context, path, nil) != 1 {
                SSL_CTX_free(context)
                let why = access(path, R_OK) == 0 ? (drainErrors() ?? "not a PEM file of certificates") : Errno.text(Errno.current)
                throw HotspotTrafficError("load \(trust.words) (\(HotspotHelperEnvironment.caFileVariable)) for", target, detail: why)
            }
        }
        guard let ssl = SSL_new(context) else {
            SSL_CTX_free(context)
            throw HotspotTrafficError("create a TLS session for", target, detail: drainErrors() ?? "SSL_new failed")
        }
        let connection = HotspotTLSConnection(tcp: tcp, context: context, ssl: ssl)
        // With `decide`, OpenSSL still verifies (and keeps the result) but does not end the handshake on a failure.
        SSL_set_verify(ssl, decide == nil ? hsl_SSL_VERIFY_PEER() : 0, nil)
        let nameOK: Int32
        if parseIPv4(serverName) != nil || IPLiteral.ipv6(serverName) != nil {
            // An address (IPv4, or IPv6 as a URL's [host] gives it): checked against the certificate's IP addresses,
            // and no SNI (RFC 6066 3: literal addresses are not sent as a server name).
            nameOK = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), IPLiteral.ipv6(serverName) ?? serverName)
        } else {
            nameOK = SSL_set1_host(ssl, serverName) == 1 && hsl_SSL_set_tlsext_host_name(ssl, serverName) == 1 ? 1 : 0
        }
        guard nameOK == 1 else {
            throw HotspotTrafficError("set the expected host name \(serverName) for", target, detail: drainErrors() ?? "rejected by OpenSSL")
        }
        guard SSL_set_fd(ssl, tcp.fd) == 1 else {
            throw HotspotTrafficError("attach TLS to the socket of", target, detail: drainErrors() ?? "SSL_set_fd failed")
        }
        while true {
            ERR_clear_error()
            let rc = hsl_SSL_connect(ssl)
            if rc == 1 {
                guard let decide else { return connection }
                let verify = SSL_get_verify_result(ssl)
                let failure = verify == hsl_X509_V_OK() ? nil
                    : "certificate verify failed: \(String(cString: X509_verify_cert_error_string(verify))) (X509 verify error \(verify))"
                if decide(HotspotServerTrust(host: serverName, port: tcp.port, failure: failure)) { return connection }
                throw HotspotTrafficError("TLS handshake with", target, detail: failure ?? "the server's certificate was rejected")
            }
            let code = SSL_get_error(ssl, rc)
            guard try connection.waited(for: code, "TLS handshake with", deadline) else {
                throw connection.failure("TLS handshake with", code: code, rc: rc)
            }
        }
    }

    /// Waits for the socket as OpenSSL asked (`SSL_ERROR_WANT_READ`/`WANT_WRITE`) until the deadline; false for
    /// any other code, which the caller handles.
    private func waited(for code: Int32, _ operation: String, _ deadline: TrafficDeadline) throws(HotspotTrafficError) -> Bool {
        let events: Int32
        switch code {
        case SSL_ERROR_WANT_READ: events = POLLIN
        case SSL_ERROR_WANT_WRITE: events = POLLOUT
        default: return false
        }
        guard deadline.wait(tcp.fd, Int16(events)) else { throw deadline.timedOut(operation, target) }
        return true
    }

    /// The cause of a failed SSL_* call: the verify result when the chain or name did not verify, else
    /// OpenSSL's error queue, else errno, else the peer closing.
    private func failure(_ operation: String, code: Int32, rc: Int32) -> HotspotTrafficError {
        let errno = Errno.current
        if let ssl {
            let verify = SSL_get_verify_result(ssl)
            if verify != hsl_X509_V_OK() {
                let text = String(cString: X509_verify_cert_error_string(verify))
                _ = Self.drainErrors()
                return HotspotTrafficError(operation, target, detail: "certificate verify failed: \(text) (X509 verify error \(verify))")
            }
        }
        if let queue = Self.drainErrors() { return HotspotTrafficError(operation, target, detail: queue) }
        if code == SSL_ERROR_SYSCALL, errno != 0 { return HotspotTrafficError(operation, target, errno: errno) }
        if code == SSL_ERROR_SYSCALL || code == SSL_ERROR_ZERO_RETURN || rc == 0 {
            return HotspotTrafficError(operation, target, detail: "the server closed the connection (not a TLS server?)")
        }
        return HotspotTrafficError(operation, target, detail: "SSL error \(code)")
    }

    /// OpenSSL's error queue as text (emptied), nil when empty.
    static func drainErrors() -> String? {
        var buffer = [CChar](repeating: 0, count: 1024)
        let count = hsl_drain_errors(&buffer, buffer.count)
        guard count > 0 else { return nil }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    func write(_ bytes: [UInt8], deadline: TrafficDeadline) throws(HotspotTrafficError) {
        guard let ssl else { throw HotspotTrafficError("send to", target, errno: EBADF) }
        var offset = 0
        while offset < bytes.count {
            ERR_clear_error()
            let n = bytes.withUnsafeBytes { p in hsl_SSL_write(ssl, p.baseAddress! + offset, Int32(p.count - offset)) }
            if n > 0 {
                offset += Int(n)
                continue
            }
            let code = SSL_get_error(ssl, n)
            guard try waited(for: code, "send to", deadline) else { throw failure("send to", code: code, rc: n) }
        }
    }

    func read(maximum: Int, deadline: TrafficDeadline) throws(HotspotTrafficError) -> [UInt8] {
        guard let ssl else { throw HotspotTrafficError("read from", target, errno: EBADF) }
        var buffer = [UInt8](repeating: 0, count: max(1, min(maximum, Int(Int32.max))))
        while true {
            ERR_clear_error()
            let n = buffer.withUnsafeMutableBytes { hsl_SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n > 0 { return Array(buffer[0..<Int(n)]) }
            let code = SSL_get_error(ssl, n)
            switch code {
            case SSL_ERROR_ZERO_RETURN:
                return []
            case SSL_ERROR_SYSCALL where Errno.current == 0 && ERR_peek_error() == 0:
                return [] // the peer closed the TCP connection
            default:
                guard try waited(for: code, "read from", deadline) else { throw failure("read from", code: code, rc: n) }
            }
        }
    }

    /// Sends close_notify when it can without waiting, frees the session; the TCP socket is the caller's.
    func close() {
        if let ssl {
            ERR_clear_error()
            _ = hsl_SSL_shutdown(ssl)
            SSL_free(ssl)
            self.ssl = nil
        }
        if let context {
            SSL_CTX_free(context)
            self.context = nil
        }
        ERR_clear_error()
    }
}
