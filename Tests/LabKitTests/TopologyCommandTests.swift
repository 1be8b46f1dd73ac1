import Foundation
import HotspotSystem
import Netlink
import Testing
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
}
