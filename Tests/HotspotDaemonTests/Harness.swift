import Foundation
import HotspotCore
import HotspotClient
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Testing

/// Where the built products (hotspotd, hotspot-test-helper) are: beside the test bundle.
enum Products {
    static var directory: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // On Linux the test bundle is an executable in the products directory; elsewhere it is inside a .xctest folder.
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("hotspotd").path), dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir.path
    }

    static func path(_ name: String) throws -> String {
        let p = directory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: p) else {
            throw ClientError("\(name) is not built at \(p): run `swift build` before `swift test`")
        }
        return p
    }

    static var pythonHelper: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("python-helper/hotspot_helper.py").path
    }
}

/// Which implementation a helper process uses.
enum HelperKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case swift, python
    var description: String { rawValue }
}

/// A child process with its output in a log file.
final class Child: @unchecked Sendable {
    let process = Process()
    let log: String

    init(_ executable: String, _ arguments: [String], log: String) throws {
        self.log = log
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = FileHandle(forWritingAtPath: log)!
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    func kill9() {
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    func terminate() {
        if process.isRunning { kill(pid, SIGTERM) }
        process.waitUntilExit()
    }

    var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// A hotspotd process in its own temp run directory, with a control connection.
final class DaemonUnderTest: @unchecked Sendable {
    let runDir: String
    let extra: [String]
    private(set) var child: Child!
    private(set) var control: ControlClient!
    var helpers: [Child] = []
    /// Unscaled by default: iOS's 45 s deadlines and 300 s maintain interval, which no test waits out. A deadline is a
    /// verdict, so a scaled one made the test's verdict the machine's (at 0.05, 2.25 s: CI run 41, a debug helper's
    /// first answer on a loaded machine came later). Tests that wait for a deadline or an interval to pass give a
    /// smaller scale, and say so.
    let timeScale: String

    init(name: String, extra: [String] = [], runDir: String? = nil, timeScale: String = "1") throws {
        self.timeScale = timeScale
        if let runDir {
            self.runDir = runDir
        } else {
            let base = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-hotspotd-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            self.runDir = base.path
        }
        self.extra = extra
        try start()
    }

    var helperSocket: String { runDir + "/helper.sock" }
    var controlSocket: String { runDir + "/control.sock" }
    var traceFile: String { runDir + "/trace.jsonl" }
    var stateFile: String { runDir + "/state.json" }

    /// Logs of the processes, inside the run directory (removed with it).
    var logDir: String { runDir + "/logs" }

    func start() throws {
        try UnixSocket.makeDirectory(logDir, mode: 0o700)
        child = try Child(try Products.path("hotspotd"), ["--run-dir", runDir, "--time-scale", timeScale] + extra,
                          log: logDir + "/hotspotd-\(UInt32.random(in: 0...UInt32.max)).log")
        control = try ControlClient.connect(path: controlSocket, timeout: .seconds(60))
    }

    func kill9() {
        control = nil
        child.kill9()
    }

    /// Starts a helper process and waits until the daemon lists it as registered.
    @discardableResult
    func helper(_ kind: HelperKind, id: String, name: String? = nil, _ script: [String: String] = [:]) throws -> Child {
        var args = ["--socket", helperSocket, "--id", id, "--name", name ?? String(id.prefix(15))]
        for (k, v) in script.sorted(by: { $0.key < $1.key }) { args += ["--\(k)", v] }
        let log = logDir + "/helper-\(id)-\(UInt32.random(in: 0...UInt32.max)).log"
        let c: Child
        switch kind {
        case .swift: c = try Child(try Products.path("hotspot-test-helper"), args, log: log)
        case .python: c = try Child("/usr/bin/python3", [Products.pythonHelper] + args, log: log)
        }
        helpers.append(c)
        try control.waitForStatus(timeout: .seconds(60), "helper \(id) to register") { s in
            s["helpers"]?.arrayValue?.contains { $0["identifier"]?.stringValue == id } ?? false
        }
        return c
    }

    @discardableResult
    func waitForState(_ state: HotspotState, timeout: Duration = .seconds(60)) throws -> JSON {
        try control.waitForStatus(timeout: timeout, "state \(state)") { $0["state"]?.stringValue == state.rawValue }
    }

    func join(_ network: HotspotNetwork) throws {
        try control.request(.associate(network))
        try control.request(.ipUp)
    }

    /// Every trace record written so far.
    func trace() -> [JSON] {
        guard let text = try? String(contentsOfFile: traceFile, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSON.parse(Array($0.utf8)) }
    }

    func records(_ kind: String) -> [JSON] { trace().filter { $0["kind"]?.stringValue == kind } }

    func transitions() -> [String] {
        records("transition").map { "\($0["from"]!.stringValue!)->\($0["to"]!.stringValue!)" }
    }

    func commands(_ type: CommandType? = nil) -> [JSON] {
        records("command").filter { type == nil || $0["commandType"]?.stringValue == type!.description }
    }

    deinit {
        for h in helpers { h.kill9() }
        if let child, child.process.isRunning { child.terminate() }
        try? FileManager.default.removeItem(atPath: runDir)
    }
}

/// A raw protocol peer for malformed input: frames by hand.
final class RawPeer {
    let socket: UnixSocket
    var decoder = FrameDecoder()
    var buffer = [UInt8](repeating: 0, count: 65_536)

    init(path: String) throws {
        socket = try UnixSocket.connect(path: path)
    }

    func sendBytes(_ bytes: [UInt8]) throws { try socket.writeAll(bytes) }
    func send(_ json: JSON) throws { try sendBytes(frame(json.bytes)) }
    func send(_ m: HelperMessage) throws { try sendBytes(m.framed) }

    /// The next message, nil on timeout or end of file.
    func read(timeout: Duration = .seconds(5)) throws -> JSON? {
        let deadline = SystemMonotonicClock.read() + timeout
        while true {
            if let p = try decoder.nextFrame() { return try JSON.parse(p) }
            let left = deadline - SystemMonotonicClock.read()
            guard left > .zero, socket.waitReadable(timeout: left) else { return nil }
            let o = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            switch o {
            case .bytes(let n): decoder.append(buffer[0..<n])
            case .wouldBlock: continue
            case .endOfFile: return nil
            }
        }
    }

    /// Reads (dropping messages) until the daemon closes the connection: true at end of file, false if
    /// `timeout` (a bound on failure, not a wait) passes first.
    func readUntilClosed(timeout: Duration = .seconds(10)) throws -> Bool {
        let deadline = SystemMonotonicClock.read() + timeout
        while true {
            while try decoder.nextFrame() != nil {}
            let left = deadline - SystemMonotonicClock.read()
            guard left > .zero, socket.waitReadable(timeout: left) else { return false }
            let o = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            switch o {
            case .bytes(let n): decoder.append(buffer[0..<n])
            case .wouldBlock: continue
            case .endOfFile: return true
            }
        }
    }

    /// Reads until a message of `type` arrives (others skipped).
    func read(type: String, timeout: Duration = .seconds(5)) throws -> JSON? {
        let deadline = SystemMonotonicClock.read() + timeout
        while true {
            let left = deadline - SystemMonotonicClock.read()
            guard left > .zero, let m = try read(timeout: left) else { return nil }
            if m["type"]?.stringValue == type { return m }
        }
    }
}

let cafe = HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:00:01", signalStrength: 0.8)
let cafeSecure = HotspotNetwork(ssid: "CafeSecure", bssid: "02:00:00:00:00:02", signalStrength: 0.6, security: .wpa2Personal)

func cacheEntry(_ status: JSON, _ ssid: String) -> JSON? {
    status["cache"]?.arrayValue?.first { $0["ssid"]?.stringValue == ssid }
}

func autoJoinDisabled(_ status: JSON, _ ssid: String) -> Bool {
    status["autoJoinDisabled"]?.arrayValue?.contains { $0["ssid"]?.stringValue == ssid } ?? false
}
