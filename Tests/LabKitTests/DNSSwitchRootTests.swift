import Foundation
import HotspotHelper
import HotspotSystem
import Netlink
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
@testable import LabKit
@testable import LabServices

/// DNS faults switch with no window (issue 25: "checks are not judged against a lab action that had not yet taken
/// effect"). A station asks the hotspot's DNS for captive.apple.com over and over while the lab switches its DNS
/// normal → hijack → private → normal (`setDNS`, the path scenarios and certify take): every query is answered,
/// the old way or the new one, and the answers go through the phases in order. Restarting dnsmasq, as the switch
/// once did, left queries unanswered meanwhile (and stopped DHCP).
@Suite("DNS faults switch atomically (root, host kernel, veth)", .serialized, .requiresRoot)
struct DNSSwitchRootTests {
    @Test("root: queries throughout normal → hijack → private → normal are all answered, in phase order")
    func noWindow() throws {
        try withLab(try labTopology(kind: "click-through")) { client in
            _ = try client.dhcp()
            let answers = Locked<[String?]>([])
            let stop = Locked(false)
            let querier = Thread {
                while !stop.withLock({ $0 }) {
                    let answer = (try? client.resolve("captive.apple.com")) ?? nil
                    answers.withLock { $0.append(answer) }
                }
            }
            querier.start()
            /// Waits (for answers, not for a time) until `count` more queries were answered after now.
            func waitForAnswers(_ count: Int) {
                let start = answers.withLock { $0.count }
                while answers.withLock({ $0.count }) < start + count { usleep(5_000) }
            }
            let internet = client.internetIP, gateway = client.gateway, privateAddress = DnsmasqConfig.privateAddress
            waitForAnswers(3)
            let hotspot = client.running.hotspot.name
            for mode in ["hijack", "private", "normal"] {
                _ = try client.lab.setDNS(hotspot: hotspot, mode: mode)
                waitForAnswers(3)
            }
            stop.withLock { $0 = true }
            while !querier.isFinished { usleep(5_000) }
            let all = answers.withLock { $0 }
            print("DNS switch: \(all.count) queries: \(all.map { $0 ?? "none" }.joined(separator: " "))")
            #expect(all.allSatisfy { $0 != nil }, "a query went unanswered during a switch: \(all)")
            // The phases in order: each answer is the current phase's or the next one's.
            let phases = [internet, gateway, privateAddress, internet]
            var phase = 0
            for answer in all.compactMap({ $0 }) {
                while phase < phases.count && phases[phase] != answer { phase += 1 }
                #expect(phase < phases.count, "answer \(answer) out of phase order: \(all)")
            }
            #expect(phase == phases.count - 1, "the switches all took effect: \(all)")
            for (address, name) in [(gateway, "hijack"), (privateAddress, "private")] {
                #expect(all.contains(address), "no query saw the \(name) phase: \(all)")
            }
            // DHCP kept running: the hotspot's dnsmasq was never restarted (one log, no .1).
            let dnsLog = client.running.dhcpDNS.log
            #expect(!FileManager.default.fileExists(atPath: dnsLog + ".1"), "dnsmasq was restarted")
        }
    }

    /// A station asks the same question from the same source port in every phase, as a stub resolver that keeps
    /// its socket does. Each answer is the phase's own: no connection-tracking entry of an earlier query carries
    /// the previous mode (a `dnat` redirect did: the second query of a port went where the first had gone).
    /// `no-answer` over a switched fault drops the queries too (they were going to the side server).
    @Test("root: the same source port gets each phase's answer; no-answer over a switched fault answers nothing")
    func sameSourcePort() throws {
        try withLab(try labTopology(kind: "click-through")) { client in
            _ = try client.dhcp()
            let station = try #require(client.running.stationNamespace)
            let hotspot = client.running.hotspot.name
            let internet = client.internetIP, gateway = client.gateway, privateAddress = DnsmasqConfig.privateAddress
            let port: UInt16 = 40053
            func ask(wait seconds: Int) throws -> String? {
                try Self.resolve("captive.apple.com", server: gateway, fromPort: port, in: station, wait: seconds)
            }
            #expect(try ask(wait: 10) == internet, "normal")
            for (mode, expected) in [("hijack", gateway), ("private", privateAddress), ("normal", internet),
                                     ("hijack", gateway), ("normal", internet)] {
                _ = try client.lab.setDNS(hotspot: hotspot, mode: mode)
                #expect(try ask(wait: 10) == expected, "\(mode) from source port \(port)")
                #expect(try client.resolve("captive.apple.com") == expected, "\(mode) from a new port")
                #expect(try Self.resolveOverTCP("captive.apple.com", server: gateway, in: station) == expected, "\(mode) over TCP")
            }
            _ = try client.lab.setDNS(hotspot: hotspot, mode: "private")
            _ = try client.lab.setDNS(hotspot: hotspot, mode: "no-answer")
            #expect(try ask(wait: 2) == nil, "no-answer over private: a query was answered")
            _ = try client.lab.setDNS(hotspot: hotspot, mode: "hijack")
            #expect(try ask(wait: 10) == gateway, "hijack after no-answer")
        }
    }

    /// The IPv4 socket address `ip`:`port`.
    static func address(_ ip: String, _ port: UInt16) -> sockaddr_in {
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = port.bigEndian
        sa.sin_addr.s_addr = inet_addr(ip)
        return sa
    }

    /// One A query for `name` to `server`:53 from UDP `port` inside `namespace`; nil when no answer came in `wait` s.
    static func resolve(_ name: String, server: String, fromPort port: UInt16, in namespace: NetworkNamespace, wait: Int) throws -> String? {
        try namespace.runInside { () throws -> String? in
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            guard fd >= 0 else { throw SystemError.current("open a UDP socket in", namespace.name) }
            defer { close(fd) }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            var timeout = timeval(tv_sec: wait, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var local = Self.address("0.0.0.0", port)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { throw SystemError.current("bind UDP port \(port) in", namespace.name) }
            var remote = Self.address(server, 53)
            let id = UInt16.random(in: 1...UInt16.max)
            let query = try HotspotDNS.query(id: id, name: name)
            let sent = withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, query, query.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard sent == query.count else { throw SystemError.current("send a DNS query to \(server) in", namespace.name) }
            var buffer = [UInt8](repeating: 0, count: 1500)
            let received = recv(fd, &buffer, buffer.count, 0)
            if received < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
                throw SystemError.current("receive a DNS answer from \(server) in", namespace.name)
            }
            return try HotspotDNS.addresses(inResponse: Array(buffer.prefix(received)), id: id, name: name).first
        }
    }

    /// One A query for `name` over TCP to `server`:53 inside `namespace` (RFC 1035 4.2.2: a two-byte length first).
    static func resolveOverTCP(_ name: String, server: String, in namespace: NetworkNamespace) throws -> String? {
        try namespace.runInside { () throws -> String? in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw SystemError.current("open a TCP socket in", namespace.name) }
            defer { close(fd) }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var remote = Self.address(server, 53)
            let connected = withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw SystemError.current("connect to \(server):53 over TCP in", namespace.name) }
            let id = UInt16.random(in: 1...UInt16.max)
            let query = try HotspotDNS.query(id: id, name: name)
            let message = [UInt8(query.count >> 8), UInt8(query.count & 0xff)] + query
            guard send(fd, message, message.count, 0) == message.count else {
                throw SystemError.current("send a DNS query over TCP to \(server) in", namespace.name)
            }
            var answer: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1500)
            while answer.count < 2 || answer.count < 2 + (Int(answer[0]) << 8 | Int(answer[1])) {
                let received = recv(fd, &buffer, buffer.count, 0)
                if received == 0 { return nil }
                guard received > 0 else { throw SystemError.current("receive a DNS answer over TCP from \(server) in", namespace.name) }
                answer += buffer.prefix(received)
            }
            return try HotspotDNS.addresses(inResponse: Array(answer.dropFirst(2)), id: id, name: name).first
        }
    }
}
