import Foundation
import HotspotCore
import Portals
import Testing
@testable import CaptiveAPIHelper
@testable import HotspotHelper
@testable import PortalHelper
import ReferenceHelperSupport
@testable import VoucherHelper

/// A gate that remembers who is let through (stands in for the nft set).
final class LoopbackGate: PortalGate, @unchecked Sendable {
    private let lock = NSLock()
    private var allowed: Set<String> = []
    private(set) var log: [String] = []
    func allow(mac: String, ip: String, seconds: Int) async throws {
        lock.withLock {
            allowed.insert(ip)
            log.append("allow \(ip) \(seconds)")
        }
    }
    func revoke(mac: String, ip: String) async throws {
        lock.withLock {
            allowed.remove(ip)
            log.append("revoke \(ip)")
        }
    }
    func isAllowed(_ ip: String) -> Bool { lock.withLock { allowed.contains(ip) } }
    var entries: [String] { lock.withLock { log } }
}

struct LoopbackNeighbours: NeighbourLookup {
    func mac(for ip: String) -> String? { ip == "127.0.0.1" ? "02:00:00:00:00:0a" : nil }
}

/// The lab in one process: a real portal kind served by `PortalServer` on 127.0.0.1, the real HTTP client, and a
/// stand-in for the gate's redirect: the probe (captive.apple.com) is answered by the internet's success page
/// once the gate lets 127.0.0.1 through, else it is sent to the portal as an intercepted request (Host
/// captive.apple.com), which answers the 302 the helper must see.
final class LoopbackPortal: @unchecked Sendable {
    let gate: LoopbackGate
    let port: UInt16
    let task: Task<Void, any Error>
    let client = HotspotHTTPClient(timeout: .seconds(10), resolver: HotspotResolver(nameservers: []))
    private let lock = NSLock()
    private var sentLog: [String] = []

    private init(port: UInt16, task: Task<Void, any Error>, gate: LoopbackGate) {
        self.port = port
        self.task = task
        self.gate = gate
    }

    /// Serves `kind` on 127.0.0.1 (a free port; retried if another process takes it first).
    static func start(_ kind: String, settings: [String: String] = [:], session: Int = 30) async throws -> LoopbackPortal {
        // Behind its session cookie when the settings ask (`session-cookie`, as hotspot-portal serves it).
        let portal = try SessionCookie.guarded(try PortalRegistry.make(kind, settings: settings), settings: settings, secure: false)
        for _ in 0..<5 {
            let gate = LoopbackGate()
            let port = closedPort()
            let sessions = PortalSessions(portalURL: "http://127.0.0.1:\(port)/", sessionSeconds: session, gate: gate,
                                          neighbours: LoopbackNeighbours())
            let server = PortalServer(kind: portal, context: sessions, portalHost: "127.0.0.1")
            let (events, continuation) = AsyncStream<Bool>.makeStream()
            let task = Task.detached {
                defer { continuation.yield(false) }
                try await server.run(ip: "127.0.0.1", port: port, onListening: { continuation.yield(true) })
            }
            for await listening in events {
                if listening { return LoopbackPortal(port: port, task: task, gate: gate) }
                break
            }
        }
        throw POSIXError(.EADDRINUSE)
    }

    var base: String { "http://127.0.0.1:\(port)" }
    var sent: [String] { lock.withLock { sentLog } }

    /// What `command.http` is to a helper.
    var http: (HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse {
        { [self] (request) throws(HotspotTrafficError) -> HotspotHTTPResponse in
            lock.withLock { sentLog.append("\(request.method) \(request.url)") }
            guard let url = HotspotURL(request.url), url.host == "captive.apple.com" else { return try client.send(request) }
            if gate.isAllowed("127.0.0.1") {
                return HotspotHTTPResponse(url: url, status: 200, reason: "OK", headers: [("Content-Type", "text/html")],
                                           body: Array(InternetServer.appleSuccess.utf8))
            }
            var intercepted = request
            intercepted.url = base + url.path
            intercepted.headers.append(("Host", "captive.apple.com"))
            var response = try client.send(intercepted)
            response.url = url
            return response
        }
    }

    func stop() { task.cancel() }
}

/// Runs blocking code (the helpers' synchronous HTTP) on its own thread, off Swift's cooperative pool, which the
/// portal server needs (two threads on a two-CPU machine).
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// The reference helpers' decisions against the real portal kinds, in process (no root, no namespaces).
@Suite("Reference helpers' decisions (portal kinds on loopback)")
struct HelperLogicTests {
    static func portalLogic(_ arguments: [String]) throws -> PortalLogic {
        PortalLogic(options: try PortalHelper.PortalHelperOptions.parse(arguments))
    }

    /// One step of a scenario: what the helper decided, in words for the failure message.
    struct Outcome: Sendable, CustomStringConvertible {
        var result: HotspotHelperResult?
        var confidence: HotspotHelperConfidence?
        var reason: String
        init(result: HotspotHelperResult?, reason: String) { (self.result, self.reason) = (result, reason) }
        // Every reference helper decides with ReferenceHelperSupport's `Decision` (nil: the voucher helper's presentUI
        // withdrawn while waiting).
        init(_ d: Decision?) { (result, confidence, reason) = (d?.result, d?.confidence, d?.reason ?? "no answer") }
        var description: String { "\(result.map { "\($0)" } ?? "none") \(confidence.map { "confidence \($0)" } ?? ""): \(reason)" }
    }

    @Test(arguments: [("form-login", ["username": "guest", "password": "croissant"], "guest:croissant", "guest:baguette"),
                      ("wispr", ["username": "member", "password": "lounge-pass"], "member:lounge-pass", "member:nope")])
    func portalHelperSignsInWithTheAccount(_ kind: String, _ settings: [String: String], _ right: String, _ wrong: String) async throws {
        let lab = try await LoopbackPortal.start(kind, settings: settings)
        defer { lab.stop() }
        let wrongLogic = try Self.portalLogic(["--account", wrong])
        let noAccount = try Self.portalLogic([])
        let logic = try Self.portalLogic(["--account", right])
        let o = try await blocking { () -> [String: Outcome] in
            var o: [String: Outcome] = [:]
            o["evaluate"] = Outcome(wrongLogic.evaluate(lab.http, lease: [:]))
            o["wrong"] = Outcome(wrongLogic.authenticate(lab.http, ssid: "Cafe"))
            o["noAccount"] = Outcome(noAccount.authenticate(lab.http, ssid: "Cafe"))
            o["allowedBefore"] = Outcome(result: nil, reason: "\(lab.gate.isAllowed("127.0.0.1"))")
            o["right"] = Outcome(logic.authenticate(lab.http, ssid: "Cafe"))
            o["allowedAfter"] = Outcome(result: nil, reason: "\(lab.gate.isAllowed("127.0.0.1"))")
            o["maintain"] = Outcome(logic.maintain(lab.http))
            o["evaluateOnline"] = Outcome(logic.evaluate(lab.http, lease: [:]))
            o["logoff"] = Outcome(logic.logoff(lab.http, ssid: "Cafe"))
            o["logoffTarget"] = Outcome(result: nil, reason: lab.sent.last ?? "")
            o["allowedAfterLogoff"] = Outcome(result: nil, reason: "\(lab.gate.isAllowed("127.0.0.1"))")
            o["maintainAfterLogoff"] = Outcome(logic.maintain(lab.http))
            o["logoffAgain"] = Outcome(logic.logoff(lab.http, ssid: "Cafe"))
            return o
        }
        #expect(o["evaluate"]?.confidence == .high, "\(o["evaluate"]!)")
        #expect(o["wrong"]?.result == .failure, "\(o["wrong"]!)")
        #expect(o["wrong"]?.reason.contains(kind == "wispr" ? "ResponseCode 100" : "401") == true, "\(o["wrong"]!)")
        #expect(o["noAccount"]?.result == .failure && o["noAccount"]?.reason.contains("no --account") == true, "\(o["noAccount"]!)")
        #expect(o["allowedBefore"]?.reason == "false")
        #expect(o["right"]?.result == .success, "\(o["right"]!)")
        #expect(o["allowedAfter"]?.reason == "true")
        #expect(o["maintain"]?.result == .success, "\(o["maintain"]!)")
        #expect(o["evaluateOnline"]?.confidence == HotspotHelperConfidence.none, "online: not captive")
        #expect(o["logoff"]?.result == .success, "\(o["logoff"]!)")
        #expect(o["logoffTarget"]?.reason == (kind == "wispr" ? "GET \(lab.base)/wispr/logoff" : "GET \(lab.base)/logoff"))
        #expect(o["allowedAfterLogoff"]?.reason == "false")
        #expect(o["maintainAfterLogoff"]?.result == .authenticationRequired, "\(o["maintainAfterLogoff"]!)")
        #expect(o["logoffAgain"]?.result == .failure, "a second logoff has no session")
    }

    @Test func portalHelperAcceptsTerms() async throws {
        let lab = try await LoopbackPortal.start("click-through")
        defer { lab.stop() }
        let logic = try Self.portalLogic([])
        let (evaluation, authentication) = try await blocking {
            (Outcome(logic.evaluate(lab.http, lease: [:])), Outcome(logic.authenticate(lab.http, ssid: "Cafe")))
        }
        #expect(evaluation.confidence == .high, "\(evaluation)")
        #expect(authentication.result == .success, "\(authentication)")
        #expect(lab.sent.contains("POST \(lab.base)/accept"))
        #expect(lab.gate.entries == ["allow 127.0.0.1 30"])
    }

    @Test func portalHelperSignsInWithAnEmailAddressOnlyWhenGivenOne() async throws {
        let lab = try await LoopbackPortal.start("email")
        defer { lab.stop() }
        let without = try Self.portalLogic(["--account", "guest:croissant"])
        let with = try Self.portalLogic(["--email", "guest@cafe.example"])
        let (declined, evaluation, authentication) = try await blocking {
            (Outcome(without.evaluate(lab.http, lease: [:])), Outcome(with.evaluate(lab.http, lease: [:])),
             Outcome(with.authenticate(lab.http, ssid: "Cafe")))
        }
        #expect(declined.confidence == HotspotHelperConfidence.none && declined.reason.contains("no --email"), "\(declined)")
        #expect(evaluation.confidence == .high && evaluation.reason.contains("e-mail portal"), "\(evaluation)")
        #expect(authentication.result == .success, "\(authentication)")
        #expect(lab.sent.contains("POST \(lab.base)/email"))
        #expect(lab.gate.entries == ["allow 127.0.0.1 30"])
        #expect(throws: PortalHelperOptions.UsageError.self) { try PortalHelperOptions.parse(["--email", "not-an-address"]) }
    }

    @Test(arguments: ["voucher", "captive-api", "broken-500", "broken-redirect-loop", "broken-empty"])
    func portalHelperClaimsNothingElse(_ kind: String) async throws {
        let lab = try await LoopbackPortal.start(kind, settings: kind == "voucher" ? ["voucher": "ROOM-4217"] : [:])
        defer { lab.stop() }
        let logic = try Self.portalLogic(["--account", "guest:croissant"])
        let (evaluation, authentication) = try await blocking {
            // Asked to authenticate anyway (a stale cache entry): not a network it signs in to.
            (Outcome(logic.evaluate(lab.http, lease: [:])), Outcome(logic.authenticate(lab.http, ssid: "X")))
        }
        #expect(evaluation.confidence == HotspotHelperConfidence.none, "\(kind): \(evaluation)")
        #expect(authentication.result == .unsupportedNetwork, "\(kind): \(authentication)")
        #expect(lab.gate.entries.isEmpty)
    }

    @Test func portalHelperLeavesAnnouncedAPIsAlone() async throws {
        let lab = try await LoopbackPortal.start("click-through")
        defer { lab.stop() }
        let logic = try Self.portalLogic([])
        let d = try await blocking { Outcome(logic.evaluate(lab.http, lease: ["opt114": "687474703a2f2f782f"])) }
        #expect(d.confidence == HotspotHelperConfidence.none && d.reason.contains("RFC 8908 API (http://x/)"), "\(d)")
        #expect(lab.sent.isEmpty, "no traffic needed")
    }

    @Test func portalErrorsAreTemporary() throws {
        // A portal that answers the login with 503, and one that is gone.
        let server = try CannedServer { request in
            switch request.requestLine {
            case let line where line.hasPrefix("GET /hotspot-detect.html"):
                return [.send("HTTP/1.1 302 Found\r\nLocation: /portal\r\nContent-Length: 0\r\n\r\n")]
            case let line where line.hasPrefix("GET /portal"):
                let page = "<form method=post action=/login><input name=user><input type=password name=pass></form>"
                return [.send("HTTP/1.1 200 OK\r\nContent-Length: \(page.utf8.count)\r\n\r\n\(page)")]
            default:
                return [.send("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy")]
            }
        }
        defer { server.stop() }
        let client = HotspotHTTPClient(timeout: .seconds(10), resolver: HotspotResolver(nameservers: []))
        let viaServer = { (request: HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse in
            var r = request
            if let url = HotspotURL(request.url), url.host == "captive.apple.com" { r.url = server.url + url.path }
            return try client.send(r)
        }
        let logic = try Self.portalLogic(["--account", "a:b"])
        let busy = logic.authenticate(viaServer, ssid: "Cafe")
        #expect(busy.result == .temporaryFailure && busy.reason.contains("503"), "\(busy.reason)")
        #expect(server.received.last?.requestLine == "POST /login HTTP/1.1")
        #expect(String(decoding: server.received.last!.body, as: UTF8.self) == "user=a&pass=b")

        let gone = closedPort()
        let refused = { (request: HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse in
            var r = request
            r.url = "http://127.0.0.1:\(gone)/"
            return try client.send(r)
        }
        let down = logic.authenticate(refused, ssid: "Cafe")
        #expect(down.result == .temporaryFailure && down.reason.contains("ECONNREFUSED"), "\(down.reason)")
        #expect(logic.evaluate(refused, lease: [:]).confidence == HotspotHelperConfidence.none)
        #expect(logic.maintain(refused).result == .failure)
    }

    @Test func filterScanListClaimsOnlyConfiguredNetworks() throws {
        func net(_ ssid: String, _ security: SecurityType) -> SDKNetwork {
            SDKNetwork(HotspotCore.HotspotNetwork(ssid: ssid, bssid: "02:00:00:00:00:01", security: security))
        }
        let list = [net("Cafe", .open), net("Home", .wpa2Personal), net("Office", .wpa2Personal), net("Other", .open)]
        let none = try Self.portalLogic([]).filter(list)
        #expect(none.claimed.isEmpty)
        let some = try Self.portalLogic(["--network", "Cafe", "--network", "Home:hunter22", "--network", "Office"]).filter(list)
        #expect(some.claimed.map { $0.ssid } == ["Cafe", "Home"], "\(some.reason)")
        #expect(some.claimed[1].password == "hunter22" && some.claimed[0].password == nil)
        #expect(some.reason.contains("Office (secure, no password configured)"))
    }

    @Test func voucherHelperAsksTheUser() async throws {
        let lab = try await LoopbackPortal.start("voucher", settings: ["voucher": "ROOM-4217"])
        defer { lab.stop() }
        let other = try await LoopbackPortal.start("form-login", settings: ["username": "a", "password": "b"])
        defer { other.stop() }
        let ui = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-ui-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: ui, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: ui) }
        let logic = VoucherLogic(options: try VoucherHelper.VoucherHelperOptions.parse(["--ui", ui]))

        @Sendable func present(typing code: String) -> Outcome {
            Thread.detachNewThread {
                ms(150)
                try? code.write(toFile: ui + "/.typing", atomically: false, encoding: .utf8)
                rename(ui + "/.typing", ui + "/input")
            }
            return Outcome(logic.presentUI(lab.http, ssid: "Hotel", cancelled: { false }))
        }
        let o = try await blocking { () -> [String: Outcome] in
            var o: [String: Outcome] = [:]
            o["evaluate"] = Outcome(logic.evaluate(lab.http))
            o["authenticate"] = Outcome(logic.authenticate(lab.http, ssid: "Hotel"))
            o["wrong"] = present(typing: "ROOM-0000\n")
            o["inputLeft"] = Outcome(result: nil, reason: "\(FileManager.default.fileExists(atPath: ui + "/input"))")
            o["right"] = present(typing: "room-4217\n")
            o["allowed"] = Outcome(result: nil, reason: "\(lab.gate.isAllowed("127.0.0.1"))")
            o["maintain"] = Outcome(logic.maintain(lab.http))
            o["logoff"] = Outcome(logic.logoff(lab.http, ssid: "Hotel"))
            o["maintainAfterLogoff"] = Outcome(logic.maintain(lab.http))
            // Withdrawn while waiting: no answer at all.
            o["cancelled"] = Outcome(logic.presentUI(lab.http, ssid: "Hotel", cancelled: { true }))
            // The voucher helper leaves other portals alone.
            o["otherPortal"] = Outcome(logic.evaluate(other.http))
            return o
        }
        #expect(o["evaluate"]?.confidence == .high, "\(o["evaluate"]!)")
        #expect(o["authenticate"]?.result == .uiRequired, "\(o["authenticate"]!)")
        #expect(o["wrong"]?.result == .failure && o["wrong"]?.reason.contains("403") == true, "\(o["wrong"]!)")
        #expect(o["inputLeft"]?.reason == "false", "the input file is removed after reading")
        #expect(o["right"]?.result == .success, "\(o["right"]!)")
        #expect(o["allowed"]?.reason == "true")
        #expect(o["maintain"]?.result == .success, "\(o["maintain"]!)")
        #expect(o["logoff"]?.result == .success, "\(o["logoff"]!)")
        #expect(o["maintainAfterLogoff"]?.result == .authenticationRequired, "\(o["maintainAfterLogoff"]!)")
        #expect(o["cancelled"]?.result == nil && o["cancelled"]?.reason == "no answer", "\(o["cancelled"]!)")
        #expect(o["otherPortal"]?.confidence == HotspotHelperConfidence.none, "\(o["otherPortal"]!)")
    }

    @Test func captiveAPIHelperUsesTheAPI() async throws {
        let lab = try await LoopbackPortal.start("captive-api", settings: ["can-extend-session": "true"], session: 30)
        defer { lab.stop() }
        let api = lab.base + "/captive-api"
        let lease = ["opt114": Array(api.utf8).map { String(format: "%02x", $0) }.joined()]
        let logic = CaptiveAPILogic(options: try CaptiveAPIHelper.CaptiveAPIHelperOptions.parse([]))
        let o = try await blocking { () -> [String: Outcome] in
            var o: [String: Outcome] = [:]
            o["noLease"] = Outcome(logic.evaluate(lab.http, lease: [:]))
            o["evaluate"] = Outcome(logic.evaluate(lab.http, lease: lease))
            o["maintainBefore"] = Outcome(logic.maintain(lab.http, ssid: "Api", lease: lease))
            o["authenticate"] = Outcome(logic.authenticate(lab.http, ssid: "Api", lease: lease))
            o["evaluateOnline"] = Outcome(logic.evaluate(lab.http, lease: lease))
            // 30 s left, under a minute, and the API allows extending: maintain extends.
            o["maintain"] = Outcome(logic.maintain(lab.http, ssid: "Api", lease: lease))
            o["logoff"] = Outcome(logic.logoff(lab.http, ssid: "Api", lease: lease))
            o["maintainAfterLogoff"] = Outcome(logic.maintain(lab.http, ssid: "Api", lease: lease))
            return o
        }
        #expect(o["noLease"]?.confidence == HotspotHelperConfidence.none, "no option 114: \(o["noLease"]!)")
        #expect(o["evaluate"]?.confidence == .high, "\(o["evaluate"]!)")
        #expect(o["maintainBefore"]?.result == .authenticationRequired, "\(o["maintainBefore"]!)")
        #expect(o["authenticate"]?.result == .success, "\(o["authenticate"]!)")
        #expect(lab.sent.contains("POST \(lab.base)/accept"))
        #expect(o["evaluateOnline"]?.confidence == HotspotHelperConfidence.none, "not captive any more")
        #expect(o["maintain"]?.result == .success && o["maintain"]?.reason.contains("extended the session") == true, "\(o["maintain"]!)")
        #expect(lab.gate.entries == ["allow 127.0.0.1 30", "allow 127.0.0.1 30", "revoke 127.0.0.1"])
        #expect(o["logoff"]?.result == .success, "\(o["logoff"]!)")
        #expect(o["maintainAfterLogoff"]?.result == .authenticationRequired, "\(o["maintainAfterLogoff"]!)")
    }
}
