// The reference helpers' cookies: each helper keeps one cookie jar (the SDK's `HotspotCookieJar`) for its life, as
// an iOS app's URLSession keeps its cookie storage, so a portal's session cookie, set on its sign-in page, goes
// back on the POST, also when the two are different commands (the voucher helper's authenticate and presentUI).
import HotspotHelper

/// Runs `body` with `http` behind `jar`: each request carries the jar's cookies for its URL, and each answer's
/// `Set-Cookie`s are kept.
public func withCookies<T>(_ jar: HotspotCookieJar, _ http: HTTPSend, _ body: (HTTPSend) -> T) -> T {
    withoutActuallyEscaping(http) { http in
        body { (request) throws(HotspotTrafficError) -> HotspotHTTPResponse in try jar.send(request, via: http) }
    }
}
