import Foundation
import HotspotSystem
import Testing
import TestSupport
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
}
