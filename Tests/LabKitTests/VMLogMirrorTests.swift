import Foundation
import HotspotSystem
import Testing
@testable import LabVM

/// A lab's logs copied to the VM's results share when it goes down (`VMLogMirror.copyTree`), here between two host
/// folders: every regular file at the same path, contents whole (a file over sendfile's 1 MiB per call among them),
/// an older copy overwritten, sockets and symbolic links left behind, and a target that cannot be written named.
@Suite("VM log mirror")
struct VMLogMirrorTests {
    static func folder(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "hsl-mirror-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A command relayed to the VM loses its `--logs FOLDER` (both spellings; the labs inside log under the results
    /// share, a folder under FOLDER on the host), and nothing else: a value that only starts like it, or anything
    /// after `--`, stays.
    @Test func relayedCommandLineDropsTheLogsOption() {
        #expect(VMLogMirror.withoutLogsOption(["certify", "--logs", "/work/logs", "--helper", "h --logs x", "--json"])
                == ["certify", "--helper", "h --logs x", "--json"])
        #expect(VMLogMirror.withoutLogsOption(["run", "--logs=/work/logs", "a.yaml"]) == ["run", "a.yaml"])
        #expect(VMLogMirror.withoutLogsOption(["run", "--logsy", "a.yaml", "--", "--logs", "b"]) == ["run", "--logsy", "a.yaml", "--", "--logs", "b"])
        #expect(VMLogMirror.withoutLogsOption(["demo"]) == ["demo"])
    }

    @Test func copiesRegularFilesOnly() throws {
        let source = try Self.folder("source"), target = try Self.folder("target")
        defer { for f in [source, target] { try? FileManager.default.removeItem(atPath: f) } }
        let fm = FileManager.default
        try fm.createDirectory(atPath: source + "/stations/phone/hotspotd", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: source + "/empty-folder", withIntermediateDirectories: true)
        let big = Data((0..<(3 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) })
        try big.write(to: URL(fileURLWithPath: source + "/stations/phone/hotspotd/trace.jsonl"))
        try "hostapd log\n".write(toFile: source + "/hostapd.log", atomically: false, encoding: .utf8)
        try Data().write(to: URL(fileURLWithPath: source + "/dnsmasq.leases"))
        chmod(source + "/hostapd.log", 0o600)
        try fm.createSymbolicLink(atPath: source + "/link", withDestinationPath: "/etc/hostname")
        let socket = try UnixSocket.listen(path: source + "/stations/phone/hotspotd/control.sock")
        defer { socket.close() }
        // An older, longer copy is replaced, not appended to or left with its tail.
        try fm.createDirectory(atPath: target + "/lab", withIntermediateDirectories: true)
        try "an older and much longer hostapd log\n".write(toFile: target + "/lab/hostapd.log", atomically: false, encoding: .utf8)

        let failures = VMLogMirror.copyTree(from: source, to: target + "/lab")
        #expect(failures.isEmpty, "\(failures)")
        #expect(fm.contents(atPath: target + "/lab/stations/phone/hotspotd/trace.jsonl") == big)
        #expect(try String(contentsOfFile: target + "/lab/hostapd.log", encoding: .utf8) == "hostapd log\n")
        #expect(fm.contents(atPath: target + "/lab/dnsmasq.leases") == Data())
        #expect(fm.fileExists(atPath: target + "/lab/empty-folder"))
        #expect(!fm.fileExists(atPath: target + "/lab/stations/phone/hotspotd/control.sock"), "a socket was copied")
        #expect((try? fm.destinationOfSymbolicLink(atPath: target + "/lab/link")) == nil && !fm.fileExists(atPath: target + "/lab/link"))
        var info = stat()
        #expect(stat(target + "/lab/hostapd.log", &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test func aTargetThatCannotBeWrittenIsNamed() throws {
        let source = try Self.folder("source"), target = try Self.folder("target")
        defer { for f in [source, target] { try? FileManager.default.removeItem(atPath: f) } }
        try FileManager.default.createDirectory(atPath: source + "/cafe", withIntermediateDirectories: true)
        try "x\n".write(toFile: source + "/cafe/portal.log", atomically: false, encoding: .utf8)
        try "x\n".write(toFile: source + "/internet.log", atomically: false, encoding: .utf8)
        // `cafe` is a file where the folder should go.
        try "not a folder\n".write(toFile: target + "/cafe", atomically: false, encoding: .utf8)
        let failures = VMLogMirror.copyTree(from: source, to: target)
        #expect(failures.contains { $0.contains("\(target)/cafe") && $0.contains("ENOTDIR") || $0.contains("EEXIST") }, "\(failures)")
        #expect(FileManager.default.contents(atPath: target + "/internet.log") == Data("x\n".utf8), "the other files are still copied")
    }
}
