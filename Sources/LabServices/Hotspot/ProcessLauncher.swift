import Foundation
import HotspotSystem
import Netlink
import LabSandbox

/// A daemon a service started: what the services need of a `ChildProcess` (tests substitute their own).
public protocol ServiceProcess: AnyObject, Sendable {
    var pid: pid_t { get }
    /// How it ended, once reaped (nil: running or not yet reaped).
    var exitStatus: ExitStatus? { get }
    /// Reaps it if it ended (non-blocking).
    func poll() throws -> ExitStatus?
    /// SIGTERM, then SIGKILL after `grace`.
    @discardableResult func terminate(grace: Duration) throws -> ExitStatus
}

extension ChildProcess: ServiceProcess {}

/// How a hotspot's services find tools and start processes. The lab's launcher (`LabProcessLauncher`) spawns
/// through the lab (pids journaled, stopped at teardown) inside the lab's namespaces; a test's launcher records
/// the command lines instead, so they can be checked without root.
public protocol ProcessLauncher: AnyObject, Sendable {
    /// The path of a system tool (hostapd, dnsmasq, nft, tc, openssl).
    func tool(_ name: String) throws -> String
    /// The path of one of this package's executables.
    func product(_ name: String, environmentKey: String) throws -> String
    /// Starts a daemon in the lab namespace named `namespace` (nil: the caller's).
    func spawn(_ configuration: ProcessConfiguration, inNamespace namespace: String?) throws -> any ServiceProcess
    /// Runs a command to completion in the lab namespace named `namespace` (nil: the caller's).
    func run(_ configuration: ProcessConfiguration, inNamespace namespace: String?, timeout: Duration) throws -> CommandResult
}

/// How a command run to completion ended, and what it printed.
public struct CommandResult: Sendable, Equatable {
    public var status: ExitStatus
    public var stdout: String
    public var stderr: String
    public init(status: ExitStatus, stdout: String = "", stderr: String = "") {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// The real launcher: processes through `Lab.spawn` and `ProcessRunner`, tools from the system.
public final class LabProcessLauncher: ProcessLauncher, @unchecked Sendable {  // @unchecked: lets only (the lab, which locks its own state)
    public let lab: Lab

    public init(lab: Lab) { self.lab = lab }

    public func tool(_ name: String) throws -> String { try RunningTopology.findTool(name) }

    public func product(_ name: String, environmentKey: String) throws -> String {
        try BuildProducts.locate(name, environmentKey: environmentKey)
    }

    func namespace(_ name: String, for configuration: ProcessConfiguration) throws -> NetworkNamespace {
        guard name.hasPrefix(lab.prefix), let ns = lab.namespace(String(name.dropFirst(lab.prefix.count))) else {
            throw SystemError("start", configuration.commandLine, reason: "namespace \(name) is not one of lab \(lab.prefix)'s")
        }
        return ns
    }

    public func spawn(_ configuration: ProcessConfiguration, inNamespace namespace: String?) throws -> any ServiceProcess {
        try lab.spawn(configuration, in: try namespace.map { try self.namespace($0, for: configuration) })
    }

    public func run(_ configuration: ProcessConfiguration, inNamespace namespace: String?, timeout: Duration) throws -> CommandResult {
        let result = try ProcessRunner.run(try namespace.map { try configuration.inNetworkNamespace($0) } ?? configuration, timeout: timeout)
        return CommandResult(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }
}

/// One of a hotspot's services (uplink, gate, portal, access point, DHCP/DNS), as tast's virtualnet has them.
/// `launch` starts it without waiting, `waitUntilReady` returns once it is ready (its readiness signal: a
/// ready file, a log line, a control socket; never a fixed wait), so several services start in parallel.
public protocol HotspotService: AnyObject {
    /// For messages and timings: "portal", "hostapd 02:00:00:00:01:00", ...
    var serviceName: String { get }
    /// Its log files by name ("portal", "dnsmasq", "hostapd-1", ...); the paths stay where the daemons write.
    var logFiles: [String: String] { get }
    func launch() throws
    func waitUntilReady() throws
    func stop() throws
}

extension HotspotService {
    /// Launches and returns once ready.
    public func start() throws {
        try launch()
        try waitUntilReady()
    }

    /// Copies its log files that exist into `directory` (created if missing), under their own file names.
    public func writeLogs(to directory: String) throws {
        let fm = FileManager.default
        try fm.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (_, path) in logFiles.sorted(by: { $0.key < $1.key }) where fm.fileExists(atPath: path) {
            let target = directory + "/" + (path as NSString).lastPathComponent
            guard (target as NSString).standardizingPath != (path as NSString).standardizingPath else { continue }
            try? fm.removeItem(atPath: target)
            do {
                try fm.copyItem(atPath: path, toPath: target)
            } catch {
                throw SystemError("copy the \(serviceName) log", path, reason: "to \(target): \(error)")
            }
        }
    }
}

/// Readiness waits shared by the services (polling a file the daemon writes, failing early if it exits).
/// A start waits for its daemon's readiness, not for a fixed time: as long as the daemon runs, the wait goes on (a
/// Swift binary over 9p under TCG on a loaded machine took more than 15 s to listen; issue 25), up to
/// `safetyBound`, which only catches a daemon that runs but never gets ready.
public enum Readiness {
    /// The longest a running daemon may take to get ready (a hung daemon; not a measure of load).
    public static let safetyBound: Duration = .seconds(300)

    /// Waits until `attempt` succeeds (it returns a value), retrying while `child` runs; throws `attempt`'s last error
    /// when the child exits first or `safetyBound` passes.
    public static func whileRunning<T>(_ child: () throws -> ExitStatus?, what: String, log: String,
                                       bound: Duration = safetyBound, _ attempt: () throws -> T) throws -> T {
        let deadline = ContinuousClock.now + bound
        while true {
            do {
                return try attempt()
            } catch {
                if let status = try child() {
                    throw SystemError("start", what, reason: "exited (\(status)) before it was ready (\(error)); log \(log): \(tail(log))")
                }
                if ContinuousClock.now >= deadline {
                    throw SystemError("start", what, reason: "running but not ready within \(bound): \(error); log \(log): \(tail(log))")
                }
                usleep(5_000)
            }
        }
    }

    /// Waits for a daemon's readiness file (written once it listens); fails early if it exits.
    public static func waitForFile(_ path: String, child: any ServiceProcess, log: String, what: String,
                                   timeout: Duration = safetyBound) throws {
        let deadline = ContinuousClock.now + timeout
        while access(path, F_OK) != 0 {
            if let status = try child.poll() {
                throw SystemError("start", what, reason: "exited (\(status)) before it was ready; log \(log): \(tail(log))")
            }
            if ContinuousClock.now >= deadline {
                throw SystemError("start", what, reason: "not ready within \(timeout); log \(log): \(tail(log))")
            }
            usleep(5_000)
        }
    }

    /// Waits for `text` in a daemon's log; fails early if it exits.
    public static func waitForLogLine(_ path: String, containing text: String, child: any ServiceProcess, what: String,
                                      timeout: Duration = safetyBound) throws {
        let deadline = ContinuousClock.now + timeout
        while !(readSmallFile(path)?.contains(text) ?? false) {
            if let status = try child.poll() {
                throw SystemError("start", what, reason: "exited (\(status)); log \(path): \(tail(path))")
            }
            if ContinuousClock.now >= deadline {
                throw SystemError("start", what, reason: "no \"\(text)\" in its log within \(timeout); log \(path): \(tail(path))")
            }
            usleep(5_000)
        }
    }

    /// The last lines of a log, on one line.
    public static func tail(_ path: String, lines: Int = 14) -> String {
        guard let text = readSmallFile(path) else { return "(no log)" }
        return text.split(separator: "\n").suffix(lines).joined(separator: " | ")
    }

    /// Stops a daemon if it still runs.
    static func stop(_ process: (any ServiceProcess)?, grace: Duration) throws {
        if let process, process.exitStatus == nil { try process.terminate(grace: grace) }
    }
}
