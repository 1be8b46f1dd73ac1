#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem

/// An `http://` or `https://host[:port]/path?query` URL (what captive portals and probes speak).
public struct HotspotURL: Sendable, Equatable, CustomStringConvertible {
    /// True for `https://` (TLS, default port 443; see `HotspotHTTPClient` for the verification).
    public var isSecure: Bool
    public var host: String
    public var port: UInt16
    /// The path with its query, always starting with `/`.
    public var path: String

    public init(host: String, port: UInt16? = nil, path: String = "/", secure: Bool = false) {
        self.isSecure = secure
        self.host = host
        self.port = port ?? (secure ? 443 : 80)
        self.path = path.hasPrefix("/") ? path : "/" + path
    }

    /// `http` or `https`.
    public var scheme: String { isSecure ? "https" : "http" }
    var defaultPort: UInt16 { isSecure ? 443 : 80 }

    /// Parses `http[s]://host[:port][/path][?query]`; nil for anything else (other schemes, user info, no host...).
    public init?(_ string: String) {
        let text = HotspotHelperEnvironment.trimmed(string)
        let secure: Bool
        if text.utf8.count > 7, Self.lowercased(String(text.prefix(7))) == "http://" {
            secure = false
        } else if text.utf8.count > 8, Self.lowercased(String(text.prefix(8))) == "https://" {
            secure = true
        } else {
            return nil
        }
        let rest = text.dropFirst(secure ? 8 : 7)
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = String(rest[authorityEnd...])
        if let hash = path.firstIndex(of: "#") { path = String(path[..<hash]) }
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var host = Substring(authority)
        var port: UInt16 = secure ? 443 : 80
        var portText: Substring?
        if authority.hasPrefix("[") {
            // An IPv6 literal (RFC 3986 3.2.2): `[2001:db8::1]` or `[2001:db8::1]:8080`; kept without the brackets.
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
            guard host.contains(":"), IPLiteral.ipv6(String(host)) != nil else { return nil }
        } else {
            guard !authority.contains("["), !authority.contains("]") else { return nil }
            if let colon = authority.firstIndex(of: ":") {
                // One colon at most: an IPv6 literal without brackets (`http://2001:db8::1/`) is not a URL.
                portText = authority[authority.index(after: colon)...]
                host = authority[..<colon]
                guard portText?.contains(":") == false else { return nil }
            }
        }
        if let portText {
            guard let p = UInt16(portText), p > 0 else { return nil }
            port = p
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "\t" }) else { return nil }
        self.init(host: Self.lowercased(String(host)), port: port, path: path, secure: secure)
    }

    /// The host as a URL writes it: an IPv6 literal in brackets (`[2001:db8::1]`), anything else as it is.
    public var authorityHost: String { host.contains(":") ? "[\(host)]" : host }

    /// `http[s]://host[:port]` (no path; the port only when not the scheme's default).
    public var origin: String { port == defaultPort ? "\(scheme)://\(authorityHost)" : "\(scheme)://\(authorityHost):\(port)" }

    /// The Host header value (an IPv6 literal in brackets, RFC 9110 7.2).
    public var hostHeader: String { port == defaultPort ? authorityHost : "\(authorityHost):\(port)" }

    public var description: String { origin + path }

    /// Resolves a reference found in a page or a Location header against this URL: an absolute `http://` URL,
    /// `//host/path` (this URL's scheme), `/path`, `?query` or a relative path. Nil for other schemes
    /// (javascript:, ftp:...).
    public func resolving(_ reference: String) -> HotspotURL? {
        let ref = HotspotHelperEnvironment.trimmed(reference)
        if ref.isEmpty { return self }
        let lower = Self.lowercased(String(ref.prefix(8)))
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return HotspotURL(ref) }
        if ref.hasPrefix("//") { return HotspotURL(scheme + ":" + ref) }
        if (ref.firstIndex(of: ":").map { colon in
            !ref[..<colon].contains(where: { $0 == "/" || $0 == "?" || $0 == "#" })
        } ?? false) {
            return nil
        }
        var copy = self
        var reference = ref
        if let hash = reference.firstIndex(of: "#") { reference = String(reference[..<hash]) }
        let pathOnly = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        if reference.hasPrefix("/") {
            copy.path = reference
        } else if reference.hasPrefix("?") {
            copy.path = pathOnly + reference
        } else {
            let directory = pathOnly.hasSuffix("/") ? pathOnly : String(pathOnly[...(pathOnly.lastIndex(of: "/") ?? pathOnly.startIndex)])
            copy.path = Self.removingDotSegments(directory + reference)
        }
        return copy
    }

    static func removingDotSegments(_ path: String) -> String {
        let (pathPart, query) = path.firstIndex(of: "?").map { (String(path[..<$0]), String(path[$0...])) } ?? (path, "")
        var out: [Substring] = []
        let parts = pathPart.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (i, part) in parts.enumerated() {
            if part == "." {
                if i == parts.count - 1 { out.append("") }
            } else if part == ".." {
                if !out.isEmpty { out.removeLast() }
                if i == parts.count - 1 { out.append("") }
            } else {
                out.append(part)
            }
        }
        return "/" + out.joined(separator: "/") + query
    }

    static func lowercased(_ s: String) -> String { HotspotDNS.lowercased(s) }
}

/// One HTTP/1.1 request.
public struct HotspotHTTPRequest: Sendable {
    public var method: String
    /// `http://host[:port]/path?query` or `https://...`
    public var url: String
    /// Extra headers, sent in order. A `Host` here replaces the URL's (to ask a server for another name).
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The whole exchange (resolve, connect, send, read the answer); nil: the client's.
    public var timeout: Duration?

    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
                timeout: Duration? = nil)
    {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    public static func get(_ url: String, headers: [(name: String, value: String)] = [], timeout: Duration? = nil) -> HotspotHTTPRequest {
        HotspotHTTPRequest(method: "GET", url: url, headers: headers, timeout: timeout)
    }

    /// A POST of `application/x-www-form-urlencoded` fields, in order.
    public static func postForm(_ url: String, fields: [(name: String, value: String)], headers: [(name: String, value: String)] = [],
                                timeout: Duration? = nil) -> HotspotHTTPRequest
    {
        HotspotHTTPRequest(method: "POST", url: url,
                           headers: [("Content-Type", "application/x-www-form-urlencoded")] + headers,
                           body: Array(formEncode(fields).utf8), timeout: timeout)
    }

    /// `a=1&b=two+words` (application/x-www-form-urlencoded: unreserved bytes as they are, space as `+`,
    /// everything else `%XX`).
    public static func formEncode(_ fields: [(name: String, value: String)]) -> String {
        fields.map { escape($0.name) + "=" + escape($0.value) }.joined(separator: "&")
    }

    static func escape(_ s: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for b in s.utf8 {
            switch b {
            case 0x30...0x39, 0x41...0x5a, 0x61...0x7a, 0x2d, 0x2e, 0x5f, 0x2a: out.append(b)
            case 0x20: out.append(0x2b)
            default: out += [0x25, hex[Int(b >> 4)], hex[Int(b & 0xf)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// An HTTP answer as the server sent it (redirects not followed).
public struct HotspotHTTPResponse: Sendable {
    /// The URL asked (to resolve `location` and links against).
    public var url: HotspotURL
    public var status: Int
    public var reason: String
    /// The headers in the order received.
    public var headers: [(name: String, value: String)]
    /// The body, with the chunked transfer coding removed.
    public var body: [UInt8]

    public init(url: HotspotURL, status: Int, reason: String, headers: [(name: String, value: String)], body: [UInt8]) {
        self.url = url
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    /// The first header of that name (case-insensitive).
    public func header(_ name: String) -> String? {
        let wanted = HotspotDNS.lowercased(name)
        return headers.first { HotspotDNS.lowercased($0.name) == wanted }?.value
    }

    /// The body as UTF-8 text (invalid bytes replaced).
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The `Location` header of a 3xx answer, resolved against the request URL (nil if not a redirect or not
    /// http/https).
    public var redirectURL: HotspotURL? {
        guard (300...399).contains(status), let location = header("Location") else { return nil }
        return url.resolving(location)
    }
}

/// A small blocking HTTP/1.1 client: one request per connection (`Connection: close`), Content-Length,
/// chunked or read-to-close bodies, no redirect following, one timeout for the whole exchange. Host names are
/// resolved with `resolver` (default: `HotspotResolver.fromEnvironment`, with the same mark).
///
/// `https://` URLs go over TLS (the system OpenSSL, TLS 1.2 or later) on the same marked socket, within the same
/// timeout: the server's chain must verify against `trustAnchors` (default: `$HOTSPOT_CA_FILE`, else the
/// system store) and its certificate must name the URL's host (DNS name, or IP address for a literal).
public struct HotspotHTTPClient: Sendable {
    public static let defaultTimeout: Duration = .seconds(10)

    /// SO_MARK for the sockets (nil: unmarked). `HotspotHelperCommand.http` uses `HotspotHelper.commandTrafficMark`.
    public var mark: UInt32?
    /// Used when a request has no timeout of its own.
    public var timeout: Duration
    public var resolver: HotspotResolver?
    /// Bodies longer than this are an error (a portal page is small).
    public var maximumBodyBytes: Int
    /// What `https://` servers are verified against (nil: `HotspotTLSTrust.fromEnvironment`).
    public var trustAnchors: HotspotTLSTrust?
    /// When set, asked after every TLS handshake with what the verification found; false ends the request with
    /// a certificate failure, true goes on even when the certificate did not verify (a portal's self-signed
    /// certificate a helper chose to accept). Nil: a certificate that does not verify ends the request.
    public var serverTrust: (@Sendable (HotspotServerTrust) -> Bool)?

    public init(mark: UInt32? = nil, timeout: Duration = HotspotHTTPClient.defaultTimeout, resolver: HotspotResolver? = nil,
                maximumBodyBytes: Int = 4 << 20, trustAnchors: HotspotTLSTrust? = nil)
    {
        self.mark = mark
        self.timeout = timeout
        self.resolver = resolver
        self.maximumBodyBytes = maximumBodyBytes
        self.trustAnchors = trustAnchors
    }

    public func get(_ url: String) throws(HotspotTrafficError) -> HotspotHTTPResponse { try send(.get(url)) }

    /// Sends `request` and reads the whole answer. Errors name the operation, the URL and the cause
    /// (`connect to 127.0.0.1:9: Connection refused (ECONNREFUSED)`, `... no answer within 2 s`).
    public func send(_ request: HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse {
        guard let url = HotspotURL(request.url) else {
            throw HotspotTrafficError("parse URL", "\"\(request.url)\"", detail: "expected http[s]://host[:port]/path")
        }
        let method = request.method.isEmpty ? "GET" : request.method.uppercased()
        let deadline = TrafficDeadline(request.timeout ?? timeout)
        let tcp = try HotspotTCPConnection.connect(
            host: url.host, port: url.port, deadline: deadline, mark: mark,
            resolver: resolver ?? HotspotResolver.fromEnvironment(mark: mark))
        defer { tcp.close() }
        guard url.isSecure else { return try exchange(tcp, url: url, method: method, request: request, deadline: deadline) }
        let tls = try HotspotTLSConnection.handshake(over: tcp, serverName: url.host,
                                                     trust: trustAnchors ?? HotspotTLSTrust.fromEnvironment, deadline: deadline,
                                                     decide: serverTrust)
        defer { tls.close() }
        return try exchange(tls, url: url, method: method, request: request, deadline: deadline)
    }

    func exchange(_ connection: any TrafficStream, url: HotspotURL, method: String, request: HotspotHTTPRequest,
                  deadline: TrafficDeadline) throws(HotspotTrafficError) -> HotspotHTTPResponse
    {
        try connection.write(Self.head(method, url, request), deadline: deadline)
        var reader = ResponseReader(connection: connection, deadline: deadline, target: "\(method) \(url)",
                                    limit: maximumBodyBytes)
        return try reader.read(url: url, method: method)
    }

    static func head(_ method: String, _ url: HotspotURL, _ request: HotspotHTTPRequest) -> [UInt8] {
        let given = Set(request.headers.map { HotspotDNS.lowercased($0.name) })
        var lines = ["\(method) \(url.path) HTTP/1.1"]
        if !given.contains("host") { lines.append("Host: \(url.hostHeader)") }
        if !given.contains("user-agent") { lines.append("User-Agent: HotspotHelper/1") }
        if !given.contains("accept") { lines.append("Accept: */*") }
        for h in request.headers where HotspotDNS.lowercased(h.name) != "connection" && HotspotDNS.lowercased(h.name) != "content-length" {
            // Header values must not break the message: CR and LF are dropped.
            lines.append("\(h.name): \(String(h.value.filter { $0 != "\r" && $0 != "\n" }))")
        }
        lines.append("Connection: close")
        if !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) {
            lines.append("Content-Length: \(request.body.count)")
        }
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + request.body
    }
}

/// A byte stream a request goes over: plain TCP or TLS on top of it.
protocol TrafficStream {
    func write(_ bytes: [UInt8], deadline: TrafficDeadline) throws(HotspotTrafficError)
    /// What is available (up to `maximum` bytes); empty at end of stream.
    func read(maximum: Int, deadline: TrafficDeadline) throws(HotspotTrafficError) -> [UInt8]
}

extension HotspotTCPConnection: TrafficStream {}

/// Reads one response from a connection: status line, headers, body.
struct ResponseReader {
    let connection: any TrafficStream
    let deadline: TrafficDeadline
    let target: String
    let limit: Int
    var buffer: [UInt8] = []
    var position = 0
    var ended = false

    init(connection: any TrafficStream, deadline: TrafficDeadline, target: String, limit: Int) {
        self.connection = connection
        self.deadline = deadline
        self.target = target
        self.limit = limit
    }

    func failure(_ what: String) -> HotspotTrafficError {
        HotspotTrafficError("read response to", target, detail: what)
    }

    /// Reads more bytes; false at end of stream.
    mutating func fill() throws(HotspotTrafficError) -> Bool {
        if ended { return false }
        if position > 0, position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            position = 0
        }
        let more: [UInt8]
        do {
            more = try connection.read(maximum: 65_536, deadline: deadline)
        } catch {
            var e = error
            e.operation = "read response to"
            e.target = target
            throw e
        }
        if more.isEmpty {
            ended = true
            return false
        }
        buffer += more
        return true
    }

    /// One CRLF- (or LF-) terminated line without its terminator.
    mutating func line(max: Int = 16_384) throws(HotspotTrafficError) -> String {
        while true {
            if let lf = buffer[position...].firstIndex(of: 0x0a) {
                var end = lf
                if end > position, buffer[end - 1] == 0x0d { end -= 1 }
                let text = String(decoding: buffer[position..<end], as: UTF8.self)
                position = lf + 1
                return text
            }
            guard buffer.count - position <= max else { throw failure("a header line longer than \(max) bytes") }
            guard try fill() else {
                throw failure(buffer.isEmpty && position == 0
                              ? "the server closed the connection without answering" : "the connection closed in the middle of the header")
            }
        }
    }

    mutating func bytes(_ count: Int) throws(HotspotTrafficError) -> [UInt8] {
        while buffer.count - position < count {
            guard try fill() else {
                throw failure("the connection closed after \(buffer.count - position) of \(count) body bytes")
            }
        }
        let out = Array(buffer[position..<(position + count)])
        position += count
        return out
    }

    mutating func read(url: HotspotURL, method: String) throws(HotspotTrafficError) -> HotspotHTTPResponse {
        var status = 0
        var reason = ""
        var headers: [(name: String, value: String)] = []
        // 1xx answers (100 Continue) come before the real one.
        repeat {
            let statusLine = try line()
            let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let code = Int(parts[1]), (100...999).contains(code) else {
                throw failure("not an HTTP/1.x status line: \"\(statusLine.prefix(80))\"")
            }
            status = code
            reason = parts.count > 2 ? String(parts[2]) : ""
            headers = []
            while true {
                let h = try line()
                if h.isEmpty { break }
                guard headers.count < 200 else { throw failure("more than 200 header lines") }
                guard let colon = h.firstIndex(of: ":") else { continue }
                headers.append((String(h[..<colon]), HotspotHelperEnvironment.trimmed(String(h[h.index(after: colon)...]))))
            }
        } while (100...199).contains(status)

        var response = HotspotHTTPResponse(url: url, status: status, reason: reason, headers: headers, body: [])
        if method == "HEAD" || status == 204 || status == 304 { return response }
        let encoding = HotspotDNS.lowercased(response.header("Transfer-Encoding") ?? "")
        if encoding.contains("chunked") {
            response.body = try chunked()
        } else if let lengthText = response.header("Content-Length") {
            guard let length = Int(lengthText), length >= 0 else { throw failure("bad Content-Length \"\(lengthText)\"") }
            guard length <= limit else { throw failure("a body of \(length) bytes, more than the limit of \(limit)") }
            response.body = try bytes(length)
        } else {
            while try fill() {
                guard buffer.count - position <= limit else { throw failure("a body longer than the limit of \(limit) bytes") }
            }
            response.body = Array(buffer[position...])
            position = buffer.count
        }
        return response
    }

    mutating func chunked() throws(HotspotTrafficError) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = try line()
            let sizeText = HotspotHelperEnvironment.trimmed(String(sizeLine.split(separator: ";", maxSplits: 1).first ?? ""))
            guard let size = Int(sizeText, radix: 16), size >= 0 else { throw failure("bad chunk size \"\(sizeLine.prefix(40))\"") }
            if size == 0 {
                // Trailers, up to the empty line (a server that just closes is tolerated).
                while true {
                    let trailer: String
                    do { trailer = try line() } catch { break }
                    if trailer.isEmpty { break }
                }
                return body
            }
            guard body.count + size <= limit else { throw failure("a body longer than the limit of \(limit) bytes") }
            body += try bytes(size)
            let end = try line()
            guard end.isEmpty else { throw failure("chunk of \(size) bytes not followed by CRLF") }
        }
    }
}
