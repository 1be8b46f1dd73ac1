import Foundation
import Glibc
import HotspotSystem
import TestSupport
import Testing
@testable import LabKit

/// The lab commands stop when the reader of their output goes away (SIGPIPE, or EPIPE on a write to it), not when
/// some other write of theirs finds its peer gone: a portal's client or a helper that closed its socket must not stop
/// a lab run. `hotspot-lab selftest stray-pipe` takes over shutdown as the lab commands do and writes once to a
/// socket whose peer is closed (`SignalService`'s SIGPIPE handler tells them apart by the signal's sender and by
/// polling standard output and error). Until 2026-11-29 every SIGPIPE was a stop request.
@Suite("SIGPIPE: the output's reader gone, a stray write, kill -PIPE")
struct StrayPipeTests {
    static func hotspotLab() throws -> String { try BuildProducts.locate("hotspot-lab") }

    @Test("a write to a closed socket while the output is read: EPIPE, no stop, the signal counted as stray")
    func strayWriteDoesNotStop() throws {
        let result = try ProcessRunner.run(ProcessConfiguration(try Self.hotspotLab(), ["selftest", "stray-pipe"]), timeout: .seconds(120))
        #expect(result.status == .exited(0), "\(result.status): \(result.stderr)")
        #expect(result.stdout.contains("Broken pipe (EPIPE); stop request: none; SIGPIPEs dropped as not the output's: 1"), "\(result.stdout)")
        #expect(!result.stderr.contains("tearing down"), "\(result.stderr)")
    }

    /// The control: the same write once the reader of standard output is gone is a stop, as before.
    @Test("the same write once standard output's reader is gone: a stop, SIGPIPE (output closed), exit 141")
    func sameWriteWithOutputGoneStops() throws {
        let command = "'\(try Self.hotspotLab())' selftest stray-pipe --after-output-closes | true; echo \"status ${PIPESTATUS[0]}\""
        let result = try ProcessRunner.run(ProcessConfiguration("bash", ["-c", command]), timeout: .seconds(300))
        #expect(result.stdout.contains("status 141"), "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("SIGPIPE (output closed) received; tearing down"), "\(result.stderr)")
    }

    /// `kill -PIPE` from another process is a stop signal like SIGTERM (its sender is not the process itself).
    @Test("kill -PIPE from another process: a stop, SIGPIPE received, exit 141")
    func killPipeStops() throws {
        let folder = NSTemporaryDirectory() + "hslt-stray-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let out = folder + "/out", err = folder + "/err"
        let child = try ChildProcess.spawn(ProcessConfiguration(try Self.hotspotLab(), ["selftest", "stray-pipe", "--then-wait"],
                                                                stdout: .file(out), stderr: .file(err)))
        defer { if (try? child.poll()) == nil { _ = try? child.terminate(grace: .seconds(10)) } }
        // Its line says the stray write is behind it and the stop is taken over.
        let line = try SignalServiceRootTests.waitFor("stop request: none", in: out, while: child)
        #expect(line.contains("SIGPIPEs dropped as not the output's: 1"), "\(line)")
        try child.signal(SIGPIPE)
        let status = try child.wait(timeout: .seconds(120))
        #expect(status == .exited(141), "\(String(describing: status)): \(readSmallFile(err) ?? "")")
        #expect((readSmallFile(err) ?? "").contains("SIGPIPE received; tearing down"), "\(readSmallFile(err) ?? "")")
    }
}
