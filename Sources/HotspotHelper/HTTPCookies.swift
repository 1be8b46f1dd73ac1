import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// Cookies across the requests of one sign-in, as a browser (or URLSession with its cookie storage) keeps them:
/// `command.http` sends each request as it is, so a helper whose portal sets a session cookie on its sign-in
/// page and requires it on the POST sends through a jar:
///
///     let jar = HotspotCookieJar()
///     let page = try jar.send(.get(portal), via: command.http)           // Set-Cookie stored
///     let done = try jar.send(.postForm(action, fields: f), via: command.http)   // Cookie sent
///
/// The rules of RFC 6265, as URLSession applies them: a cookie without `Domain` goes back to its host only, one
/// with `Domain` to that domain and its subdomains (never set for another domain); `Path` (default: the
/// request path's directory) prefixes the request path; `Secure` cookies go over https only, and an http answer
/// cannot set one; `Max-Age` (seconds; 0 or less deletes) wins over `Expires`; a later cookie of the same name,
/// domain and path replaces the earlier. `HttpOnly` is kept (it concerns scripts, not HTTP).
public final class HotspotCookieJar: @unchecked Sendable {  // @unchecked: `stored` is touched only with `lock` held; the rest are `let`s
    public struct Cookie: Sendable, Equatable {
        public var name: String
        public var value: String
        /// Lowercased; a host name or, with `hostOnly` false, a domain.
        public var domain: String
        public var hostOnly: Bool
        public var path: String
        public var secure: Bool
        public var httpOnly: Bool
        /// Seconds since 1970; nil: until the jar goes away.
        public var expires: Int?
    }

    private let lock = Mutex()
    private var stored: [Cookie] = []
    /// Seconds since 1970 (a test may give its own).
    let now: @Sendable () -> Int

    public init(now: @escaping @Sendable () -> Int = { Int(time(nil)) }) { self.now = now }

    /// The cookies that have not expired.
    public var cookies: [Cookie] {
        let t = now()
        return lock.withLock { stored.filter { $0.expires.map { $0 > t } ?? true } }
    }

    /// Sends `request` with the jar's cookies for its URL (unless it has a `Cookie` header of its own) and keeps
    /// the answer's `Set-Cookie`s.
    public func send(_ request: HotspotHTTPRequest,
                     via send: (HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse) throws(HotspotTrafficError) -> HotspotHTTPResponse
    {
        var request = request
        if let url = HotspotURL(request.url), !request.headers.contains(where: { HotspotDNS.lowercased($0.name) == "cookie" }),
           let header = cookieHeader(for: url) {
            request.headers.append(("Cookie", header))
        }
        let response = try send(request)
        store(response)
        return response
    }

    /// `a=1; b=2`: the cookies for `url` (longer paths first, as RFC 6265 orders them); nil when none.
    public func cookieHeader(for url: HotspotURL) -> String? {
        let path = url.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        let matching = cookies.filter { c in
            (c.hostOnly ? url.host == c.domain : Self.domainMatches(url.host, c.domain))
                && Self.pathMatches(path, c.path) && (!c.secure || url.isSecure)
        }.sorted { $0.path.count > $1.path.count }
        return matching.isEmpty ? nil : matching.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// Keeps every `Set-Cookie` of `response` that its URL may set.
    public func store(_ response: HotspotHTTPResponse) {
        for header in response.headers where HotspotDNS.lowercased(header.name) == "set-cookie" {
            guard let cookie = Self.parse(header.value, from: response.url, now: now()) else { continue }
            lock.withLock {
                stored.removeAll { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }
                stored.append(cookie)   // an expired one only deletes
            }
        }
    }

    /// One `Set-Cookie` value as `url` sets it; nil when it may not (no name, another domain, `Secure` over http).
    public static func parse(_ header: String, from url: HotspotURL, now: Int) -> Cookie? {
        let parts = header.split(separator: ";", omittingEmptySubsequences: false).map { HotspotHelperEnvironment.trimmed(String($0)) }
        guard let first = parts.first, let equals = first.firstIndex(of: "=") else { return nil }
        let name = HotspotHelperEnvironment.trimmed(String(first[..<equals]))
        guard !name.isEmpty else { return nil }
        var value = HotspotHelperEnvironment.trimmed(String(first[first.index(after: equals)...]))
        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
        let requestPath = url.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        var cookie = Cookie(name: name, value: value, domain: url.host, hostOnly: true, path: defaultPath(requestPath),
                            secure: false, httpOnly: false, expires: nil)
        var maxAge: Int?
        for attribute in parts.dropFirst() {
            let pieces = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = HotspotDNS.lowercased(HotspotHelperEnvironment.trimmed(String(pieces[0])))
            let argument = pieces.count > 1 ? HotspotHelperEnvironment.trimmed(String(pieces[1])) : ""
            switch key {
            case "domain":
                var domain = HotspotDNS.lowercased(argument)
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                guard domainMatches(url.host, domain) else { return nil }   // another site's cookie
                cookie.domain = domain
                cookie.hostOnly = false
            case "path":
                if argument.hasPrefix("/") { cookie.path = argument }
            case "secure":
                cookie.secure = true
            case "httponly":
                cookie.httpOnly = true
            case "max-age":
                if let seconds = Int(argument) { maxAge = seconds }
            case "expires":
                if let time = httpDate(argument) { cookie.expires = time }
            default:
                continue
            }
        }
        if let maxAge { cookie.expires = maxAge <= 0 ? Int.min : now + maxAge }
        if cookie.secure && !url.isSecure { return nil }   // only a secure origin sets a Secure cookie
        return cookie
    }

    /// RFC 6265 5.1.3: the host is the domain or ends with `.domain` (not for an IP address).
    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        let isAddress = !host.isEmpty && host.allSatisfy { $0.isNumber || $0 == "." }
        return !isAddress && host.hasSuffix("." + domain)
    }

    /// RFC 6265 5.1.4.
    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).hasPrefix("/")
    }

    /// RFC 6265 5.1.4: the request path up to its last `/` (`/` when that is the first).
    static func defaultPath(_ requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let last = requestPath.lastIndex(of: "/"), last != requestPath.startIndex else { return "/" }
        return String(requestPath[..<last])
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` (also with dashes, `06-Nov-1994`): seconds since 1970; nil otherwise.
    static func httpDate(_ text: String) -> Int? {
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "-" || $0 == "," }).map(String.init)
        var day: Int?, month: Int?, year: Int?, clock: [Int]?
        for token in tokens {
            if token.contains(":") {
                let hms = token.split(separator: ":").compactMap { Int($0) }
                if hms.count == 3 { clock = hms }
            } else if let m = months.firstIndex(of: HotspotDNS.lowercased(String(token.prefix(3)))), token.count >= 3, !token.first!.isNumber {
                month = m + 1
            } else if let n = Int(token) {
                if day == nil, n >= 1, n <= 31, token.count <= 2 { day = n } else { year = n < 70 ? 2000 + n : n < 100 ? 1900 + n : n }
            }
        }
        guard let day, let month, let year, let clock else { return nil }
        // Days since 1970 (civil from days, Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return days * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2]
    }
}
