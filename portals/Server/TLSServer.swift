import COpenSSL
import PortalKinds
import CTLSShim
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The https-only portal: TLS terminated in this process (the system OpenSSL), so the portal still sees the
// client's own address as the TCP peer and the gate can let that client (IP and MAC) through.

public struct TLSServerError: Error, CustomStringConvertible {
    public var operation: String
    public var object: String
    public var cause: String
    public var description: String { "\(operation) \(object): \(cause)" }
}

/// A TLS server context: the certificate chain and key (PEM files), TLS 1.2 or later.
public final class TLSServerContext: @unchecked Sendable {  // @unchecked: an SSL_CTX is shared between connections as OpenSSL allows once it is set up (here, in init)
    let context: OpaquePointer

    public init(certificateFile: String, keyFile: String) throws {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw TLSServerError(operation: "create", object: "a TLS server context", cause: Self.errors())
        }
        _ = hsl_SSL_CTX_set_min_proto_version(ctx, hsl_TLS1_2_VERSION())
        hsl_SSL_CTX_ignore_unexpected_eof(ctx)
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else {
            SSL_CTX_free(ctx)
            throw TLSServerError(operation: "load the TLS certificate", object: certificateFile, cause: Self.errors())
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, hsl_SSL_FILETYPE_PEM()) == 1 else {
            SSL_CTX_free(ctx)
            throw TLSServerError(operation: "load the TLS private key", object: keyFile, cause: Self.errors())
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            SSL_CTX_free(ctx)
            throw TLSServerError(operation: "match the TLS private key \(keyFile) with", object: certificateFile, cause: Self.errors())
        }
        context = ctx
    }

    /// A context without a certificate of its own: every handshake takes the one `selectCertificate` chooses
    /// (the lab internet issues them on first use, so nothing is issued before the server listens).
    public init() throws {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw TLSServerError(operation: "create", object: "a TLS server context", cause: Self.errors())
        }
        _ = hsl_SSL_CTX_set_min_proto_version(ctx, hsl_TLS1_2_VERSION())
        hsl_SSL_CTX_ignore_unexpected_eof(ctx)
        context = ctx
    }

    deinit {
        SSL_CTX_free(context)
        selector?.release()
    }

    /// SNI: the client's server name picks the certificate. `choose` gives the context for a name (nil: a client
    /// that sent none), or nil to refuse the handshake with `unrecognized_name`. `choose` must keep the contexts
    /// it returns alive (a cache) while connections use them.
    private var selector: Unmanaged<ServerNameSelector>?

    public func selectCertificate(byServerName choose: @escaping @Sendable (String?) -> TLSServerContext?) {
        let box = Unmanaged.passRetained(ServerNameSelector(choose))
        selector?.release()
        selector = box
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_TLSEXT_SERVERNAME_ARG, 0, box.toOpaque())
        _ = SSL_CTX_callback_ctrl(context, SSL_CTRL_SET_TLSEXT_SERVERNAME_CB,
                                  unsafeBitCast(serverNameCallback, to: (@convention(c) () -> Void).self))
    }

    static func errors() -> String {
        var buffer = [CChar](repeating: 0, count: 1024)
        guard hsl_drain_errors(&buffer, buffer.count) > 0 else { return "no OpenSSL error (errno: \(String(cString: strerror(errno))))" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A TLS session over an accepted connection (the server's side of the handshake done in `init`).
final class TLSTransport: HTTPTransport {
    let ssl: OpaquePointer

    /// Accepts the handshake on `fd`; nil (logged with `peer`) when it fails.
    init?(fd: Int32, context: TLSServerContext, peer: String, logTag: String, log: PortalLog = .standardOutput) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { return nil }
        SSL_set_fd(ssl, fd)
        guard hsl_SSL_accept(ssl) == 1 else {
            log.line("\(logTag) handshake with \(peer) failed: \(TLSServerContext.errors())")
            ERR_clear_error()
            SSL_free(ssl)
            return nil
        }
        self.ssl = ssl
    }

    deinit {
        ERR_clear_error()
        SSL_free(ssl)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = hsl_SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if n > 0 { return Int(n) }
        let code = SSL_get_error(ssl, n)
        switch code {
        case SSL_ERROR_ZERO_RETURN: return 0
        case SSL_ERROR_SYSCALL where errno == 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNRESET: return 0
        case SSL_ERROR_SYSCALL: throw HTTPReadError(what: "from the TLS connection", cause: String(cString: strerror(errno)), status: nil)
        default: throw HTTPReadError(what: "from the TLS connection", cause: "SSL error \(code): \(TLSServerContext.errors())", status: nil)
        }
    }

    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { hsl_SSL_write(ssl, $0.baseAddress! + offset, Int32($0.count - offset)) }
            guard n > 0 else { return false }
            offset += Int(n)
        }
        return true
    }

    func finish() {
        _ = hsl_SSL_shutdown(ssl)
    }
}

final class ServerNameSelector: @unchecked Sendable {  // @unchecked: lets only (a Sendable closure)
    let choose: @Sendable (String?) -> TLSServerContext?
    init(_ choose: @escaping @Sendable (String?) -> TLSServerContext?) { self.choose = choose }
}

/// OpenSSL's servername callback (`SSL_CTX_set_tlsext_servername_callback`): switches the connection to the
/// context chosen for the SNI name.
private let serverNameCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { ssl, alert, arg in
    guard let ssl, let arg else { return SSL_TLSEXT_ERR_OK }
    let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
    let selector = Unmanaged<ServerNameSelector>.fromOpaque(arg).takeUnretainedValue()
    guard let chosen = selector.choose(name) else {
        alert?.pointee = SSL_AD_UNRECOGNIZED_NAME
        return SSL_TLSEXT_ERR_ALERT_FATAL
    }
    guard SSL_set_SSL_CTX(ssl, chosen.context) != nil else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    return SSL_TLSEXT_ERR_OK
}
