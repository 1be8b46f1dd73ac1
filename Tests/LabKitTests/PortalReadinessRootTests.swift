import Foundation
import HotspotSystem
import Netlink
import Portals
import Testing
import TestSupport
@testable import LabKit

/// `hotspot-portal` is ready once it has answered a request, not only once it listens: it asks itself for
/// `PortalServer.readinessPath` before it writes its ready file (under the VM's emulation a server's first request
/// cost about 0.2 s more than the next ones, which the helper's first probe paid). The readiness path is answered 204
/// ahead of the kind and of the internet's routes; every other path still reaches them (the control).
@Suite("hotspot-portal's readiness request (root, host kernel)", .serialized, .requiresRoot)
struct PortalReadinessRootTests {
    static let cases: [(name: String, arguments: [String], other: String, otherStatus: Int)] = [
        ("internet", ["--internet"], "/hotspot-detect.html", 200),
        ("click-through portal", ["--kind", "click-through", "--gate-table", "inet/hslready/authenticated"], "/", 200),
    ]

    @Test("root: answered 204 before the ready file, not passed to the kind or the routes; other paths are", arguments: cases)
    func readinessRequest(_ c: (name: String, arguments: [String], other: String, otherStatus: Int)) throws {
        let namespace = try NetworkNamespace.create(testPrefix("r") + "p")
        defer { try? namespace.delete() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hslready-\(getpid())-\(c.name.count)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/server.log", ready = directory + "/ready"
        let server = try ChildProcess.spawn(ProcessConfiguration(
            try BuildProducts.locate("hotspot-portal", environmentKey: "HOTSPOT_PORTAL"),
            c.arguments + ["--listen", "127.0.0.1:8080", "--ready-file", ready], stdout: .file(log), stderr: .file(log))
            .inNetworkNamespace(namespace.name))
        defer { _ = try? server.terminate() }
        let deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: ready), server.exitStatus == nil, ContinuousClock.now < deadline {
            usleep(20_000)
        }
        try #require(FileManager.default.fileExists(atPath: ready), "no ready file: \(readSmallFile(log) ?? "")")
        #expect((readSmallFile(log) ?? "").contains("ready: \(PortalServer.readinessPath) answered 204"), "\(readSmallFile(log) ?? "")")

        let readiness = try StationTraffic.get("http://127.0.0.1:8080" + PortalServer.readinessPath, in: namespace, resolvConf: "/dev/null",
                                               trust: .system, mark: nil, timeout: .seconds(10)).get()
        #expect(readiness.status == 204)
        let other = try StationTraffic.get("http://127.0.0.1:8080" + c.other, in: namespace, resolvConf: "/dev/null",
                                           trust: .system, mark: nil, timeout: .seconds(10)).get()
        #expect(other.status == c.otherStatus, "\(other.status) \(other.text.prefix(200))")
        let text = readSmallFile(log) ?? ""
        if c.name == "internet" {
            // The responder logs every request it answers: the control path, never the readiness path.
            #expect(text.contains("[internet] http GET 127.0.0.1 \(c.other) ->"), "\(text)")
            #expect(!text.contains("[internet] http GET 127.0.0.1 \(PortalServer.readinessPath)"), "\(text)")
        }
    }
}
