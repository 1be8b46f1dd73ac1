// hotspot-compat-fixture: a legacy hotspot helper written with Apple's NetworkExtension names only. The one
// line changed from an iOS helper is the import (`import NetworkExtension` -> `import NEHotspotHelperCompat`).
// Where to reach hotspotd comes from the environment the lab gives every helper (HOTSPOT_HELPER_SOCKET,
// HOTSPOT_HELPER_IDENTIFIER); what to talk to comes from PORTAL_URL, ECHO_HOST, ECHO_TCP_PORT, ECHO_UDP_PORT.
// It prints one line per check ("check NAME ok|fail DETAIL"), which the tests read.
import NEHotspotHelperCompat

let environment = ProcessInfo.processInfo.environment
let portalURL = URL(string: environment["PORTAL_URL"] ?? "http://127.0.0.1:9/start")!
let echoHost = environment["ECHO_HOST"] ?? "127.0.0.1"
let tcpPort = environment["ECHO_TCP_PORT"] ?? "9"
let udpPort = environment["ECHO_UDP_PORT"] ?? "9"

func report(_ name: String, _ ok: Bool, _ detail: String) {
    let line = "check \(name) \(ok ? "ok" : "fail") \(detail.replacingOccurrences(of: "\n", with: " "))\n"
    FileHandle.standardOutput.write(line.data(using: .utf8)!)
}

func describe(_ securityType: NEHotspotNetworkSecurityType) -> String {
    switch securityType {
    case .open: return "open"
    case .WEP: return "WEP"
    case .personal: return "personal"
    case .enterprise: return "enterprise"
    case .unknown: return "unknown"
    @unknown default: return "other"
    }
}

/// One URLSession data task, waited for.
func fetch(_ request: URLRequest) -> (Data?, URLResponse?, Error?) {
    let done = DispatchSemaphore(value: 0)
    var result: (Data?, URLResponse?, Error?) = (nil, nil, nil)
    URLSession.shared.dataTask(with: request) { data, response, error in
        result = (data, response, error)
        done.signal()
    }.resume()
    done.wait()
    return result
}

func authenticate(_ cmd: NEHotspotHelperCommand) -> Bool {
    // The current network, as Apple's code reads it.
    if let network = NEHotspotHelper.supportedNetworkInterfaces()?.first as? NEHotspotNetwork {
        report("supportedNetworkInterfaces", true, "\(network.ssid) \(describe(network.securityType)) chosen=\(network.isChosenHelper)")
    } else {
        report("supportedNetworkInterfaces", false, "no current network")
    }
    let fetched = DispatchSemaphore(value: 0)
    NEHotspotNetwork.fetchCurrent { network in
        report("fetchCurrent", network != nil, network.map { "\($0.ssid) \($0.bssid)" } ?? "nil")
        fetched.signal()
    }
    fetched.wait()

    // URLSession with a request bound to the command: through IP suppression, redirects followed.
    // 20 s: a bound for a hang, not a pace (success is expected; a loaded machine must not turn it into a timeout).
    let request = NSMutableURLRequest(url: portalURL)
    request.timeoutInterval = 20
    request.bind(to: cmd)
    let (data, response, error) = fetch(request as URLRequest)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    let body = data.map { String(decoding: $0, as: UTF8.self) } ?? ""
    let boundOK = error == nil && status == 200
    report("bound-urlsession", boundOK, "\(status) \(response?.url?.absoluteString ?? "-") \(body) \(error.map { "\($0)" } ?? "")")

    // The same request, not bound: ordinary application traffic.
    var plain = URLRequest(url: portalURL)
    plain.timeoutInterval = 20  // blocked traffic fails at once (policy routing), allowed traffic must not time out
    let (_, plainResponse, plainError) = fetch(plain)
    report("unbound-urlsession", plainError == nil,
           "\((plainResponse as? HTTPURLResponse)?.statusCode ?? 0) \(plainError.map { "\(($0 as NSError).code) \($0.localizedDescription)" } ?? "")")

    // A TCP connection for the command.
    let connection = cmd.createTCPConnection(NWHostEndpoint(hostname: echoHost, port: tcpPort))
    let tcpDone = DispatchSemaphore(value: 0)
    var tcpOK = false
    connection.write("ping".data(using: .utf8)!) { error in
        if let error {
            report("tcp", false, "write: \(error)")
            tcpDone.signal()
            return
        }
        connection.readMinimumLength(9, maximumLength: 100) { data, error in
            let text = data.map { String(decoding: $0, as: UTF8.self) } ?? ""
            tcpOK = text == "pong:ping"
            report("tcp", tcpOK, "\(text) \(error.map { "\($0)" } ?? "") state=\(connection.state.rawValue)")
            tcpDone.signal()
        }
    }
    tcpDone.wait()
    connection.cancel()

    // A UDP session for the command.
    let session = cmd.createUDPSession(NWHostEndpoint(hostname: echoHost, port: udpPort))
    let udpDone = DispatchSemaphore(value: 0)
    var udpOK = false
    session.setReadHandler({ datagrams, error in
        let text = datagrams?.first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        udpOK = text == "pong:ping"
        report("udp", udpOK, "\(text) \(error.map { "\($0)" } ?? "")")
        udpDone.signal()
    }, maxDatagrams: 1)
    session.writeDatagram("ping".data(using: .utf8)!) { error in
        if let error {
            report("udp", false, "write: \(error)")
            udpDone.signal()
        }
    }
    udpDone.wait()
    session.cancel()
    return boundOK && tcpOK && udpOK
}

// COMPAT_NO_OPTIONS=1: register with no options at all (the display name is then the application's name).
let options: [String: NSObject]? = environment["COMPAT_NO_OPTIONS"] == "1"
    ? nil : [kNEHotspotHelperOptionDisplayName: "Apple Names" as NSObject]
let queue = DispatchQueue(label: "com.example.hotspot", attributes: .concurrent)
let registered = NEHotspotHelper.register(options: options, queue: queue) { (cmd: NEHotspotHelperCommand) in
    switch cmd.commandType {
    case .filterScanList:
        let response = cmd.createResponse(.success)
        response.setNetworkList(cmd.networkList ?? [])
        response.deliver()
    case .evaluate:
        guard let network = cmd.network else { return }
        report("evaluate-securityType", true, "\(network.ssid) \(describe(network.securityType))")
        network.setConfidence(.high)
        let response = cmd.createResponse(.success)
        response.setNetwork(network)
        response.deliver()
    case .authenticate:
        let ok = authenticate(cmd)
        cmd.createResponse(ok ? .success : .failure).deliver()
    case .maintain:
        cmd.createResponse(.success).deliver()
    default:
        cmd.createResponse(.commandNotRecognized).deliver()
    }
}
FileHandle.standardOutput.write("registered \(registered)\n".data(using: .utf8)!)
guard registered else { exit(1) }
dispatchMain()
