#if canImport(Glibc)
import Glibc
#endif
import CSystemShims

/// Where a child's stdout or stderr goes.
public enum ProcessOutput: Sendable, Equatable {
    /// The parent's own descriptor.
    case inherit
    /// `/dev/null`.
    case discard
    /// A log file, created if missing (mode 0644).
    case file(String, append: Bool = true)
    /// A pipe the parent reads (`ChildProcess.stdoutFD` / `stderrFD`).
    case pipe
    /// A descriptor the caller owns (and closes), duplicated onto the child's stdout or stderr.
    case descriptor(Int32)
}

/// What to run and how. `executable` is a path or a name looked up in `PATH`.
public struct ProcessConfiguration: Sendable {
    public var executable: String
    public var arguments: [String]
    /// nil: inherit the parent's environment.
    public var environment: [String: String]?
    public var workingDirectory: String?
    public var stdout: ProcessOutput
    public var stderr: ProcessOutput
    /// stdin is `/dev/null` unless true (or `stdinDescriptor` is set).
    public var inheritStdin: Bool
    /// A descriptor the caller owns (and closes), duplicated onto the child's stdin.
    public var stdinDescriptor: Int32?
    /// Put the child in its own process group (so a signal to `-pid` reaches its children).
    public var newProcessGroup: Bool

    public init(
        _ executable: String, _ arguments: [String] = [],
        environment: [String: String]? = nil, workingDirectory: String? = nil,
        stdout: ProcessOutput = .inherit, stderr: ProcessOutput = .inherit,
        inheritStdin: Bool = false, newProcessGroup: Bool = false
    ) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.stdout = stdout
        self.stderr = stderr
        self.inheritStdin = inheritStdin
        self.newProcessGroup = newProcessGroup
    }

    /// The same command run inside the named network namespace (`/run/netns/NAME`) through
    /// `hotspot-nsexec`, which `setns`es and then `exec`s (no Swift code runs in between). With `resolvConf`,
    /// the command sees that file as /etc/resolv.conf (a private mount namespace; `hotspot-nsexec --resolv-conf`).
    public func inNetworkNamespace(_ name: String, resolvConf: String? = nil) throws -> ProcessConfiguration {
        var copy = self
        copy.executable = try NSExec.path()
        let nsPath = name.hasPrefix("/") ? name : "/run/netns/" + name
        copy.arguments = (resolvConf.map { ["--resolv-conf", $0] } ?? []) + [nsPath, "--", executable] + arguments
        return copy
    }

    /// The same command started through `hotspot-nsexec --die-with PID`, inside the named network namespace
    /// (nil: this process's): the kernel kills it (SIGKILL, `PR_SET_PDEATHSIG`) when the thread that started it
    /// ends, so start it with `ChildProcess.spawnTied`, whose thread lives as long as this process. A lab's
    /// daemons then end with the lab's process even when that process is killed with SIGKILL.
    /// `resolvConf`: as in `inNetworkNamespace(_:resolvConf:)`.
    public func tiedToThisProcess(inNetworkNamespace name: String?, resolvConf: String? = nil) throws -> ProcessConfiguration {
        var copy = self
        copy.executable = try NSExec.path()
        let nsPath = name.map { $0.hasPrefix("/") ? $0 : "/run/netns/" + $0 } ?? "-"
        copy.arguments = ["--die-with", String(getpid())] + (resolvConf.map { ["--resolv-conf", $0] } ?? [])
            + [nsPath, "--", executable] + arguments
        return copy
    }

    /// `executable arg1 arg2` for messages.
    public var commandLine: String { ([executable] + arguments).joined(separator: " ") }
}

/// CPU time (user plus system), in seconds, of this process (`RUSAGE_SELF`) or of its reaped children
/// (`RUSAGE_CHILDREN`): getrusage(2).
public enum ResourceUsage {
    public static func cpuSeconds(_ who: __rusage_who) -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(who.rawValue), &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// How a child ended.
public enum ExitStatus: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    public var succeeded: Bool { self == .exited(0) }

    public var description: String {
        switch self {
        case .exited(let code): return "exit status \(code)"
        case .signaled(let sig): return "killed by signal \(sig)"
        }
    }

    /// The status as `waitpid` encodes it (for callers that report raw wait statuses).
    public var waitStatus: Int32 {
        switch self {
        case .exited(let code): return (code & 0xff) << 8
        case .signaled(let sig): return sig & 0x7f
        }
    }

    public init(waitStatus status: Int32) {
        let low = status & 0x7f
        if low == 0 {
            self = .exited((status >> 8) & 0xff)
        } else {
            self = .signaled(low)
        }
    }
}

/// A started child process. Reaps itself on `wait`; `signal` never hits a reaped (possibly reused) pid.
public final class ChildProcess: @unchecked Sendable {  // @unchecked: `reaped` is touched only with `lock` held; the rest is set once
    public let pid: pid_t
    public let configuration: ProcessConfiguration
    /// Read end of the stdout pipe when `stdout == .pipe` (owned by this object; closed on deinit).
    public let stdoutFD: Int32?
    /// Read end of the stderr pipe when `stderr == .pipe`.
    public let stderrFD: Int32?

    private let lock = Mutex()
    private var reaped: ExitStatus?

    init(pid: pid_t, configuration: ProcessConfiguration, stdoutFD: Int32?, stderrFD: Int32?) {
        self.pid = pid
        self.configuration = configuration
        self.stdoutFD = stdoutFD
        self.stderrFD = stderrFD
    }

    deinit {
        if let stdoutFD { close(stdoutFD) }
        if let stderrFD { close(stderrFD) }
    }

    /// Starts a child with posix_spawn. Errors name the command and the errno text.
    public static func spawn(_ configuration: ProcessConfiguration) throws -> ChildProcess {
        try Spawner(configuration).spawn()
    }

    /// Starts a child from the one thread that lives as long as this process (`LifelineThread`): a child
    /// started through `ProcessConfiguration.tiedToThisProcess` is killed when its starting thread ends, and
    /// the threads of Swift's pools come and go.
    public static func spawnTied(_ configuration: ProcessConfiguration) throws -> ChildProcess {
        try LifelineThread.shared.run { try Spawner(configuration).spawn() }
    }

    /// The exit status if the child has ended and was reaped.
    public var exitStatus: ExitStatus? {
        lock.withLock { reaped }
    }

    /// Reaps the child if it has ended, without blocking.
    public func poll() throws -> ExitStatus? {
        try lock.withLock {
            if let reaped { return reaped }
            var status: Int32 = 0
            while true {
                let result = waitpid(pid, &status, WNOHANG)
                if result == pid {
                    let exit = ExitStatus(waitStatus: status)
                    reaped = exit
                    return exit
                }
                if result == 0 { return nil }
                let code = Errno.current
                if code == EINTR { continue }
                throw SystemError("wait for", "\(configuration.executable) (pid \(pid))", errno: code)
            }
        }
    }

    /// Waits until the child ends or `timeout` passes (nil: forever). Returns nil on timeout.
    public func wait(timeout: Duration? = nil) throws -> ExitStatus? {
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now + $0 }
        var pause = Duration.microseconds(200)
        while true {
            if let status = try poll() { return status }
            if let deadline, clock.now >= deadline { return nil }
            sleepFor(pause)
            pause = min(pause * 2, .milliseconds(20))
        }
    }

    /// Waits without blocking a concurrency thread.
    public func waitAsync() async throws -> ExitStatus {
        var pause = Duration.microseconds(500)
        while true {
            if let status = try poll() { return status }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    /// Sends `signal` unless the child was already reaped.
    public func signal(_ signal: Int32) throws {
        try lock.withLock {
            if reaped != nil { return }
            let target = configuration.newProcessGroup ? -pid : pid
            if kill(target, signal) != 0 {
                let code = Errno.current
                if code == ESRCH { return }
                throw SystemError("send signal \(signal) to", "\(configuration.executable) (pid \(pid))", errno: code)
            }
        }
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL and wait. Returns how the child ended. A child in a process group of
    /// its own (`newProcessGroup`) is signalled as a group, and this returns only once no process of the group is
    /// alive (`endGroup`): what it started (a wrapper's worker) has ended too, not merely been signalled.
    @discardableResult
    public func terminate(grace: Duration = .seconds(2)) throws -> ExitStatus {
        let status = try terminateLeader(grace: grace)
        if configuration.newProcessGroup { try endGroup() }
        return status
    }

    private func terminateLeader(grace: Duration) throws -> ExitStatus {
        if let status = try poll() { return status }
        try signal(SIGTERM)
        if let status = try wait(timeout: grace) { return status }
        try signal(SIGKILL)
        guard let status = try wait(timeout: .seconds(5)) else {
            throw SystemError("kill", "\(configuration.executable) (pid \(pid))", reason: "still running 5 s after SIGKILL")
        }
        return status
    }

    /// After the group's leader (this child) ended: SIGKILL to the rest of its process group, then a wait until none
    /// of them is alive. A signalled process is not gone at once: it exits when it is next scheduled, which on a
    /// loaded machine is later (a helper wrapper's busy worker was once seen running after the lab's teardown had
    /// returned). Nothing left in the group (ESRCH): returns at once.
    func endGroup() throws {
        if kill(-pid, SIGKILL) != 0 {
            let code = Errno.current
            if code == ESRCH { return }
            throw SystemError("send SIGKILL to", "the process group of \(configuration.executable) (\(pid))", errno: code)
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        var pause = Duration.microseconds(200)
        while true {
            let alive = ProcessTree.liveMembers(ofGroup: pid)
            if alive.isEmpty { return }
            if clock.now >= deadline {
                throw SystemError("kill", "the process group of \(configuration.executable) (\(pid))",
                                  reason: "pids \(alive.map(String.init).joined(separator: ", ")) still alive 10 s after SIGKILL")
            }
            sleepFor(pause)
            pause = min(pause * 2, .milliseconds(20))
        }
    }
}

/// The result of `ProcessRunner.run`.
public struct ProcessResult: Sendable {
    public var status: ExitStatus
    public var stdout: String
    public var stderr: String
}

/// Runs a command to completion and captures its output.
public enum ProcessRunner {
    /// Runs `configuration` with stdout and stderr captured through pipes (other output settings are
    /// overridden). Kills the child with SIGKILL and throws ETIMEDOUT if it is still running after `timeout`.
    public static func run(_ configuration: ProcessConfiguration, timeout: Duration = .seconds(60)) throws -> ProcessResult {
        var config = configuration
        config.stdout = .pipe
        config.stderr = .pipe
        let child = try ChildProcess.spawn(config)
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var out: [UInt8] = []
        var err: [UInt8] = []
        var fds: [pollfd] = [
            pollfd(fd: child.stdoutFD!, events: Int16(POLLIN), revents: 0),
            pollfd(fd: child.stderrFD!, events: Int16(POLLIN), revents: 0),
        ]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while fds.contains(where: { $0.fd >= 0 }) {
            let remaining = deadline - clock.now
            if remaining <= .zero {
                _ = try? child.signal(SIGKILL)
                _ = try? child.wait(timeout: .seconds(5))
                throw SystemError("run", config.commandLine, errno: ETIMEDOUT, detail: "still running after \(timeout)")
            }
            let ms = Int32(min(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1, 1000))
            let ready = Glibc.poll(&fds, nfds_t(fds.count), ms)
            if ready < 0 {
                if Errno.current == EINTR { continue }
                throw SystemError.current("poll output of", config.commandLine)
            }
            for index in fds.indices where fds[index].fd >= 0 && fds[index].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(fds[index].fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    if index == 0 { out += buffer[0..<count] } else { err += buffer[0..<count] }
                } else if count == 0 || (Errno.current != EINTR && Errno.current != EAGAIN) {
                    fds[index].fd = -1
                }
            }
        }
        let left = deadline - clock.now
        guard let status = try child.wait(timeout: max(left, .milliseconds(1))) else {
            _ = try? child.signal(SIGKILL)
            _ = try? child.wait(timeout: .seconds(5))
            throw SystemError("run", config.commandLine, errno: ETIMEDOUT, detail: "still running after \(timeout)")
        }
        return ProcessResult(
            status: status,
            stdout: String(decoding: out, as: UTF8.self),
            stderr: String(decoding: err, as: UTF8.self)
        )
    }

    /// Runs and throws unless the command exits with status 0; the error carries stderr's last line.
    @discardableResult
    public static func check(_ configuration: ProcessConfiguration, timeout: Duration = .seconds(60)) throws -> ProcessResult {
        let result = try run(configuration, timeout: timeout)
        guard result.status.succeeded else {
            let lastLine = result.stderr.split(separator: "\n").last.map(String.init) ?? ""
            throw SystemError("run", configuration.commandLine, reason: "\(result.status)\(lastLine.isEmpty ? "" : ": " + lastLine)")
        }
        return result
    }
}

/// Sends a signal to a process by pid (ESRCH, the process being gone, is not an error).
/// Returns false when no such process exists.
@discardableResult
public func sendSignal(_ signal: Int32, toPID pid: pid_t) throws -> Bool {
    if kill(pid, signal) == 0 { return true }
    let code = Errno.current
    if code == ESRCH { return false }
    throw SystemError("send signal \(signal) to", "pid \(pid)", errno: code)
}

/// Whether a process with this pid exists (zombies count as existing).
public func processExists(_ pid: pid_t) -> Bool {
    if kill(pid, 0) == 0 { return true }
    return Errno.current == EPERM
}

/// The start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), used to tell a
/// recorded pid from a reused one. nil when the process does not exist.
public func processStartTime(_ pid: pid_t) -> UInt64? {
    guard let text = readSmallFile("/proc/\(pid)/stat") else { return nil }
    // comm may contain spaces and parentheses: fields start after the last ')'.
    guard let close = text.lastIndex(of: ")") else { return nil }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // fields[0] is state (field 3); starttime is field 22 -> index 19.
    guard fields.count > 19 else { return nil }
    return UInt64(fields[19])
}

/// Reads a small file (procfs, sysfs, state files) as UTF-8; nil if it cannot be opened.
public func readSmallFile(_ path: String, limit: Int = 1 << 20) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while bytes.count < limit {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && Errno.current == EINTR { continue }
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Locates the `hotspot-nsexec` helper binary.
public enum NSExec {
    /// `$HOTSPOT_NSEXEC`, then next to the running executable (and a few parent folders, for test
    /// bundles), then `./.build/debug`.
    public static func path() throws -> String {
        try BuildProducts.locate("hotspot-nsexec", environmentKey: "HOTSPOT_NSEXEC")
    }
}

/// Finds a system command (nft, dnsmasq, modprobe, qemu...): the folders of PATH, then the sbin folders (root's tools,
/// which a user's PATH may lack). The one lookup the lab, doctor and the benchmarks share.
public enum SystemTools {
    public static let sbinDirectories = ["/usr/sbin", "/sbin", "/usr/local/sbin"]

    /// The first executable `name` found; nil when none is.
    public static func find(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        let directories = path.split(separator: ":").map(String.init) + sbinDirectories
        for directory in directories where !directory.isEmpty {
            let candidate = directory + "/" + name
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// `find`, or an error naming the command and the Debian package that provides it.
    public static func require(_ name: String, package: String? = nil) throws -> String {
        guard let path = find(name) else {
            throw SystemError("find", name, reason: "not installed (apt-get install -y \(package ?? name))")
        }
        return path
    }
}

/// Finds this package's built executables (hotspot-nsexec, hotspot-lab, hotspotd...).
public enum BuildProducts {
    /// `$environmentKey` if set, then next to the running executable and up to four parent folders (test
    /// bundles live in `.build/debug/X.xctest/...`), then `./.build/debug` and `./.build/release`.
    public static func locate(_ name: String, environmentKey: String? = nil) throws -> String {
        if let environmentKey, let env = getenv(environmentKey) {
            let path = String(cString: env)
            if access(path, X_OK) == 0 { return path }
        }
        var candidates: [String] = []
        if let exe = executablePath() {
            var dir = parentDirectory(exe)
            candidates.append(dir + "/" + name)
            for _ in 0..<4 {
                dir = parentDirectory(dir)
                candidates.append(dir + "/" + name)
            }
        }
        if let cwd = currentDirectory() {
            candidates.append(cwd + "/.build/debug/" + name)
            candidates.append(cwd + "/.build/release/" + name)
        }
        for candidate in candidates where access(candidate, X_OK) == 0 {
            return candidate
        }
        throw SystemError(
            "locate", name,
            reason: "not found next to the executable or in .build/debug (run `swift build`\(environmentKey.map { ", or set " + $0 } ?? ""))"
        )
    }

    static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func currentDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        let length = buffer.firstIndex(of: 0) ?? buffer.count
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func parentDirectory(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}

func sleepFor(_ duration: Duration) {
    let (seconds, attoseconds) = duration.components
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && Errno.current == EINTR {
        request = remaining
    }
}
