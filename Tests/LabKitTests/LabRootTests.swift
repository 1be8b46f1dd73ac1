import Glibc
import HotspotSystem
import LabKit
import Netlink
import Testing
import TestSupport

@Suite("Lab naming and address policy")
struct LabPolicyTests {
    @Test func labAddressesMustComeFromDocumentationRanges() {
        #expect(LabAddressPolicy.contains(IPPrefix("192.0.2.7/24")!))
        #expect(LabAddressPolicy.contains(IPPrefix("198.19.255.1/30")!))
        #expect(LabAddressPolicy.contains(IPPrefix("2001:db8:5::1/64")!))
        #expect(!LabAddressPolicy.contains(IPPrefix("10.0.0.1/24")!))
        #expect(!LabAddressPolicy.contains(IPPrefix("198.51.0.0/16")!))  // wider than the range
        #expect(!LabAddressPolicy.contains(IPPrefix("2001:db9::1/64")!))
        do {
            try LabAddressPolicy.check(IPPrefix("10.1.2.3/24")!)
            Issue.record("accepted a non-lab address")
        } catch {
            #expect("\(error)".hasPrefix("assign lab address 10.1.2.3/24: expected an address inside 192.0.2.0/24"))
        }
    }

    @Test func runPrefixShape() {
        #expect(LabState.isRunPrefix("hsl0a9f"))
        #expect(!LabState.isRunPrefix("hsl0a9"))
        #expect(!LabState.isRunPrefix("hslwa5626a"))
        #expect(!LabState.isRunPrefix("xyz0a9f"))
    }
}

@Suite("Labs (root)", .tags(.root), .requiresRoot, .serialized)
struct LabRootTests {
    @Test func rootLabOwnsAndTearsDownInReverseOrder() throws {
        let lab = try Lab.start()
        #expect(access(lab.stateDirectory + "/owner", F_OK) == 0)
        #expect(throws: SystemError.self) { try lab.name("waytoolongsuffix") }
        let namespaces = try lab.createNamespaces(["ap", "sta"])
        try lab.connect(namespaces[0], "ap0", addresses: [IPPrefix("192.0.2.1/24")!], to: namespaces[1], "sta0",
                        addresses: [IPPrefix("192.0.2.2/24")!])
        #expect(throws: SystemError.self) {
            try lab.connect(namespaces[0], "ap1", addresses: [IPPrefix("10.0.0.1/24")!], to: namespaces[1], "sta1")
        }
        let sleeper = try lab.spawn(ProcessConfiguration("sleep", ["600"]), in: namespaces[0])
        #expect(try lab.isSealed())
        // The sleeper runs inside the lab namespace.
        var inside = false
        for _ in 0..<100 where !inside {
            inside = LabCleanupProbe.sameNetns(pid: sleeper.pid, path: namespaces[0].path)
            if !inside { usleep(10_000) }
        }
        #expect(inside)
        let errors = lab.teardown()
        #expect(errors.isEmpty, "\(errors)")
        #expect(sleeper.exitStatus == .signaled(SIGTERM))
        #expect(NetworkNamespace.list().filter { $0.hasPrefix(lab.prefix) }.isEmpty)
        #expect(access(lab.stateDirectory, F_OK) != 0)
    }

    /// Every lab start cleans dead runs; a cleaner once saw another starting lab's directory before its owner
    /// file and removed it under that lab ("write lab state /run/hotspot-lab/hslXXXX/journal: ENOENT" when two
    /// certify runs started at once). Many labs started two at a time: each keeps its directory and owner.
    @Test("root: labs started two at a time never lose their state directory to each other's dead-run cleaning")
    func rootConcurrentStartsKeepTheirState() throws {
        let outcomes = ParallelRuns.map(Array(0..<120), jobs: 2) { _ -> String? in
            do {
                let lab = try Lab.start()
                defer { lab.teardown() }
                guard access(lab.stateDirectory + "/owner", F_OK) == 0 else { return "\(lab.prefix): its owner file is gone" }
                _ = try lab.createNamespace("c")  // journals `netns ...` into the state directory
                return nil
            } catch {
                return "\(error)"
            }
        }
        let failures = outcomes.compactMap { $0 }
        #expect(failures.isEmpty, "\(failures.count) of \(outcomes.count) starts failed, e.g. \(failures.prefix(3))")
    }

    /// A run id whose log folder an earlier lab kept is skipped (CI: a new lab's hotspotd inherited an earlier
    /// lab's cache and trace from `/tmp/hotspot-lab/<prefix>` and logged off before it joined).
    @Test("root: a lab skips run ids that are taken elsewhere (a kept log folder), and says so when none is free")
    func rootLabSkipsTakenRunIDs() throws {
        var rejected: [String] = []
        let lab = try Lab.start { prefix in
            guard rejected.count < 3 else { return false }
            rejected.append(prefix)
            return true
        }
        defer { lab.teardown() }
        #expect(rejected.count == 3)
        #expect(!rejected.contains(lab.prefix), "\(lab.prefix) was one of the taken \(rejected)")
        do {
            let none = try Lab.start(cleanDeadRuns: false) { _ in true }
            none.teardown()
            Issue.record("a lab started although every run id was taken")
        } catch {
            #expect("\(error)".contains("no free run id"), "\(error)")
        }
    }

    @Test func rootLabRefusesForeignNamespacesAndLongNames() throws {
        let lab = try Lab.start()
        defer { lab.teardown() }
        let mine = try lab.createNamespace("m")
        let foreign = try NetworkNamespace.create(testPrefix("f") + "x")
        defer { try? foreign.delete() }
        do {
            try lab.connect(mine, "v0", to: foreign, "v1")
            Issue.record("a lab joined a namespace it does not own")
        } catch {
            #expect("\(error)" == "use namespace \(foreign.name): not created by lab \(lab.prefix); labs only join their own namespaces")
        }
        do {
            _ = try lab.name("waytoolongsuffix")
            Issue.record("accepted a name over 15 characters")
        } catch {
            #expect("\(error)".hasPrefix("name lab object '\(lab.prefix)waytoolongsuffix': expected at most 15 characters"))
        }
    }

    @Test func rootFailedSetupHalfwayLeavesNothing() throws {
        let lab = try Lab.start()
        let prefix = lab.prefix
        let a = try lab.createNamespace("a")
        // The second namespace name collides inside one createNamespaces call: the call fails and removes
        // what it made; the lab still owns "a".
        #expect(throws: SystemError.self) { try lab.createNamespaces(["b", "b"]) }
        #expect(!NetworkNamespace.list().contains(prefix + "b"))
        #expect(NetworkNamespace.list().contains(a.name))
        #expect(lab.teardown().isEmpty)
        #expect(NetworkNamespace.list().filter { $0.hasPrefix(prefix) }.isEmpty)
    }

    @Test func rootSigkillHalfwayThenCleanLeavesNothingOfOurs() throws {
        let hotspotLab = try BuildProducts.locate("hotspot-lab")
        // Names that clean must not touch: no hsl prefix at all, an hsl name that is no run prefix, and a
        // live run (this process owns it).
        let foreign = "xkeep" + String(getpid())
        let hslLookalike = "hslkeep" + String(getpid())
        try ProcessRunner.check(ProcessConfiguration("ip", ["netns", "add", foreign]))
        defer { _ = try? ProcessRunner.run(ProcessConfiguration("ip", ["netns", "del", foreign])) }
        let lookalike = try NetworkNamespace.create(hslLookalike)
        defer { try? lookalike.delete() }
        let live = try Lab.start()
        defer { live.teardown() }
        try live.createNamespace("live")

        let child = try ChildProcess.spawn(ProcessConfiguration(hotspotLab, ["bench", "lab", "--pause-after", "3"], stdout: .pipe, stderr: .pipe))
        let line = readFirstLine(fd: child.stdoutFD!, timeout: .seconds(30))
        #expect(line.hasPrefix("PAUSED hsl"), "bench lab --pause-after printed: \(line)")
        let prefix = String(line.dropFirst("PAUSED ".count).prefix(7))
        #expect(LabState.isRunPrefix(prefix))

        // Halfway: 3 pairs and a sleeper exist.
        #expect(NetworkNamespace.list().filter { $0.hasPrefix(prefix) }.count == 6)
        let journal = readSmallFile(LabState.root + "/" + prefix + "/journal") ?? ""
        let sleepers = journal.split(separator: "\n").filter { $0.hasPrefix("process ") }.compactMap { pid_t($0.split(separator: " ")[1]) }
        #expect(sleepers.count == 1)
        #expect(sleepers.allSatisfy { processExists($0) })

        // Kill the owner without any chance to clean up, then clean. (A lab started concurrently by another
        // test may sweep the dead run first; either way the same cleanup runs and the checks below hold.)
        try child.signal(SIGKILL)
        #expect(try child.wait(timeout: .seconds(5)) == .signaled(SIGKILL))
        let clean = try ProcessRunner.run(ProcessConfiguration(hotspotLab, ["clean"]), timeout: .seconds(60))
        #expect(clean.status == .exited(0), "clean: \(clean.stdout) \(clean.stderr)")

        #expect(NetworkNamespace.list().filter { $0.hasPrefix(prefix) }.isEmpty)
        #expect(try RouteNetlink.current().links().filter { $0.name.hasPrefix(prefix) }.isEmpty)
        for pid in sleepers { #expect(!processExists(pid) || LabCleanupProbe.isZombie(pid), "sleeper \(pid) survived") }
        #expect(access(LabState.root + "/" + prefix, F_OK) != 0)
        // What is not ours survives.
        let remaining = NetworkNamespace.list()
        #expect(remaining.contains(foreign))
        #expect(remaining.contains(hslLookalike))
        #expect(remaining.contains(live.prefix + "live"))
        #expect(access(live.stateDirectory, F_OK) == 0)
    }
}

enum LabCleanupProbe {
    static func sameNetns(pid: pid_t, path: String) -> Bool {
        var a = stat()
        var b = stat()
        guard stat("/proc/\(pid)/ns/net", &a) == 0, stat(path, &b) == 0 else { return false }
        return a.st_ino == b.st_ino && a.st_dev == b.st_dev
    }

    static func isZombie(_ pid: pid_t) -> Bool {
        guard let text = readSmallFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return false }
        return text[text.index(after: close)...].split(separator: " ").first == "Z"
    }
}
