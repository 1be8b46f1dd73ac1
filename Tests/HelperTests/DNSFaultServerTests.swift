import Foundation
import HotspotHelper
import HotspotSystem
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The `dns: servfail` fault's real server (`hotspot-dns-fault`) against the SDK's resolver, on loopback
/// (no root needed): every query is answered SERVFAIL at once, and the resolver says so.
@Suite struct DNSFaultServerTests {
    /// A UDP port free on 127.0.0.1 just now.
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 ? getsockname(fd, $0, &length) : -1 }
        }
        try #require(rc == 0, "bind a UDP socket on 127.0.0.1: \(String(cString: strerror(errno)))")
        return UInt16(bigEndian: sa.sin_port)
    }

    @Test func everyQueryIsAnsweredServfailAndLogged() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dnsfault-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = try Self.freePort()
        let server = try ChildProcess.spawn(ProcessConfiguration(
            try BuildProducts.locate("hotspot-dns-fault"),
            ["--listen", "127.0.0.1:\(port)", "--log", dir + "/dns.log", "--ready-file", dir + "/ready"]))
        defer { _ = try? server.terminate(grace: .seconds(1)) }
        let deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: dir + "/ready"), ContinuousClock.now < deadline, server.exitStatus == nil { usleep(10_000) }
        try #require(FileManager.default.fileExists(atPath: dir + "/ready"), "hotspot-dns-fault did not start")

        let resolver = HotspotResolver(nameservers: ["127.0.0.1"], port: port)
        let started = ContinuousClock.now
        #expect { try resolver.resolve("captive.apple.com", timeout: .seconds(30)) } throws: { error in
            "\(error)" == "resolve captive.apple.com via 127.0.0.1:\(port): DNS error SERVFAIL"
                || "\(error)" == "resolve captive.apple.com: DNS error SERVFAIL"
        }
        // SERVFAIL is an answer, not silence: the resolver gives up long before its 30 s (a bound loose enough
        // for a loaded machine; silence would take the whole 30 s).
        #expect(ContinuousClock.now - started < .seconds(15))
        let log = try String(contentsOfFile: dir + "/dns.log", encoding: .utf8)
        #expect(log.contains("query[A] captive.apple.com from 127.0.0.1: SERVFAIL"), "\(log)")
    }

    @Test func badArgumentsAreNamed() throws {
        let binary = try BuildProducts.locate("hotspot-dns-fault")
        let bad = try ProcessRunner.run(ProcessConfiguration(binary, ["--listen", "198.51.100.1:x"]))
        #expect(bad.status == .exited(64))
        #expect(bad.stderr.contains("--listen: expected IPV4[:PORT], found `198.51.100.1:x`"), "\(bad.stderr)")
        let rcode = try ProcessRunner.run(ProcessConfiguration(binary, ["--listen", "127.0.0.1", "--rcode", "teapot"]))
        #expect(rcode.stderr.contains("--rcode: unknown `teapot`"), "\(rcode.stderr)")
    }
}
