import Foundation
import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn` (the VM runner needs its PID, raw pipes and a reset
/// signal mask; it must not depend on a run loop). Internal to the VM runner and the hwsim selftest.
struct VMChild {
    let pid: pid_t
    let argv: [String]

    /// Starts `argv` (argv[0] looked up in PATH). `stdin`/`stdout`/`stderr` are descriptors to dup
    /// onto 0/1/2 (nil: /dev/null for stdin, inherit for stdout/stderr). SIGINT, SIGTERM, SIGPIPE
    /// are reset to their defaults in the child and its signal mask is cleared.
    static func spawn(
        _ argv: [String], environment: [String: String]? = nil,
        stdin: Int32? = nil, stdout: Int32? = nil, stderr: Int32? = nil
    ) throws -> VMChild {
        precondition(!argv.isEmpty)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin { posix_spawn_file_actions_adddup2(&actions, stdin, 0) } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if let stdout { posix_spawn_file_actions_adddup2(&actions, stdout, 1) }
        if let stderr { posix_spawn_file_actions_adddup2(&actions, stderr, 2) }

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var defaults = SignalService.childDefaultSignals([SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT])
        posix_spawnattr_setsigdefault(&attr, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = env.map { strdup($0) } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], &actions, &attr, cArgs, cEnv)
        if rc != 0 {
            throw VMError.system(operation: "spawn", object: argv[0], cause: VMError.errnoText(rc))
        }
        return VMChild(pid: pid, argv: argv)
    }

    /// Non-blocking: the wait status if the child has ended.
    func poll() -> Int32? {
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        return rc == pid ? status : nil
    }

    /// Blocks until the child ends; returns its wait status.
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    /// Sends SIGTERM, waits up to `grace` seconds, then SIGKILL. Returns the wait status.
    @discardableResult
    func stop(grace: Double = 2) -> Int32 {
        if let status = poll() { return status }
        if kill(pid, 0) != 0 { return 0 }  // already reaped by an earlier poll()
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while Date() < deadline {
            if let status = poll() { return status }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        return wait()
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
final class VMPipeReader: @unchecked Sendable {
    private let fd: Int32
    private let sink: @Sendable (Data) -> Void
    private let done = DispatchSemaphore(value: 0)

    init(fd: Int32, sink: @escaping @Sendable (Data) -> Void) {
        self.fd = fd
        self.sink = sink
        let thread = Thread { [self] in self.loop() }
        thread.name = "hotspot-lab vm reader fd \(fd)"
        thread.start()
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
        done.signal()
    }

    /// Waits for EOF (all writers closed), at most `timeout` seconds.
    func finish(timeout: Double = 5) {
        _ = done.wait(timeout: .now() + timeout)
    }
}
