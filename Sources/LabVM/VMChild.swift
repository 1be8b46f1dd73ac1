import Foundation
import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// A child process of the VM runner and the hwsim selftest: HotspotSystem's `ChildProcess` (its one posix_spawn
/// and its one reaper) with the raw wait statuses and descriptor plumbing the VM runner reports and needs.
struct VMChild {
    let process: ChildProcess
    let argv: [String]
    var pid: pid_t { process.pid }

    /// Starts `argv` (argv[0] looked up in PATH). `stdin`/`stdout`/`stderr` are descriptors to dup
    /// onto 0/1/2 (nil: /dev/null for stdin, inherit for stdout/stderr). The child's signals are at their
    /// defaults and its signal mask is clear (`ProcessConfiguration`).
    static func spawn(
        _ argv: [String], environment: [String: String]? = nil,
        stdin: Int32? = nil, stdout: Int32? = nil, stderr: Int32? = nil
    ) throws -> VMChild {
        precondition(!argv.isEmpty)
        var configuration = ProcessConfiguration(
            argv[0], Array(argv.dropFirst()), environment: environment,
            stdout: stdout.map { .descriptor($0) } ?? .inherit, stderr: stderr.map { .descriptor($0) } ?? .inherit
        )
        configuration.stdinDescriptor = stdin
        do {
            return VMChild(process: try ChildProcess.spawn(configuration), argv: argv)
        } catch let error as SystemError {
            throw VMError.system(operation: "spawn", object: argv[0], cause: VMError.errnoText(error.errno))
        }
    }

    /// Non-blocking: the wait status if the child has ended.
    func poll() -> Int32? {
        (try? process.poll())??.waitStatus
    }

    /// Blocks until the child ends; returns its wait status.
    func wait() -> Int32 {
        (try? process.wait())??.waitStatus ?? 0
    }

    /// Sends SIGTERM, waits up to `grace` seconds, then SIGKILL. Returns the wait status.
    @discardableResult
    func stop(grace: Double = 2) -> Int32 {
        (try? process.terminate(grace: .milliseconds(Int(grace * 1000))))?.waitStatus ?? 0
    }

    static func describe(status: Int32) -> String {
        let sig = status & 0x7f
        return sig == 0 ? "exit status \((status >> 8) & 0xff)" : "killed by signal \(sig)"
    }

    static func exitCode(status: Int32) -> Int32 {
        let sig = status & 0x7f
        return sig == 0 ? (status >> 8) & 0xff : 128 + sig
    }

    /// Runs `argv` to completion and captures stdout+stderr (for short helper tools).
    static func capture(_ argv: [String], environment: [String: String]? = nil) throws -> (status: Int32, output: String) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw VMError.errno("create pipe for", argv[0]) }
        let child: VMChild
        do {
            child = try spawn(argv, environment: environment, stdout: fds[1], stderr: fds[1])
        } catch {
            close(fds[0]); close(fds[1])
            throw error
        }
        close(fds[1])
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fds[0], &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            data.append(buffer, count: n)
        }
        close(fds[0])
        let status = child.wait()
        return (status, String(decoding: data, as: UTF8.self))
    }
}

/// Reads a descriptor on its own thread until EOF and hands each chunk to `sink`.
final class VMPipeReader: Sendable {
    private let fd: Int32
    private let sink: @Sendable (Data) -> Void
    /// Opened once the reader met EOF and closed the descriptor.
    private let done = OneShot<Void>()

    init(fd: Int32, sink: @escaping @Sendable (Data) -> Void) {
        self.fd = fd
        self.sink = sink
        do {
            try SystemThread.detach("hotspot-lab vm reader fd \(fd)") { [self] in self.loop() }
        } catch {
            // No thread to be had: the output is lost, but the run is not (qemu's pipe is closed, so it gets EPIPE).
            StandardStreams.error("hotspot-lab: vm: \(error)\n")
            close(fd)
            done.set(())
        }
    }

    private func loop() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            sink(Data(buffer[0..<n]))
        }
        close(fd)
        done.set(())
    }

    /// Waits for EOF (all writers closed), at most `timeout` seconds (on the monotonic clock).
    func finish(timeout: Double = 5) {
        _ = done.wait(timeout: .milliseconds(Int(timeout * 1000)))
    }
}
