import Foundation
import HotspotCore
import HotspotClient
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import LabKit

/// `hotspot-lab bench providers`: a provider pair's cold start (hotspotd launches the process on demand: spawn,
/// register, start, the first command's answer) and warm command round trip (maintain to the running
/// authentication provider). hotspotd runs in this process on its own thread with its real sockets and trace
/// file; the providers are `hotspot-test-provider` processes (the SDK's provider runtime) it launches. Timings
/// come from the daemon's trace (monotonic clock).
public struct ProviderBenchmark: Sendable {
    /// Cold starts: each association launches the evaluation provider (filterScanList/evaluate) and then the
    /// authentication provider (authenticate) afresh; the disassociation stops both.
    public var coldStarts: Int
    /// Maintain round trips to the running authentication provider.
    public var roundTrips: Int
    /// Run the evaluation provider in its sandbox (`hotspot-nsexec --new-netns`, needs root), as hotspotd does by default.
    public var sandbox: Bool

    public init(coldStarts: Int = 20, roundTrips: Int = 1000, sandbox: Bool = false) {
        self.coldStarts = coldStarts
        self.roundTrips = roundTrips
        self.sandbox = sandbox
    }

    static let app = "com.hotspotlab.bench"

    public func run() throws {
        let provider = try BuildProducts.locate("hotspot-test-provider")
        let dir = NSTemporaryDirectory() + "hsl-bench-providers-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var options = DaemonOptions(runDirectory: dir)
        // The maintain timer fires 1 ms after Authenticated, so the warm round trips follow each other.
        options.timing = Timing(maintainInterval: .milliseconds(1))
        options.apps = [AppDeclaration(
            bundleIdentifier: Self.app, displayName: "Bench",
            evaluationProvider: ProviderDeclaration(identifier: Self.app + ".evaluation", command: [provider, "--evaluate", "high"]),
            authenticationProvider: ProviderDeclaration(identifier: Self.app + ".authentication", command: [provider]))]
        options.appsFile = "(bench)"
        if sandbox { options.evaluationSandbox = [try BuildProducts.locate("hotspot-nsexec"), "--new-netns", "--"] }
        let daemon = try Daemon.runningOnThread(options: options)
        defer { daemon.stop() }
        let control = try ControlClient.connect(path: options.controlSocket, timeout: .seconds(5))
        try control.request(.setManager(app: Self.app, ManagerConfiguration(isEnabled: true)))

        func providersIdle() throws {
            try control.waitForStatus(timeout: .seconds(30), "providers stopped") { status in
                let providers = status["apps"]?.arrayValue?.first?["providers"]?.arrayValue ?? []
                return providers.allSatisfy { $0["state"]?.stringValue == "notRunning" }
            }
        }
        func authenticated() throws {
            try control.waitForStatus(timeout: .seconds(30), "Authenticated") { $0["state"]?.stringValue == "Authenticated" }
        }

        // 1. Cold starts: each join launches both providers; leaving stops them (noNetworkAvailable).
        for k in 0..<coldStarts {
            try providersIdle()
            try control.request(.associate(HotspotNetwork(ssid: "cold\(k)", bssid: "02:00:00:00:00:01")))
            try control.request(.ipUp)
            try authenticated()
            try control.request(.disassociate)
        }
        try providersIdle()

        // 2. Warm round trips: join once, then maintain every 1 ms to the running authentication provider.
        try control.request(.associate(HotspotNetwork(ssid: "warm", bssid: "02:00:00:00:00:02")))
        try control.request(.ipUp)
        let trace = options.traceFile ?? dir + "/trace.jsonl"
        let deadline = ContinuousClock.now + .seconds(Int64(roundTrips) / 10 + 60)
        while Self.count(of: "\"to\":\"Authenticated\"", in: trace) < coldStarts + roundTrips + 1 {
            guard ContinuousClock.now < deadline else { throw SystemError("bench providers", "warm round trips", reason: "not done within the time allowed") }
            usleep(50_000)
        }
        try control.request(.disassociate)
        try providersIdle()
        let r = try Self.measure(trace: trace)
        print("provider benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores; hotspot-test-provider; evaluation sandbox: \(sandbox ? "netns" : "none"))")
        print("".padding(toLength: 36, withPad: " ", startingAt: 0) + " |  p50 (ms) |  p99 (ms) |  max (ms) | n")
        for (name, sample) in [("cold: launch -> started (eval)", r.startedEvaluation), ("cold: launch -> started (auth)", r.startedAuthentication),
                               ("cold: evaluate sent -> answered", r.coldEvaluate), ("cold: authenticate sent -> answered", r.coldAuthenticate),
                               ("warm: maintain round trip", r.warmMaintain)] {
            print(name.padding(toLength: 36, withPad: " ", startingAt: 0)
                + String(format: " | %9.2f | %9.2f | %9.2f | %d", sample.p(50), sample.p(99), sample.max, sample.values.count))
        }
    }

    static func count(of needle: String, in path: String) -> Int {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return 0 }
        return text.components(separatedBy: needle).count - 1
    }

    typealias Sample = ProtocolBenchmark.Sample

    struct Result {
        var startedEvaluation: Sample, startedAuthentication: Sample, coldEvaluate: Sample, coldAuthenticate: Sample, warmMaintain: Sample
    }

    /// Reads the timings (milliseconds) from the trace: `providerStarted.latencyMs`; for each launch, the command
    /// that caused it (the last one sent before it) to its response; maintain from command to `Maintaining ->
    /// Authenticated` while no launch is pending.
    static func measure(trace path: String) throws -> Result {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var started: [String: [Double]] = [:]
        var cold: [String: [Double]] = [:]
        var warm: [Double] = []
        var sent: [Int: (type: String, t: Double)] = [:]
        var lastSent: [String: Int] = [:]
        var coldCommands: Set<Int> = []
        var maintainSent: (id: Int, t: Double)?
        for line in text.split(separator: "\n") {
            guard let entry = TraceEntry(line: Array(line.utf8)), let t = entry.time else { continue }
            switch entry.record {
            case .command(let c):
                let id = c.id, type = c.commandType
                sent[id] = (type, t)
                lastSent[["filterScanList", "evaluate"].contains(type) ? "evaluationProvider" : "authenticationProvider"] = id
                if type == "maintain" { maintainSent = (id, t) }
            case .providerLaunched(let p):
                if let id = lastSent[p.role] { coldCommands.insert(id) }
            case .providerStarted(let p):
                if let ms = p.latencyMs { started[p.role, default: []].append(ms) }
            case .response(let a):
                guard let s = sent[a.command], coldCommands.contains(a.command) else { continue }
                cold[s.type, default: []].append((t - s.t) / 1e6)
            case .transition(let x) where x.from == "Maintaining" && x.to == "Authenticated":
                if let m = maintainSent, !coldCommands.contains(m.id) { warm.append((t - m.t) / 1e6) }
                maintainSent = nil
            default:
                break
            }
        }
        return Result(startedEvaluation: Sample(started["evaluationProvider"] ?? []), startedAuthentication: Sample(started["authenticationProvider"] ?? []),
                      coldEvaluate: Sample(cold["evaluate"] ?? []), coldAuthenticate: Sample(cold["authenticate"] ?? []), warmMaintain: Sample(warm))
    }
}
