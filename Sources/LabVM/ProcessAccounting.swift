import Foundation
import HotspotSystem

/// BSD process accounting (acct(2), `CONFIG_BSD_PROCESS_ACCT_V3`): the kernel appends one 64-byte `struct acct_v3`
/// per exiting process to a file. `hotspot-lab bench profile` switches it on in the VM around one scenario, so the
/// profile counts every process the lab starts (hostapd, udhcpc's script's `ip`, curl, our Swift binaries) with
/// its CPU time, which a sampling profiler attributes only by name.
public enum ProcessAccounting {
    /// One exited process (`struct acct_v3`, include/uapi/linux/acct.h).
    public struct Record: Equatable, Sendable {
        /// The command name (`comm`, at most 15 bytes: the executable's base name after exec).
        public var command: String
        public var pid: UInt32
        public var parentPID: UInt32
        public var exitCode: UInt32
        /// User and system CPU time, seconds (comp_t, 1/100 s resolution).
        public var userSeconds: Double
        public var systemSeconds: Double
        /// Wall time from fork to exit, seconds.
        public var elapsedSeconds: Double
        /// Minor page faults (a proxy for relocation and first-touch work at start).
        public var minorFaults: Double
        /// `AFORK`: forked but never exec'd (a shell's subshell, a child before exec).
        public var forkedWithoutExec: Bool

        public var cpuSeconds: Double { userSeconds + systemSeconds }
    }

    /// Switches accounting on (`acct(path)`): the file is created empty (0600) and the kernel appends to it.
    /// acct(2) is one switch per PID namespace: this replaces any accounting the machine had on, and `stop()` ends it for
    /// everyone. Call it only where the lab owns the kernel (inside the lab VM, as `bench profile` does).
    public static func start(path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError("create", path, errno: errno) }
        close(fd)
        guard acct(path) == 0 else { throw SystemError("switch on process accounting (acct) to", path, errno: errno) }
    }

    /// Switches accounting off (`acct(NULL)`); the kernel has written every record by the time it returns.
    public static func stop() throws {
        guard acct(nil) == 0 else { throw SystemError("switch off process accounting (acct)", "the kernel", errno: errno) }
    }

    /// `AHZ`: the unit of the kernel's accounting times.
    static let ticksPerSecond = 100.0
    static let recordSize = 64

    /// Decodes a file of `acct_v3` records; a record of another version or a torn tail is an error naming its offset.
    public static func parse(_ bytes: [UInt8]) throws -> [Record] {
        guard bytes.count % recordSize == 0 else {
            throw SystemError("parse", "process accounting file", reason: "\(bytes.count) bytes is not a whole number of \(recordSize)-byte acct_v3 records")
        }
        var records: [Record] = []
        var offset = 0
        while offset < bytes.count {
            let r = Array(bytes[offset..<offset + recordSize])
            guard r[1] == 3 else {
                throw SystemError("parse", "process accounting record at byte \(offset)", reason: "version \(r[1]), expected 3 (acct_v3)")
            }
            func u16(_ at: Int) -> UInt16 { UInt16(r[at]) | UInt16(r[at + 1]) << 8 }
            func u32(_ at: Int) -> UInt32 { UInt32(r[at]) | UInt32(r[at + 1]) << 8 | UInt32(r[at + 2]) << 16 | UInt32(r[at + 3]) << 24 }
            let name = r[48..<64].prefix { $0 != 0 }
            records.append(Record(
                command: String(decoding: name, as: UTF8.self),
                pid: u32(16), parentPID: u32(20), exitCode: u32(4),
                userSeconds: compT(u16(32)) / ticksPerSecond, systemSeconds: compT(u16(34)) / ticksPerSecond,
                elapsedSeconds: Double(Float(bitPattern: u32(28))) / ticksPerSecond,
                minorFaults: compT(u16(42)), forkedWithoutExec: r[0] & 0x01 != 0))
            offset += recordSize
        }
        return records
    }

    /// `comp_t`: a 13-bit mantissa and a 3-bit base-8 exponent.
    static func compT(_ value: UInt16) -> Double {
        Double(UInt64(value & 0x1fff) << (3 * UInt64(value >> 13)))
    }

    /// One row per command name: how many processes, their CPU time and wall time in total.
    public struct Summary: Equatable, Sendable {
        public var command: String
        public var processes: Int
        public var cpuSeconds: Double
        public var elapsedSeconds: Double
        public var minorFaults: Double
    }

    /// Rows by CPU time, largest first (ties by name, so the table is stable).
    public static func summarize(_ records: [Record]) -> [Summary] {
        var rows: [String: Summary] = [:]
        for r in records {
            let name = r.forkedWithoutExec ? r.command + " (fork)" : r.command
            var row = rows[name] ?? Summary(command: name, processes: 0, cpuSeconds: 0, elapsedSeconds: 0, minorFaults: 0)
            row.processes += 1
            row.cpuSeconds += r.cpuSeconds
            row.elapsedSeconds += r.elapsedSeconds
            row.minorFaults += r.minorFaults
            rows[name] = row
        }
        return rows.values.sorted { ($0.cpuSeconds, $1.command) > ($1.cpuSeconds, $0.command) }
    }
}
