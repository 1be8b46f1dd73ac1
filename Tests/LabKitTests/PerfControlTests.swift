import Foundation
import HotspotSystem
import Testing
@testable import LabVM

/// `bench profile`'s start of `perf record`: sampling is switched on through perf's control FIFO and the scenario
/// starts only on perf's acknowledgement. A stand-in for perf (a shell script speaking the FIFO protocol) plays it.
@Suite("perf record's control FIFO (bench profile)")
struct PerfControlTests {
    /// Two fresh FIFOs in a fresh folder.
    static func fifos() throws -> (folder: String, control: String, ack: String) {
        let folder = NSTemporaryDirectory() + "hsl-perfctl-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let control = folder + "/ctl", ack = folder + "/ack"
        for fifo in [control, ack] { #expect(mkfifo(fifo, 0o600) == 0) }
        return (folder, control, ack)
    }

    /// A perf stand-in: opens both FIFOs read-write as perf does, waits `delay` seconds (perf's start), reads one
    /// command and answers `answer` (perf writes "ack\n" and the string's NUL), then lives until killed.
    static func fakePerf(control: String, ack: String, delay: String = "0", answer: String = "ack\\n\\0") throws -> ChildProcess {
        try ChildProcess.spawn(ProcessConfiguration("/bin/bash", ["-c", """
            exec 3<>"$1" 4<>"$2"; sleep \(delay); read -r line <&3; [ "$line" = enable ] || exit 9
            printf '\(answer)' >&4; exec sleep 30
            """, "fake-perf", control, ack]))
    }

    @Test func enableWaitsForTheAcknowledgement() throws {
        let (folder, control, ack) = try Self.fifos()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let perf = try Self.fakePerf(control: control, ack: ack, delay: "0.3")
        defer { _ = try? perf.terminate(grace: .seconds(1)) }
        let start = ContinuousClock.now
        try PerfControl.enable(perf, control: control, ack: ack, log: folder + "/perf.log")
        // Not before the stand-in's start was over and it had read `enable`.
        #expect(ContinuousClock.now - start >= .milliseconds(300))
        #expect(try perf.poll() == nil, "the stand-in read something other than `enable`")
    }

    @Test func aPerfThatEndsFirstIsNamed() throws {
        let (folder, control, ack) = try Self.fifos()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let perf = try ChildProcess.spawn(ProcessConfiguration("/bin/sh", ["-c", "exit 3"]))
        #expect {
            try PerfControl.enable(perf, control: control, ack: ack, log: folder + "/perf.log")
        } throws: { error in
            "\(error)".contains("start perf record: it exited (exit status 3) before opening its control FIFO; see \(folder)/perf.log")
        }
    }

    @Test func anotherAnswerIsRefused() throws {
        let (folder, control, ack) = try Self.fifos()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let perf = try Self.fakePerf(control: control, ack: ack, answer: "nak\\n")
        defer { _ = try? perf.terminate(grace: .seconds(1)) }
        #expect {
            try PerfControl.enable(perf, control: control, ack: ack, log: folder + "/perf.log")
        } throws: { error in
            "\(error)".contains("answered `enable` with \"nak\", expected \"ack\"")
        }
    }
}
