import Glibc
import HotspotSystem
import LabKit
import Netlink
import Testing
import TestSupport

/// Issue 17: the lab commands other than `up` (`run`, `demo`, `certify`, `replay`, `bench`) tear their labs down
/// on SIGINT/SIGTERM and end with 128 + the signal (docs/RELIABILITY.md). `bench lab --pause-after` is such a
/// command with a lab up that needs no VM: namespaces, veth pairs and a process in a namespace.
@Suite("lab commands under signals (root)", .tags(.root), .requiresRoot, .serialized)
struct LabSignalsRootTests {
    @Test("SIGTERM and SIGINT to a lab command with a lab up: torn down, nothing left, exit status 143 / 130",
          arguments: [SIGTERM, SIGINT])
    func signalTearsTheLabDown(signal: Int32) throws {
        let hotspotLab = try BuildProducts.locate("hotspot-lab")
        let foreign = "xsig" + String(getpid())
        try ProcessRunner.check(ProcessConfiguration("ip", ["netns", "add", foreign]))
        defer { _ = try? ProcessRunner.run(ProcessConfiguration("ip", ["netns", "del", foreign])) }
        let errorLog = "/tmp/hotspot-lab-signal-test-\(getpid())-\(signal).err"
        defer { unlink(errorLog) }

        let child = try ChildProcess.spawn(ProcessConfiguration(hotspotLab, ["bench", "lab", "--pause-after", "2"],
                                                                stdout: .pipe, stderr: .file(errorLog)))
        let line = readFirstLine(fd: child.stdoutFD!, timeout: .seconds(120))
        guard line.hasPrefix("PAUSED hsl") else {
            _ = try? child.signal(SIGKILL)
            _ = try? child.wait(timeout: .seconds(5))
            _ = try? ProcessRunner.run(ProcessConfiguration(hotspotLab, ["clean"]), timeout: .seconds(60))
            Issue.record("bench lab --pause-after printed: \(line)")
            return
        }
        let prefix = String(line.dropFirst("PAUSED ".count).prefix(7))
        #expect(NetworkNamespace.list().filter { $0.hasPrefix(prefix) }.count == 4)
        let journal = readSmallFile(LabState.root + "/" + prefix + "/journal") ?? ""
        let sleepers = journal.split(separator: "\n").filter { $0.hasPrefix("process ") }.compactMap { pid_t($0.split(separator: " ")[1]) }
        #expect(sleepers.count == 1)

        try child.signal(signal)
        let status = try child.wait(timeout: .seconds(120))
        let stderr = readSmallFile(errorLog) ?? ""
        // Nothing is left, and no `clean` ran: the command removed it all itself.
        let namespacesLeft = NetworkNamespace.list().filter { $0.hasPrefix(prefix) }
        let linksLeft = try RouteNetlink.current().links().filter { $0.name.hasPrefix(prefix) }.map(\.name)
        let sleepersLeft = sleepers.filter { processExists($0) && !LabCleanupProbe.isZombie($0) }
        let stateLeft = access(LabState.root + "/" + prefix, F_OK) == 0
        if !namespacesLeft.isEmpty || !sleepersLeft.isEmpty || stateLeft {
            _ = try? ProcessRunner.run(ProcessConfiguration(hotspotLab, ["clean"]), timeout: .seconds(60))
        }
        #expect(status == .exited(128 + signal), "status \(status); stderr: \(stderr)")
        #expect(namespacesLeft.isEmpty, "namespaces left: \(namespacesLeft)")
        #expect(linksLeft.isEmpty, "root links left: \(linksLeft)")
        #expect(sleepersLeft.isEmpty, "processes left: \(sleepersLeft)")
        #expect(!stateLeft, "state folder left: \(LabState.root)/\(prefix)")
        #expect(stderr.contains("lab \(prefix) torn down"), "stderr: \(stderr)")
        #expect(NetworkNamespace.list().contains(foreign))
    }
}
