import Foundation
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import Testing

@Suite("hotspotd network actions")
struct HookTests {
    @Test("the hook command runs for every network action with interface and network; status reflects the state")
    func hookRuns() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-hook-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = dir.appendingPathComponent("actions.log").path
        let hook = dir.appendingPathComponent("hook.sh").path
        try "#!/bin/sh\necho \"$*\" >> \(log)\n".write(toFile: hook, atomically: true, encoding: .utf8)
        chmod(hook, 0o755)
        let d = try DaemonUnderTest(name: "hook", extra: ["--hook", hook, "--interface", "hslwlan0"])
        try d.helper(.python, id: "hooked", ["authenticate": "failure"])
        try d.join(cafe)
        try d.control.waitForStatus("Failure passed") { _ in d.transitions().contains("Failure->Inactive") }
        try d.control.waitForStatus("hook runs finished") { _ in d.records("hook").count >= 2 }
        let lines = (try String(contentsOfFile: log, encoding: .utf8)).split(separator: "\n").map(String.init)
        #expect(lines.contains("disable-auto-join hslwlan0 Cafe open"))
        #expect(lines.contains("disassociate hslwlan0"))
        #expect(d.records("hook").allSatisfy { $0["status"]?.intValue == 0 })
        let s = try d.control.status()
        #expect(s["association"] == .null)
        #expect(s["interface"]?.stringValue == "hslwlan0")
        #expect(autoJoinDisabled(s, "Cafe"))
    }

    @Test("IP is suppressed until Authenticated and released then (hook sees release-ip)")
    func releaseAfterAuthentication() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-hook2-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = dir.appendingPathComponent("actions.log").path
        let hook = dir.appendingPathComponent("hook.sh").path
        try "#!/bin/sh\necho \"$*\" >> \(log)\n".write(toFile: hook, atomically: true, encoding: .utf8)
        chmod(hook, 0o755)
        let d = try DaemonUnderTest(name: "hook2", extra: ["--hook", hook])
        try d.helper(.swift, id: "ui", ["authenticate": "uiRequired"])
        try d.join(cafe)
        let waiting = try d.waitForState(.presentingUI)
        #expect(waiting["ipReleased"]?.boolValue == false)
        try d.control.request(.foreground(helper: "ui"))
        try d.waitForState(.authenticated)
        try d.control.waitForStatus("release-ip hook") { _ in
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("release-ip wlan0 Cafe open")
        }
        // Losing IP suppresses it again.
        try d.control.request(.ipDown)
        try d.control.waitForStatus("suppress-ip hook") { _ in
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("suppress-ip wlan0")
        }
        #expect(try d.control.status()["ipReleased"]?.boolValue == false)
    }
}
