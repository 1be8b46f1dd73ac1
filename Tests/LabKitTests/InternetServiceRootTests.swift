import Foundation
import HotspotHelper
import HotspotSystem
import Netlink
import Testing
import TestSupport
@testable import LabKit

/// The lab internet served in the lab runner's own process (`InternetService`): its sockets are made inside the lab's
/// internet namespace, so a client there reaches it on HTTP and HTTPS (the lab CA's certificate for the SNI name) on
/// both families; its lines go to the lab's `internet.log`; `stop` ends it, a request that never gets an answer (a
/// `hang` route) included, and nothing listens afterwards.
@Suite("the lab internet in the runner's process (root, host kernel)", .serialized, .requiresRoot)
struct InternetServiceRootTests {
    @Test("root: probe over HTTP and HTTPS in its namespace, IPv4 and IPv6; stop ends a request to a hang route and closes the sockets")
    func servesInsideItsNamespace() throws {
        let namespace = try NetworkNamespace.create(testPrefix("i") + "net")
        defer { try? namespace.delete() }
        try namespace.route.setUp("lo")
        let topology = try TopologyParser.parse(InternetTests.withServices, file: "t.yaml")
        let address = "\(topology.internet.address)"
        try namespace.route.addAddress(try IPPrefix.parse("\(address)/32"), to: "lo")
        try namespace.route.addAddress(IPPrefix(Internet.address6, length: 128), to: "lo")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hslinternet-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try PortalTLS.makeCA(labLogDirectory: directory, openssl: try RunningTopology.findTool("openssl"))
        let service = InternetService(internet: topology.internet, namespace: namespace, labLogDirectory: directory)
        try service.start()
        var stopped = false
        defer { if !stopped { try? service.stop() } }

        let ca = HotspotTLSTrust.caFile(PortalTLS.caFile(labLogDirectory: directory))
        let probe = "/hotspot-detect.html"
        let answers = try StationTraffic.getAll(["http://\(address)\(probe)", "https://\(address)\(probe)", "http://[\(Internet.address6)]\(probe)"],
                                                in: namespace, resolvConf: "/dev/null", trust: ca, mark: nil, timeout: .seconds(20))
        for answer in answers {
            let response = try answer.get()
            #expect(response.status == 200 && response.text.contains("Success"), "\(response.status) \(response.text.prefix(200))")
        }

        // A request to a `hang` route (the topology's `*.vendor.example` `/slow*`) gets no answer until `stop` ends
        // it: the raw request on a socket made inside the namespace, read until the server closes (120 s at most).
        let route = try #require(topology.internet.services.first { $0.fault == .hang }, "InternetTests.withServices has a hang route")
        #expect(route.host == "*.vendor.example")
        let hung = Locked<(bytes: Int, closed: Bool)?>(nil)
        let client = try SystemThread.start("hanging request") {
            let outcome = try? namespace.runInside { () -> (bytes: Int, closed: Bool) in
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                defer { close(fd) }
                var addr = sockaddr_in()
                addr.sin_family = sa_family_t(AF_INET)
                addr.sin_port = UInt16(80).bigEndian
                inet_pton(AF_INET, address, &addr.sin_addr)
                let connected = withUnsafePointer(to: &addr) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                guard connected == 0 else { return (-1, false) }
                var timeout = timeval(tv_sec: 120, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let request = Array("GET /slow1 HTTP/1.1\r\nHost: a.vendor.example\r\n\r\n".utf8)
                _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                var total = 0
                var chunk = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = recv(fd, &chunk, chunk.count, 0)
                    if n == 0 { return (total, true) }
                    if n < 0 { return (total, false) }
                    total += n
                }
            }
            hung.withLock { $0 = outcome }
        }
        // The request has reached its route once the responder logged it (a short poll, bounded).
        let log = service.log
        let deadline = ContinuousClock.now + .seconds(60)
        while !(readSmallFile(log) ?? "").contains("/slow1 -> service"), ContinuousClock.now < deadline { usleep(10_000) }
        #expect((readSmallFile(log) ?? "").contains("/slow1 -> service"), "\(readSmallFile(log) ?? "")")
        try service.stop()
        stopped = true
        client.join()
        let outcome = try #require(hung.withLock { $0 }, "the hanging request's thread ended without a result")
        #expect(outcome.bytes == 0 && outcome.closed, "the hanging request: \(outcome.bytes) bytes of answer, closed by the server: \(outcome.closed)")

        let text = readSmallFile(log) ?? ""
        #expect(text.contains("[internet] http GET \(address) \(probe) -> probe endpoint 200"), "\(text)")
        #expect(text.contains("[internet] https GET \(address) \(probe) -> probe endpoint 200"), "\(text)")
        #expect(text.contains("[tls] issued a certificate for \(address)"), "\(text)")
        // Stopped: nothing listens any more.
        let after = try StationTraffic.get("http://\(address)\(probe)", in: namespace, resolvConf: "/dev/null",
                                           trust: .system, mark: nil, timeout: .seconds(5))
        #expect((try? after.get()) == nil, "the internet still answered after stop")
    }
}

/// A hotspot's portal served in the lab runner's own process (`PortalService`): its sockets and its gate's netlink
/// sockets are made inside the hotspot's namespace; a client there gets the kind's page; its lines go to the hotspot's
/// `portal.log`; after `stop` nothing listens; a bad setting fails before anything is served or written.
@Suite("a hotspot's portal in the runner's process (root, host kernel)", .serialized, .requiresRoot)
struct PortalServiceRootTests {
    @Test("root: the kind's page from inside the hotspot's namespace, its lines in portal.log; stopped, nothing listens; a bad https-only value refused first")
    func servesTheKind() throws {
        let namespace = try NetworkNamespace.create(testPrefix("p") + "h0")
        defer { try? namespace.delete() }
        try namespace.route.addAddress(try IPPrefix.parse("198.51.100.1/32"), to: "lo")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hslportal-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory + "/cafe", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let topology = try TopologyParser.parse("""
            name: t
            hotspots:
              - name: cafe
                ssid: Cafe
                bssid: "02:00:00:00:01:00"
                gateway: {subnet: 198.51.100.0/24, portal: {kind: form-login, username: u, password: p}}
            """, file: "t.yaml")
        let cafe = try #require(topology.hotspots.first)
        let settings = try #require(cafe.gateway.portal)
        let launcher = RecordingLauncher()  // asked for nothing: no process is started

        let bad = PortalService(hotspot: cafe, kind: "click-through", settings: ["https-only": "yes"], namespace: namespace,
                                labLogDirectory: directory, launcher: launcher)
        let refused = #expect(throws: SystemError.self) { try bad.start() }
        #expect("\(refused.map { "\($0)" } ?? "")".contains("https-only"), "\(String(describing: refused))")
        #expect(!FileManager.default.fileExists(atPath: bad.log), "a portal refused before it started wrote its log")

        let portal = PortalService(hotspot: cafe, kind: settings.kind, settings: settings.settings, namespace: namespace,
                                   labLogDirectory: directory, launcher: launcher)
        try portal.start()
        var stopped = false
        defer { if !stopped { try? portal.stop() } }
        let url = "http://198.51.100.1:\(settings.port)/"
        let page = try StationTraffic.get(url, in: namespace, resolvConf: "/dev/null", trust: .system, mark: nil, timeout: .seconds(20)).get()
        #expect(page.status == 200 || page.status == 302, "\(page.status) \(page.text.prefix(300))")
        try portal.stop()
        stopped = true
        let after = try StationTraffic.get(url, in: namespace, resolvConf: "/dev/null", trust: .system, mark: nil, timeout: .seconds(5))
        #expect((try? after.get()) == nil, "the portal still answered after stop")
        let text = readSmallFile(portal.log) ?? ""
        #expect(text.contains("portal form-login session \(cafe.gateway.sessionSeconds)s gate inet/hotspot/authenticated"), "\(text)")
        #expect(text.contains("listening on 198.51.100.1:\(settings.port)"), "\(text)")
        #expect(text.contains("[portal] 127.0.0.1 GET / -> \(page.status)") || text.contains("GET / -> \(page.status)"), "\(text)")
        #expect(launcher.lines.isEmpty, "\(launcher.lines)")
    }
}
