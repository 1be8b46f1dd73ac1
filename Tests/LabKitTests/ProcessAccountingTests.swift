import Foundation
import HotspotSystem
import Testing
import TestSupport
@testable import LabKit
@testable import LabVM

/// `bench profile`'s process accounting: the acct_v3 decoder against bytes laid out by hand, and the real kernel's
/// records of a process this test starts.
@Suite("process accounting (acct_v3)")
struct ProcessAccountingTests {
    /// One acct_v3 record as include/uapi/linux/acct.h lays it out (little endian).
    static func record(flag: UInt8 = 0, version: UInt8 = 3, exit: UInt32 = 0, pid: UInt32, ppid: UInt32, elapsedTicks: Float,
                       utime: UInt16, stime: UInt16, minflt: UInt16 = 0, comm: String) -> [UInt8] {
        var r = [UInt8](repeating: 0, count: 64)
        func put16(_ v: UInt16, _ at: Int) { r[at] = UInt8(v & 0xff); r[at + 1] = UInt8(v >> 8) }
        func put32(_ v: UInt32, _ at: Int) { for i in 0..<4 { r[at + i] = UInt8((v >> (8 * UInt32(i))) & 0xff) } }
        r[0] = flag
        r[1] = version
        put32(exit, 4)
        put32(pid, 16)
        put32(ppid, 20)
        put32(elapsedTicks.bitPattern, 28)
        put16(utime, 32)
        put16(stime, 34)
        put16(minflt, 42)
        for (i, b) in comm.utf8.prefix(15).enumerated() { r[48 + i] = b }
        return r
    }

    @Test("records decode: comp_t exponents, the float elapsed time, the 15-byte name, the fork flag")
    func decode() throws {
        // utime 0x2001 = mantissa 1, exponent 1: 8 ticks; stime 250 ticks; minflt 0x4003 = 3 << 6 = 192.
        let bytes = Self.record(pid: 42, ppid: 1, elapsedTicks: 150, utime: 0x2001, stime: 250, minflt: 0x4003, comm: "hostapd")
            + Self.record(flag: 0x01, exit: 256, pid: 43, ppid: 42, elapsedTicks: 2.5, utime: 1, stime: 0, comm: "a-very-long-command-name")
        let records = try ProcessAccounting.parse(bytes)
        #expect(records.count == 2)
        #expect(records[0] == ProcessAccounting.Record(command: "hostapd", pid: 42, parentPID: 1, exitCode: 0, userSeconds: 0.08,
                                                       systemSeconds: 2.5, elapsedSeconds: 1.5, minorFaults: 192, forkedWithoutExec: false))
        #expect(records[1].command == "a-very-long-com")
        #expect(records[1].forkedWithoutExec)
        #expect(records[1].exitCode == 256)
        let rows = ProcessAccounting.summarize(records + records)
        #expect(rows.map(\.command) == ["hostapd", "a-very-long-com (fork)"])
        #expect(rows[0].processes == 2)
        #expect(abs(rows[0].cpuSeconds - 5.16) < 1e-9)
    }

    @Test("a torn file and a record of another version are errors naming the offset")
    func errors() {
        let one = Self.record(pid: 1, ppid: 0, elapsedTicks: 0, utime: 0, stime: 0, comm: "x")
        #expect(throws: SystemError.self) { try ProcessAccounting.parse(one + [0, 1]) }
        do {
            _ = try ProcessAccounting.parse(one + Self.record(version: 2, pid: 1, ppid: 0, elapsedTicks: 0, utime: 0, stime: 0, comm: "y"))
            Issue.record("a version 2 record was accepted")
        } catch {
            #expect("\(error)".contains("byte 64"))
        }
    }
}

/// The real kernel's records. acct(2) is one switch per PID namespace: switching it on replaces the accounting the
/// machine may already have (Debian's `acct` service writes /var/log/account/pacct), and switching it off stops that
/// for everyone. So this runs only inside the lab's VM, whose kernel is the lab's own, as `bench profile` does; on
/// the host it is reported as skipped (it ran on the host until 2026-11-29 and turned a CI machine's accounting off).
@Suite("process accounting on the kernel (root, VM)", .tags(.root, .inVM),
       .enabled(if: TestHost.isRoot && InVM.isActive, "acct(2) switches the whole machine's accounting: only inside the lab VM"))
struct InVMProcessAccountingTests {
    @Test("the kernel records a process this test starts, by name and pid")
    func kernelRecords() throws {
        let folder = NSTemporaryDirectory() + "hslt-acct-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/acct"
        try ProcessAccounting.start(path: path)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", "exit 3"]
        do {
            try child.run()
            child.waitUntilExit()
        } catch {
            try? ProcessAccounting.stop()
            throw error
        }
        try ProcessAccounting.stop()
        let records = try ProcessAccounting.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        let mine = records.first { $0.pid == UInt32(child.processIdentifier) }
        #expect(mine?.command == "sh")
        #expect(mine.map { $0.exitCode >> 8 } == 3)
    }
}
