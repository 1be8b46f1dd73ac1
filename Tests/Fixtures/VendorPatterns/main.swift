// hotspot-vendor-fixture: a legacy hotspot helper for the café of topologies/certify.yaml (a form portal,
// account guest / croissant), written as public iOS helpers write their HTTP, in Apple's names only: the one
// line changed from the iOS helper is the import (`import NetworkExtension` -> `import NEHotspotHelperCompat`).
// `--pattern` picks how it talks HTTP (each is a pattern found in open-source iOS helpers):
//   campus          bind, then `as URLRequest`, then method and body, on an ephemeral session; portal = response.url
//   delegate        a URLSessionDataDelegate collects the data and completes the command in didCompleteWithError
//   redirect        the session delegate returns nil from willPerformHTTPRedirection (completion-handler form) to see
//                   the probe's 302 and its Location
//   redirect-async  the same with the async form of willPerformHTTPRedirection
//   cookies         the sign-in page is fetched first (the portal may set a session cookie) and the POST relies on
//                   the session's cookie storage to send it back
// Every pattern posts the sign-in form's hidden fields (a CSRF token) with the account, as the form would.
//   inspect         compares response.url with request.url to tell whether the probe was redirected
//   ephemeral-each  a new ephemeral session for every request of the sign-in: each has its own cookie storage (on
//                   iOS too), so a portal's session cookie is lost between the page and the POST (fails on iOS)
// Options: --ssid NAME (default "Cafe Lumiere"), --account USER:PASSWORD (default guest:croissant),
// --evaluate-delay SECONDS (a slow helper: every evaluate is answered that much later; default 0). The probe is
// $HOTSPOT_PROBE_URL (the lab's), else Apple's.
import NEHotspotHelperCompat

let arguments = CommandLine.arguments
func option(_ name: String, _ fallback: String) -> String {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return fallback }
    return arguments[i + 1]
}
let pattern = option("--pattern", "campus")
let ourSSID = option("--ssid", "Cafe Lumiere")
let evaluateDelay = Double(option("--evaluate-delay", "0")) ?? 0
let account = option("--account", "guest:croissant").split(separator: ":", maxSplits: 1).map(String.init)
let probeURL = URL(string: ProcessInfo.processInfo.environment["HOTSPOT_PROBE_URL"] ?? "http://captive.apple.com/hotspot-detect.html")!

func log(_ text: String) {
    FileHandle.standardError.write("vendor[\(pattern)]: \(text)\n".data(using: .utf8)!)
}

/// What the probe showed: online, or captive with the portal's sign-in page URL.
enum ProbeResult {
    case online
    case captive(URL)
    case failed(String)
}

func isSuccessPage(_ data: Data?) -> Bool {
    guard let data = data, let text = String(data: data, encoding: .utf8) else { return false }
    return text.contains("<TITLE>Success</TITLE>") || text.contains("<title>Success</title>")
}

// MARK: campus: bind, `as URLRequest`, method and body, ephemeral session

let ephemeral = URLSession(configuration: .ephemeral)

func campusRequest(_ url: URL, _ cmd: NEHotspotHelperCommand, method: String = "GET", body: String? = nil) -> URLRequest {
    let request = NSMutableURLRequest(url: url)
    request.bind(to: cmd)
    var r = request as URLRequest
    r.httpMethod = method
    if let body = body {
        r.httpBody = body.data(using: .utf8)
        r.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
    }
    r.timeoutInterval = 5
    return r
}

func wait(_ session: URLSession, _ request: URLRequest) -> (Data?, URLResponse?, Error?) {
    let done = DispatchSemaphore(value: 0)
    var result: (Data?, URLResponse?, Error?) = (nil, nil, nil)
    session.dataTask(with: request) { data, response, error in
        result = (data, response, error)
        done.signal()
    }.resume()
    done.wait()
    return result
}

// MARK: delegate: a data delegate collects the answer

final class Collector: NSObject, URLSessionDataDelegate {
    var data = Data()
    var response: URLResponse?
    var error: Error?
    let done = DispatchSemaphore(value: 0)

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        self.response = response
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        self.data.append(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        self.error = error
        done.signal()
    }
}

func viaDelegate(_ request: URLRequest) -> (Data?, URLResponse?, Error?) {
    let collector = Collector()
    let session = URLSession(configuration: .default, delegate: collector, delegateQueue: nil)
    session.dataTask(with: request).resume()
    collector.done.wait()
    session.finishTasksAndInvalidate()
    return (collector.data, collector.response, collector.error)
}

// MARK: redirect: the delegate stops every redirect to see the 302

final class RedirectStopper: NSObject, URLSessionTaskDelegate {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

final class AsyncRedirectStopper: NSObject, URLSessionTaskDelegate {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest) async -> URLRequest? {
        nil
    }
}

let redirectSession = URLSession(configuration: .ephemeral,
                                 delegate: pattern == "redirect-async" ? AsyncRedirectStopper() : RedirectStopper(),
                                 delegateQueue: nil)

// MARK: cookies: one session whose storage keeps the portal's cookie

let cookieSession = URLSession(configuration: .default)

// MARK: the probe, per pattern

func probe(_ cmd: NEHotspotHelperCommand) -> ProbeResult {
    switch pattern {
    case "redirect", "redirect-async":
        let (data, response, error) = wait(redirectSession, campusRequest(probeURL, cmd))
        if let error = error { return .failed("\(error)") }
        guard let http = response as? HTTPURLResponse else { return .failed("no HTTP answer") }
        if (300...399).contains(http.statusCode), let location = http.value(forHTTPHeaderField: "Location"),
           let portal = URL(string: location, relativeTo: probeURL) {
            return .captive(portal.absoluteURL)
        }
        return isSuccessPage(data) ? .online : .failed("status \(http.statusCode) without a redirect")
    case "inspect":
        let request = NSMutableURLRequest(url: probeURL)
        request.bind(to: cmd)
        request.timeoutInterval = 5
        let (data, response, error) = wait(URLSession.shared, request as URLRequest)
        if let error = error { return .failed("\(error)") }
        guard let finalURL = response?.url else { return .failed("no answer") }
        if finalURL != request.url { return .captive(finalURL) }
        return isSuccessPage(data) ? .online : .failed("not redirected, and not the success page")
    default:
        let request = campusRequest(probeURL, cmd)
        let (data, response, error) = pattern == "delegate" ? viaDelegate(request)
            : wait(pattern == "cookies" ? cookieSession : ephemeral, request)
        if let error = error { return .failed("\(error)") }
        if isSuccessPage(data) { return .online }
        guard let portal = response?.url else { return .failed("no answer") }
        return .captive(portal)
    }
}

enum SignIn {
    case signedIn
    case unsupported      // no username/password form: not the portal this helper knows
    case unavailable      // the portal's back end answers 5xx, or the network failed
    case refused(Int)
}

/// The `<input type="hidden" name=".." value="..">` fields of a page, in order.
func hiddenFields(_ html: String) -> [(name: String, value: String)] {
    var fields: [(name: String, value: String)] = []
    for part in html.components(separatedBy: "<input").dropFirst() {
        let tag = part.prefix { $0 != ">" }
        guard tag.contains("type=\"hidden\"") else { continue }
        func attribute(_ name: String) -> String? {
            guard let start = tag.range(of: name + "=\"") else { return nil }
            return String(tag[start.upperBound...].prefix { $0 != "\"" })
        }
        if let name = attribute("name") { fields.append((name, attribute("value") ?? "")) }
    }
    return fields
}

/// Where the last sign-in happened (for logoff).
var lastPortal: URL?

/// The sign-in: the page (its form), then the POST of the account.
func signIn(_ cmd: NEHotspotHelperCommand, portal: URL) -> SignIn {
    guard account.count == 2 else { return .refused(0) }
    /// The session of one request of the sign-in.
    func session() -> URLSession {
        pattern == "cookies" ? cookieSession : pattern == "ephemeral-each" ? URLSession(configuration: .ephemeral) : ephemeral
    }
    let (page, _, pageError) = pattern == "delegate" ? viaDelegate(campusRequest(portal, cmd)) : wait(session(), campusRequest(portal, cmd))
    if let pageError = pageError {
        log("portal page \(portal): \(pageError)")
        return .unavailable
    }
    guard let html = page.flatMap({ String(data: $0, encoding: .utf8) }), html.contains("name=\"username\"") else {
        log("no sign-in form at \(portal)")
        return .unsupported
    }
    let loginURL = URL(string: "/login", relativeTo: portal)!.absoluteURL
    // The form's hidden fields go back with the account (a portal's CSRF token, as a browser would send it).
    let hidden = hiddenFields(html).map { "\($0.name)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.value)" }
    let body = (["username=\(account[0])", "password=\(account[1])"] + hidden).joined(separator: "&")
    let login = campusRequest(loginURL, cmd, method: "POST", body: body)
    let (_, response, error) = pattern == "delegate" ? viaDelegate(login) : wait(session(), login)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    log("sign-in at \(loginURL): \(status) \(error.map { "\($0)" } ?? "")")
    if error != nil || status >= 500 { return .unavailable }
    if status == 200 {
        lastPortal = portal
        return .signedIn
    }
    return .refused(status)
}

let registered = NEHotspotHelper.register(options: [kNEHotspotHelperOptionDisplayName: "Vendor" as NSObject],
                                          queue: DispatchQueue(label: "vendor", attributes: .concurrent)) { cmd in
    switch cmd.commandType {
    case .filterScanList:
        let ours = (cmd.networkList ?? []).filter { $0.ssid == ourSSID }
        for network in ours { network.setConfidence(.low) }
        let response = cmd.createResponse(.success)
        response.setNetworkList(ours)
        response.deliver()
    case .evaluate:
        guard let network = cmd.network else { return }
        if evaluateDelay > 0 {
            log("evaluate \(network.ssid): answering in \(evaluateDelay) s")
            Thread.sleep(forTimeInterval: evaluateDelay)
        }
        var confidence = NEHotspotHelperConfidence.none
        if network.ssid == ourSSID, case .captive = probe(cmd) { confidence = .high }
        log("evaluate \(network.ssid): \(confidence.rawValue)")
        network.setConfidence(confidence)
        let response = cmd.createResponse(.success)
        response.setNetwork(network)
        response.deliver()
    case .authenticate:
        switch probe(cmd) {
        case .online:
            cmd.createResponse(.success).deliver()
        case .captive(let portal):
            switch signIn(cmd, portal: portal) {
            case .signedIn:
                if case .online = probe(cmd) { cmd.createResponse(.success).deliver() } else { cmd.createResponse(.failure).deliver() }
            case .unsupported: cmd.createResponse(.unsupportedNetwork).deliver()
            case .unavailable: cmd.createResponse(.temporaryFailure).deliver()
            case .refused: cmd.createResponse(.failure).deliver()
            }
        case .failed(let why):
            log("probe failed: \(why)")
            cmd.createResponse(.temporaryFailure).deliver()
        }
    case .maintain:
        switch probe(cmd) {
        case .online: cmd.createResponse(.success).deliver()
        case .captive: cmd.createResponse(.authenticationRequired).deliver()
        case .failed: cmd.createResponse(.temporaryFailure).deliver()
        }
    case .logoff:
        // Sign out at the portal (the café's portal ends the session on GET /logoff).
        if let portal = lastPortal, let url = URL(string: "/logoff", relativeTo: portal)?.absoluteURL {
            let (_, response, error) = wait(pattern == "cookies" ? cookieSession : ephemeral, campusRequest(url, cmd))
            log("logoff at \(url): \((response as? HTTPURLResponse)?.statusCode ?? 0) \(error.map { "\($0)" } ?? "")")
        }
        cmd.createResponse(.success).deliver()
    default:
        cmd.createResponse(.commandNotRecognized).deliver()
    }
}
log("registered \(registered)")
if !registered { exit(1) }
dispatchMain()
