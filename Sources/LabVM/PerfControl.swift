import CTLSShim
import Foundation
import HotspotSystem

/// `perf record`'s control FIFOs (`--control fifo:CTL,ACK` with `-D -1`: started with its events off). `bench
/// profile` switches sampling on through them and starts the scenario only on perf's acknowledgement: perf's output
/// file appears long before it samples (it first reads every running process's maps and the kernel's symbols,
/// seconds under TCG), and a scenario started on the file once ran entirely before perf's first sample.
public enum PerfControl {
    /// Switches perf's events on through its control FIFO and waits for its acknowledgement (perf is sampling).
    public static func enable(_ perf: ChildProcess, control: String, ack: String, log: String, bound: Duration = .seconds(300)) throws {
        let deadline = ContinuousClock.now + bound
        func stillRunning(_ what: String) throws {
            if let status = try perf.poll() { throw SystemError("start", "perf record", reason: "it exited (\(status)) \(what); see \(log)") }
            if ContinuousClock.now > deadline { throw SystemError("start", "perf record", reason: "\(what) after \(bound); see \(log)") }
            usleep(20_000)
        }
        // perf opens both FIFOs once it starts; a writer's non-blocking open fails with ENXIO until then.
        var writer: Int32 = -1
        while true {
            writer = open(control, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer >= 0 { break }
            guard errno == ENXIO else { throw SystemError("open", "perf's control FIFO \(control)", errno: errno) }
            try stillRunning("before opening its control FIFO")
        }
        defer { close(writer) }
        let command = Array("enable\n".utf8)
        // Without a SIGPIPE should perf have exited since it opened the FIFO (a stop request in hotspot-lab): EPIPE.
        guard hsl_write_nosigpipe(writer, command, command.count) == command.count else {
            if errno == EPIPE { throw SystemError("start", "perf record", reason: "it closed its control FIFO \(control) (exited?); see \(log)") }
            throw SystemError("write", "enable to \(control)", errno: errno)
        }
        let reader = open(ack, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard reader >= 0 else { throw SystemError("open", "perf's acknowledgement FIFO \(ack)", errno: errno) }
        defer { close(reader) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while !received.contains(UInt8(ascii: "\n")) {
            let n = read(reader, &buffer, buffer.count)
            if n > 0 { received += buffer[0..<n]; continue }
            guard n < 0 && errno == EAGAIN || n == 0 else { throw SystemError("read", "perf's acknowledgement FIFO \(ack)", errno: errno) }
            try stillRunning("without acknowledging `enable`")
        }
        // perf writes "ack\n" with its string's terminating NUL.
        let answer = String(decoding: received.filter { $0 != 0 }, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard answer == "ack" else { throw SystemError("start", "perf record", reason: "answered `enable` with \"\(answer)\", expected \"ack\"; see \(log)") }
    }
}
