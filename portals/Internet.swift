// The lab's internet as data: the well-known connectivity probe endpoints (what the real services answer), the
// clients' probe rules (what each client asks and expects, and its verdict), and a vendor's backend routes
// (`internet: services:` in a topology). Pure: no HTTP server here (portals/Server serves it), no I/O.
import Foundation

/// A response the lab's internet gives for a host and a path (a vendor backend's route, `internet: services:`).
public struct InternetRoute: Sendable, Equatable, Codable {
    /// The host it answers for (case-insensitive), or `*.suffix` for any name under `suffix`.
    public var host: String
    /// The path (without the query); a trailing `*` matches any path with that prefix.
    public var path: String
    /// The request method it answers (nil: any).
    public var method: String?
    public var status: Int
    public var headers: [String: String]
    public var body: String
    /// Wait this long before answering.
    public var delayMilliseconds: Int
    public var fault: InternetFault?

    public init(host: String, path: String, method: String? = nil, status: Int = 200, headers: [String: String] = [:],
                body: String = "", delayMilliseconds: Int = 0, fault: InternetFault? = nil) {
        self.host = host
        self.path = path
        self.method = method
        self.status = status
        self.headers = headers
        self.body = body
        self.delayMilliseconds = delayMilliseconds
        self.fault = fault
    }

    public func matches(method requestMethod: String, host requestHost: String?, path requestPath: String) -> Bool {
        if let method, method.uppercased() != requestMethod.uppercased() { return false }
        guard let requestHost = requestHost?.lowercased() else { return false }
        let host = self.host.lowercased()
        if host.hasPrefix("*.") {
            guard requestHost.hasSuffix(String(host.dropFirst(1))) else { return false }
        } else if host != requestHost {
            return false
        }
        if path.hasSuffix("*") { return requestPath.hasPrefix(String(path.dropLast())) }
        return path == requestPath
    }
}

/// What a backend route does instead of answering normally.
public enum InternetFault: String, Sendable, Equatable, Codable, CaseIterable {
    /// Never answers (the connection stays open until the client gives up).
    case hang
    /// Answers 500 with an empty body, whatever the route says.
    case serverError = "server-error"
}

/// One well-known probe endpoint and its exact answer, as the real service gives it.
public struct ProbeEndpoint: Sendable, Equatable {
    public var hosts: [String]
    public var path: String
    public var status: Int
    public var headers: [String: String]
    public var body: String
    /// Where the answer is documented or observed (docs/TOPOLOGY.md's table).
    public var source: String
}

/// The lab internet's answers: the topology's backend routes first, then the probe endpoints (on any host, so
/// an older topology's names keep working), then a plain web page.
public struct InternetResponder: Sendable {
    public enum Match: Sendable, Equatable {
        /// Backend route number `n` of `internet: services:`.
        case service(Int)
        /// A well-known probe endpoint (its path).
        case probe(String)
        /// Nothing matched: the general page (logged as unmatched).
        case unmatched
    }

    public var routes: [InternetRoute]

    public init(routes: [InternetRoute] = []) { self.routes = routes }

    /// Apple's exact success page.
    public static let appleSuccess = "<HTML><HEAD><TITLE>Success</TITLE></HEAD><BODY>Success</BODY></HTML>"
    public static let generalPage = "<!DOCTYPE html>\n<html><head><title>RunningTopology internet</title></head><body>You reached the lab internet.</body></html>\n"
    public static let firefoxCanonical = "<meta http-equiv=\"refresh\" content=\"0;url=https://support.mozilla.org/kb/captive-portal\"/>"

    /// The probe endpoints (docs/TOPOLOGY.md, "The internet's probe endpoints").
    public static let endpoints: [ProbeEndpoint] = [
        ProbeEndpoint(hosts: ["captive.apple.com", "www.apple.com"], path: "/hotspot-detect.html", status: 200,
                      headers: ["Content-Type": "text/html", "Cache-Control": "no-store"], body: appleSuccess,
                      source: "Apple CNA; curl http://captive.apple.com/hotspot-detect.html"),
        ProbeEndpoint(hosts: ["www.apple.com", "captive.apple.com"], path: "/library/test/success.html", status: 200,
                      headers: ["Content-Type": "text/html", "Cache-Control": "no-store"], body: appleSuccess,
                      source: "Apple CNA (older iOS/macOS)"),
        ProbeEndpoint(hosts: ["connectivitycheck.gstatic.com", "www.google.com", "clients3.google.com", "connectivitycheck.android.com"],
                      path: "/generate_204", status: 204, headers: ["Cache-Control": "no-store", "Content-Length": "0"], body: "",
                      source: "AOSP NetworkMonitor (config_captive_portal_http_url, config_captive_portal_https_url); ChromeOS shill"),
        ProbeEndpoint(hosts: ["clients1.google.com", "www.google.com"], path: "/gen_204", status: 204,
                      headers: ["Cache-Control": "no-store", "Content-Length": "0"], body: "", source: "Google's alternative probe path"),
        ProbeEndpoint(hosts: ["www.msftconnecttest.com"], path: "/connecttest.txt", status: 200,
                      headers: ["Content-Type": "text/plain"], body: "Microsoft Connect Test",
                      source: "Windows NCSI (HKLM\\...\\NlaSvc\\Parameters\\Internet ActiveWebProbeContent)"),
        ProbeEndpoint(hosts: ["www.msftncsi.com"], path: "/ncsi.txt", status: 200, headers: ["Content-Type": "text/plain"],
                      body: "Microsoft NCSI", source: "Windows NCSI before Windows 10"),
        ProbeEndpoint(hosts: ["nmcheck.gnome.org"], path: "/check_network_status.txt", status: 200,
                      headers: ["Content-Type": "text/plain", "X-NetworkManager-Status": "online"], body: "NetworkManager is online\n",
                      source: "NetworkManager [connectivity] uri and response (Debian's network-manager-config-connectivity-debian)"),
        ProbeEndpoint(hosts: ["detectportal.firefox.com"], path: "/success.txt", status: 200,
                      headers: ["Content-Type": "text/plain", "Cache-Control": "no-cache"], body: "success\n",
                      source: "Firefox network.connectivity-service.IPv4.url, captivedetect.canonicalContent"),
        ProbeEndpoint(hosts: ["detectportal.firefox.com"], path: "/canonical.html", status: 200,
                      headers: ["Content-Type": "text/html"], body: firefoxCanonical,
                      source: "Firefox captivedetect.canonicalURL"),
    ]

    /// The answer for a request, and what it matched.
    public func respond(method: String = "GET", host: String?, path: String) -> (response: PortalResponse, match: Match, route: InternetRoute?) {
        if let index = routes.firstIndex(where: { $0.matches(method: method, host: host, path: path) }) {
            let route = routes[index]
            if route.fault == .serverError { return (PortalResponse(status: 500), .service(index), route) }
            return (PortalResponse(status: route.status, headers: route.headers, body: route.body), .service(index), route)
        }
        if let endpoint = Self.endpoints.first(where: { $0.path == path }) {
            return (PortalResponse(status: endpoint.status, headers: endpoint.headers.filter { $0.key != "Content-Length" }, body: endpoint.body),
                    .probe(path), nil)
        }
        return (PortalResponse(status: 200, headers: ["Content-Type": "text/html"], body: Self.generalPage), .unmatched, nil)
    }
}

/// A client's connectivity verdict (what its probe rules conclude).
public enum ProbeVerdict: String, Sendable, Equatable, CaseIterable {
    /// The internet is reached as the client expects.
    case open
    /// Something answered in the internet's place (a portal).
    case captive
    /// Android's partial connectivity: its HTTP probe succeeds, its HTTPS probe does not.
    case partial
    /// No answer at all.
    case none
}

/// What one probe request got: an HTTP answer, or none (no name, no route, refused, reset, timed out, TLS failed).
public enum ProbeObservation: Sendable, Equatable {
    case answered(status: Int, body: String)
    case failed(String)
}

/// The connectivity probe rules of a client, as the real client applies them.
public struct ClientProbeRules: Sendable, Equatable {
    public struct Probe: Sendable, Equatable {
        public var url: String
        /// The status that means "open".
        public var status: Int
        /// The body that means "open" (compared after trimming white space); nil: any body.
        public var body: String?
        /// Also "open": a 200 with an empty body (Android counts it as a 204).
        public var emptyOKCounts: Bool = false

        /// True when the observation is the expected answer.
        public func succeeds(_ observation: ProbeObservation) -> Bool {
            guard case .answered(let status, let received) = observation else { return false }
            if emptyOKCounts, status == 200, received.isEmpty { return true }
            guard status == self.status else { return false }
            guard let body else { return true }
            return received.trimmingCharacters(in: .whitespacesAndNewlines) == body.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    public var client: String
    /// The plain HTTP probe.
    public var http: Probe
    /// The HTTPS probe (Android only): when it fails while HTTP succeeds, the network is `partial`.
    public var https: Probe?

    public static let all: [ClientProbeRules] = [
        ClientProbeRules(client: "apple", http: Probe(url: "http://captive.apple.com/hotspot-detect.html", status: 200,
                                                       body: InternetResponder.appleSuccess)),
        ClientProbeRules(client: "android",
                         http: Probe(url: "http://connectivitycheck.gstatic.com/generate_204", status: 204, body: nil, emptyOKCounts: true),
                         https: Probe(url: "https://www.google.com/generate_204", status: 204, body: nil, emptyOKCounts: true)),
        ClientProbeRules(client: "chromeos", http: Probe(url: "http://clients3.google.com/generate_204", status: 204, body: nil)),
        ClientProbeRules(client: "windows", http: Probe(url: "http://www.msftconnecttest.com/connecttest.txt", status: 200, body: "Microsoft Connect Test")),
        ClientProbeRules(client: "networkmanager", http: Probe(url: "http://nmcheck.gnome.org/check_network_status.txt", status: 200,
                                                                body: "NetworkManager is online")),
        ClientProbeRules(client: "firefox", http: Probe(url: "http://detectportal.firefox.com/success.txt", status: 200, body: "success")),
    ]

    public static var clients: [String] { all.map(\.client) }

    public static func rules(_ client: String) -> ClientProbeRules? { all.first { $0.client == client } }

    /// The verdict from the probes' observations (`https` nil: the client has no HTTPS probe). An answered HTTP
    /// probe with the wrong answer is a portal; an expected one is open, unless the HTTPS probe fails (partial);
    /// no answer at all is none. Android: a passing HTTPS probe alone means open.
    public func verdict(http observation: ProbeObservation, https httpsObservation: ProbeObservation?) -> ProbeVerdict {
        if let https, let httpsObservation, https.succeeds(httpsObservation) { return .open }
        if http.succeeds(observation) { return https == nil ? .open : .partial }
        if case .answered = observation { return .captive }
        return .none
    }
}
