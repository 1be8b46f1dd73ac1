import Foundation
import HotspotSystem
import Netlink
import Testing
import TestSupport
@testable import LabKit

/// `hotspot-lab up` refuses a bad topology before creating anything, naming file:line:column.
@Suite struct TopologyCommandTests {
    @Test func upRefusesBadTopologyBeforeCreatingAnything() throws {
        let binary = try BuildProducts.locate("hotspot-lab")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsltopo-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/bad.yaml"
        try TopologyParserTests.base.replacingOccurrences(of: "psk: x", with: "")
            .replacingOccurrences(of: "    security: open", with: "    security:\n      kind: wpa2-psk\n      psk: short")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.run(ProcessConfiguration(binary, ["up", file, "--link", "veth", "--logs", dir + "/logs"]),
                                           timeout: .seconds(60))
        #expect(result.status == .exited(2))
        #expect(result.stderr.contains("\(file):8:12: hotspots[0].security.psk: expected a PSK of 8 to 63 characters, found 5"),
                "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty, "stdout: \(result.stdout)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/logs"), "a log folder was created")
    }

    /// A directory given as the topology: said so (it used to say "cannot read the file: Success").
    @Test func upRefusesADirectory() throws {
        let binary = try BuildProducts.locate("hotspot-lab")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsltopo-dir-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try ProcessRunner.run(ProcessConfiguration(binary, ["up", dir, "--link", "veth", "--logs", dir + "/logs"]),
                                           timeout: .seconds(60))
        #expect(result.status == .exited(2))
        #expect(result.stderr.contains("\(dir):0:0: (document): cannot read the file: it is a directory; expected a YAML file"),
                "stderr: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/logs"), "a log folder was created")
    }
}

/// `hotspot-lab up` stays up until Ctrl-C or `hotspot-lab down`, then leaves nothing behind.
@Suite("hotspot-lab up/down (root)", .serialized, .requiresRoot)
struct TopologyUpDownRootTests {
    func startUp(_ log: String) throws -> (ChildProcess, String) {
        let binary = try BuildProducts.locate("hotspot-lab")
        let root = TopologyParserTests.root
        let child = try ChildProcess.spawn(ProcessConfiguration(
            binary, ["up", root + "/topologies/captive.yaml", "--link", "veth", "--logs", FileManager.default.temporaryDirectory.path + "/hsltopo-logs"],
            stdout: .file(log, append: false), stderr: .file(log)))
        let deadline = ContinuousClock.now + .seconds(300)
        while !(readSmallFile(log)?.contains("tears it down") ?? false) {
            if let status = try child.poll() { Issue.record("up ended early: \(status): \(readSmallFile(log) ?? "")"); break }
            if ContinuousClock.now > deadline { Issue.record("up not up within 300 s: \(readSmallFile(log) ?? "")"); break }
            usleep(20_000)
        }
        let text = readSmallFile(log) ?? ""
        let prefix = text.split(separator: " ").dropFirst().first.map(String.init) ?? ""
        #expect(text.hasPrefix("lab hsl") && prefix.count == 7, "output: \(text)")
        #expect(text.contains("ip netns exec \(prefix)h0 bash") && text.contains("portal log: "))
        #expect(NetworkNamespace.list().contains("\(prefix)h0"))
        return (child, prefix)
    }

    @Test func downCommandAndInterruptTearDown() throws {
        let log = FileManager.default.temporaryDirectory.path + "/hsltopo-up-\(getpid()).log"
        defer { unlink(log) }
        // 1. `hotspot-lab down PREFIX` from another process.
        let (first, prefix) = try startUp(log)
        let down = try ProcessRunner.run(ProcessConfiguration(try BuildProducts.locate("hotspot-lab"), ["down", prefix]), timeout: .seconds(60))
        #expect(down.status.succeeded, "down: \(down.stderr)")
        #expect(down.stdout.contains("lab \(prefix) (") && down.stdout.contains(") down"), "down said: \(down.stdout)")
        #expect(try first.wait(timeout: .seconds(120)) == .exited(0))
        #expect((readSmallFile(log) ?? "").contains("lab \(prefix) down in"))
        #expect(!NetworkNamespace.list().contains { $0.hasPrefix(prefix) }, "namespaces left by \(prefix)")
        #expect(access("/run/hotspot-lab-up/\(prefix)", F_OK) != 0)
        // 2. Ctrl-C (SIGINT) on up.
        let (second, prefix2) = try startUp(log)
        try second.signal(SIGINT)
        #expect(try second.wait(timeout: .seconds(120)) == .exited(0))
        #expect((readSmallFile(log) ?? "").contains("lab \(prefix2) down in"))
        #expect(!NetworkNamespace.list().contains { $0.hasPrefix(prefix2) }, "namespaces left by \(prefix2)")
    }
}
