import Foundation
import HotspotClient
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import TestSupport
import Testing

/// Issue 27, no silent loss (embedded): a trace write that fails is counted, said once on stderr, and in the
/// trace when writes succeed again; failed state writes show in `status.persistence`.
@Suite("hotspotd persistence failures (embedded)")
struct PersistenceFailureTests {
    @Test("lost trace records: counted in status, said once on stderr, a traceLoss record when writes succeed again")
    func traceLoss() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        let before = d.records.count
        d.traceWriteError = "append to /run/hotspotd/trace.jsonl: No space left on device (ENOSPC)"
        for i in 0..<5 { _ = try ctl.request(.record(["i": .number(Double(i))])) }
        #expect(d.records.count == before, "nothing was written meanwhile")
        let failing = try d.status(ctl)
        let trace = try #require(failing["persistence"]?["trace"])
        #expect(trace["failingSince_ns"]?.doubleValue != nil)
        #expect(trace["error"]?.stringValue?.contains("ENOSPC") == true)
        let lost = try #require(trace["recordsLost"]?.intValue)
        #expect(lost >= 5)
        #expect(d.logLines.filter { $0.contains("trace records are dropped whole") }.count == 1, "said once: \(d.logLines)")

        d.traceWriteError = nil
        _ = try ctl.request(.record(["after": true]))
        let loss = try #require(d.records("traceLoss").first)
        #expect(loss["records"]?.intValue == lost, "status writes no record: the five labAction records")
        #expect(loss["error"]?.stringValue?.contains("ENOSPC") == true)
        #expect((loss["lastSeq"]?.intValue ?? 0) - (loss["firstSeq"]?.intValue ?? 0) + 1 == loss["records"]?.intValue)
        #expect(d.logLines.contains { $0.contains("is written again") })
        let recovered = try d.status(ctl)
        #expect(recovered["persistence"]?["trace"]?["failingSince_ns"] == .null)
        #expect(recovered["persistence"]?["trace"]?["recordsLost"]?.intValue == lost)
    }

    @Test("failed state writes show in status (failing since, count, error) until one succeeds")
    func stateWriteFailure() throws {
        let d = EmbeddedDaemon()
        let ctl = d.control()
        d.storage.failure = SystemError("write", "/run/hotspotd/state.json.tmp.1", errno: ENOSPC)
        // No helper: the network is cached as not captive, a state write.
        try d.join(ctl, cafe)
        let s = try d.status(ctl)
        let state = try #require(s["persistence"]?["state"])
        #expect(state["failedWrites"]?.intValue == 1)
        #expect(state["failingSince_ns"]?.doubleValue != nil)
        #expect(state["error"]?.stringValue?.contains("ENOSPC") == true)
        #expect(d.logLines.contains { $0.contains("the state is kept in memory") })
        #expect(d.records("error").contains { $0["message"]?.stringValue?.contains("ENOSPC") == true })

        d.storage.failure = nil
        _ = try ctl.request(.disassociate)
        try d.join(ctl, cafeSecure)
        let after = try d.status(ctl)
        #expect(after["persistence"]?["state"]?["failingSince_ns"] == .null)
        #expect(after["persistence"]?["state"]?["failedWrites"]?.intValue == 1)
        #expect(d.storage.saved?.cache[cafeSecure.identity] != nil)
    }

    @Test("a loaded state over the cache limit is trimmed to it, with a stateTrimmed record and a warning")
    func stateTrimmedEmbedded() throws {
        var large = PersistentState()
        for i in 0..<1500 { large.cache[NetworkIdentity(ssid: "Network \(i)", security: .open)] = .notCaptive }
        let d = EmbeddedDaemon(state: large)
        #expect(d.core.machine.cache.count == 1024)
        let trimmed = try #require(d.records("stateTrimmed").first)
        #expect(trimmed["cacheDropped"]?.intValue == 476)
        #expect(d.logLines.contains { $0.contains("dropped 476 cache entries") })
        #expect(d.storage.saved?.cache.count == 1024, "the trimmed state is written back")
    }
}

/// Issue 27 on a real full filesystem (a small tmpfs, root): the trace is written whole-record or not at all,
/// the loss is said and counted, failed state writes show in `status`, and a start on a full filesystem is said.
@Suite("hotspotd on a full filesystem (root)", .tags(.root), .requiresRoot)
struct FullFilesystemRootTests {
    static func run(_ argv: [String]) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: argv[0])
        p.arguments = Array(argv.dropFirst())
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }

    /// Fills the filesystem of `dir` with a file (dd stops at ENOSPC).
    static func fill(_ dir: String) {
        _ = run(["/bin/dd", "if=/dev/zero", "of=\(dir)/filler", "bs=4096"])
    }

    static func lines(_ path: String) -> [Substring] {
        (readSmallFile(path, limit: 64 << 20) ?? "").split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    }

    @Test("ENOSPC: no torn trace line, the loss said once and recorded when space returns; state failures in status; a start on a full disk said")
    func fullFilesystem() throws {
        let full = "/tmp/hsl-full-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(full, 0o700) == 0)
        #expect(Self.run(["/bin/mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", full]) == 0)
        defer {
            _ = Self.run(["/bin/umount", full])
            rmdir(full)
        }
        let traceFile = full + "/trace.jsonl"
        let d = try DaemonUnderTest(name: "fullfs", extra: ["--trace-file", traceFile, "--state-file", full + "/state.json"])
        let filler = String(repeating: "f", count: 5000)
        for i in 0..<20 { try d.control.request(.record(["fill": .string(filler), "i": .number(Double(i))])) }
        Self.fill(full)
        // Records of ~5 KB: the first partly fits in the trace's last page (a short write, undone), none whole.
        for i in 0..<40 { try d.control.request(.record(["fill": .string(filler), "full": .number(Double(i))])) }
        try d.control.request(.associate(HotspotNetwork(ssid: "FullDisk", bssid: "02:00:00:00:00:09", signalStrength: 0.8)))
        try d.control.request(.ipUp)
        let failing = try d.control.waitForStatus("the cache write to fail") { ($0["persistence"]?["state"]?["failedWrites"]?.intValue ?? 0) >= 1 }
        #expect(failing["persistence"]?["state"]?["failingSince_ns"]?.doubleValue != nil)
        #expect(failing["persistence"]?["state"]?["error"]?.stringValue?.contains("ENOSPC") == true)
        // (trace.failingSince_ns may be null here: a small record can still fit in the last page; recordsLost counts.)
        let lost = failing["persistence"]?["trace"]?["recordsLost"]?.intValue ?? 0
        #expect(lost >= 30)

        // Space returns.
        unlink(full + "/filler")
        for i in 0..<5 { try d.control.request(.record(["after": .number(Double(i))])) }
        let s = try d.control.status()
        #expect(s["persistence"]?["trace"]?["failingSince_ns"] == .null)

        let text = Self.lines(traceFile)
        let bad = text.filter { (try? JSON.parse(Array($0.utf8))) == nil }
        #expect(bad.isEmpty, "\(bad.count) unparseable trace lines, e.g. \(bad.first?.prefix(120) ?? "")")
        let records = text.compactMap { try? JSON.parse(Array($0.utf8)) }
        // A small record may still fit in the trace's last page between large ones that do not: each run of
        // failures is said once on stderr and recorded once (traceLoss) when a write succeeds again.
        let losses = records.filter { $0["kind"]?.stringValue == "traceLoss" }
        #expect(!losses.isEmpty, "a traceLoss record after space returned")
        let lostInRuns = losses.compactMap { $0["records"]?.intValue }.reduce(0, +)
        #expect(lostInRuns == s["persistence"]?["trace"]?["recordsLost"]?.intValue)
        #expect(lostInRuns >= lost)
        // The seqs in the file: every one not lost is there, in order, once.
        let seqs = records.filter { $0["kind"]?.stringValue != "traceRotated" }.compactMap { $0["seq"]?.intValue }
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count)
        #expect(seqs.count + lostInRuns == (seqs.last ?? 0), "every record is in the file or counted lost")
        let said = d.child.output.components(separatedBy: "trace records are dropped whole").count - 1
        #expect(said == losses.count && said < lost, "said once per run of failures (\(said)), not once per record (\(lost))")
        #expect(d.child.output.contains("is written again"))

        // A start on a full filesystem is said at once (before issue 27: never, until a state change).
        Self.fill(full)
        let late = try DaemonUnderTest(name: "fullstart", extra: ["--trace-file", full + "/trace2.jsonl", "--state-file", full + "/state2.json"])
        let st = try late.control.status()
        #expect(st["persistence"]?["state"]?["failingSince_ns"]?.doubleValue != nil)
        #expect(late.child.output.contains("state is kept in memory"), "stderr: \(late.child.output)")
        unlink(full + "/filler")
    }
}
