import Foundation
import HotspotCore
import HotspotClient
import HotspotDaemon
import HotspotProtocol
import HotspotSystem

/// `hotspot-lab bench protocol`: hotspotd's command round trip and evaluate arbitration with 1, 10 and 100
/// connected helpers. The daemon runs in this process on its own thread with its real sockets and trace file;
/// the helpers are raw protocol peers answering at once from one thread. Timings come from the daemon's trace
/// (monotonic clock).
public struct ProtocolBenchmark: Sendable {
    /// Helper counts to measure.
    public var helpers: [Int]
    /// Maintain round trips per helper count.
    public var roundTrips: Int
    /// filterScanList rounds per helper count (every helper answers each).
    public var scanRounds: Int
    /// Evaluate arbitrations with the largest helper count.
    public var arbitrations: Int

    public init(helpers: [Int] = [1, 10, 100], roundTrips: Int = 2000, scanRounds: Int = 200, arbitrations: Int = 100) {
        self.helpers = helpers
        self.roundTrips = roundTrips
        self.scanRounds = scanRounds
        self.arbitrations = arbitrations
    }

    public func run() throws {
        print("hotspotd protocol benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
        print("helpers | maintain round trip p50 / p99 / max (us) | filterScanList per command p50 / p99 (us) | scan round p50 / p99 (us)")
        for n in helpers {
            let r = try measure(helpers: n, arbitrate: n == helpers.max())
            print(String(format: "%7d | %10.0f / %6.0f / %7.0f | %10.0f / %6.0f | %10.0f / %6.0f",
                         n, r.maintain.p(50), r.maintain.p(99), r.maintain.max, r.scanCommand.p(50), r.scanCommand.p(99),
                         r.scanRound.p(50), r.scanRound.p(99)))
            if let a = r.arbitration {
                print(String(format: "evaluate arbitration with %d helpers (all answer low, so all answers are awaited): p50 %.0f us, p99 %.0f us, max %.0f us (%d runs)",
                             n, a.p(50), a.p(99), a.max, a.values.count))
            }
        }
    }

    struct Sample {
        var values: [Double]
        init(_ v: [Double]) { values = v.sorted() }
        func p(_ q: Double) -> Double {
            guard !values.isEmpty else { return .nan }
            return values[min(values.count - 1, Int((q / 100) * Double(values.count)))]
        }
        var max: Double { values.last ?? .nan }
    }

    struct Result {
        var maintain: Sample
        var scanCommand: Sample
        var scanRound: Sample
        var arbitration: Sample?
    }

    func measure(helpers n: Int, arbitrate: Bool) throws -> Result {
        let dir = NSTemporaryDirectory() + "hsl-bench-protocol-\(getpid())-\(n)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var options = DaemonOptions(runDirectory: dir)
        // Deadlines stay at 45 s (nothing should time out); the maintain timer fires after 1 ms so maintain
        // round trips follow each other.
        options.timing = Timing(maintainInterval: .milliseconds(1))
        // One trace file for the whole run (the timings are read from it): 100 helpers' scan rounds pass the 8 MiB at
        // which it would rotate, and the maintain round trips would be in a rotated file.
        options.traceMaximumBytes = 1 << 30
        let daemon = try Daemon.runningOnThread(options: options)
        defer { daemon.stop() }

        let peers = try RawHelpers(path: options.helperSocket, count: n)
        let control = try ControlClient.connect(path: options.controlSocket, timeout: .seconds(5))
        try control.waitForStatus(timeout: .seconds(30), "\(n) helpers") { ($0["helpers"]?.arrayValue?.count ?? 0) == n }
        try peers.startAnswering()

        // 1. Maintain round trips: join a network, the first high answer wins, then maintain every 1 ms.
        peers.evaluateConfidence = 2
        try control.request(.associate(HotspotNetwork(ssid: "bench", bssid: "02:00:00:00:00:01")))
        try control.request(.ipUp)
        let startSeq = peers.maintains.load()
        while peers.maintains.load() < startSeq + roundTrips { usleep(2000) }
        try control.request(.disassociate)

        // 2. filterScanList rounds: every helper gets a command and answers.
        let list = (0..<5).map { HotspotNetwork(ssid: "scan\($0)", bssid: "02:00:00:00:01:0\($0)") }
        for _ in 0..<scanRounds {
            let before = peers.scans.load()
            try control.request(.showScanList(list, repeating: false))
            while peers.scans.load() < before + n { usleep(1000) }
            usleep(1000)
        }
        usleep(20_000)

        // 3. Evaluate arbitration: every helper answers low, so the daemon waits for all of them.
        if arbitrate {
            peers.evaluateConfidence = 1
            for k in 0..<arbitrations {
                let before = peers.authenticates.load()
                try control.request(.associate(HotspotNetwork(ssid: "arb\(k)", bssid: "02:00:00:00:02:01")))
                try control.request(.ipUp)
                while peers.authenticates.load() <= before { usleep(1000) }
                try control.request(.disassociate)
            }
        }
        usleep(20_000)

        // Timings from the trace.
        let text = try String(contentsOfFile: options.traceFile!, encoding: .utf8)
        var maintain: [Double] = [], scanCommand: [Double] = [], scanRound: [Double] = [], arbitration: [Double] = []
        var maintainSent: Double?
        var scanShown: Double?
        var evaluatingSince: Double?
        for line in text.split(separator: "\n") {
            guard let entry = TraceEntry(line: Array(line.utf8)), let t = entry.time else { continue }
            switch entry.record {
            case .command(let c) where c.commandType == "maintain":
                maintainSent = t
            case .transition(let x):
                let from = x.from, to = x.to
                if from == "Maintaining", to == "Authenticated", let s = maintainSent {
                    maintain.append((t - s) / 1000)
                    maintainSent = nil
                }
                if to == "Evaluating" { evaluatingSince = t }
                if from == "Evaluating", to == "Authenticating", let s = evaluatingSince, arbitrate {
                    arbitration.append((t - s) / 1000)
                    evaluatingSince = nil
                }
            case .response(let a) where a.commandType == "filterScanList":
                if let l = a.latency_us { scanCommand.append(l) }
            case .event(let e) where e.event == "scanListShown":
                scanShown = t
            case .scanList:
                if let s = scanShown { scanRound.append((t - s) / 1000) }
                scanShown = nil
            default:
                break
            }
        }
        // The first arbitration is the one that picked the maintain helper (first high answer): skip it.
        if arbitrate, !arbitration.isEmpty { arbitration.removeFirst() }
        peers.stop()
        return Result(maintain: Sample(maintain), scanCommand: Sample(scanCommand), scanRound: Sample(scanRound),
                      arbitration: arbitrate ? Sample(arbitration) : nil)
    }
}

final class AtomicCounter: @unchecked Sendable {  // @unchecked: `value` is touched only with `lock` held
    private let lock = Mutex()
    private var value = 0
    func add() { lock.withLock { value += 1 } }
    func load() -> Int { lock.withLock { value } }
}

/// N registered helper connections answered from one thread, at once.
final class RawHelpers: @unchecked Sendable {  // @unchecked: `decoders` is used by the answering thread alone (after init), `thread` by the starter alone; the rest is Locked or lets
    let sockets: [UnixSocket]
    var decoders: [FrameDecoder]
    let maintains = AtomicCounter()
    let scans = AtomicCounter()
    let authenticates = AtomicCounter()
    private let confidence = Locked(2)
    var evaluateConfidence: Int {
        get { confidence.withLock { $0 } }
        set { confidence.withLock { $0 = newValue } }
    }
    /// Cleared by `stop()` (the caller's thread), read by the answering thread.
    private let running = Locked(true)
    private var thread: SystemThread?

    init(path: String, count: Int) throws {
        var s: [UnixSocket] = []
        for i in 0..<count {
            let sock = try UnixSocket.connect(path: path)
            try sock.writeAll(HelperMessage.register(identifier: "bench.\(i)", displayName: "B\(i)", version: protocolVersion).framed)
            s.append(sock)
        }
        sockets = s
        decoders = Array(repeating: FrameDecoder(), count: count)
    }

    func startAnswering() throws {
        thread = try SystemThread.start("bench helpers' answers", stackSize: 1 << 22) { [self] in loop() }
    }

    func stop() {
        running.withLock { $0 = false }
        for s in sockets { s.shutdownWrite() }
    }

    private func loop() {
        var fds = sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while running.withLock({ $0 }) {
            let n = poll(&fds, nfds_t(fds.count), 100)
            guard n > 0 else { continue }
            for i in fds.indices where fds[i].revents != 0 {
                let outcome = (try? buffer.withUnsafeMutableBytes { try sockets[i].read(into: $0) }) ?? .endOfFile
                guard case .bytes(let k) = outcome else {
                    if outcome == .endOfFile { fds[i].fd = -1 }
                    continue
                }
                decoders[i].append(buffer[0..<k])
                while let payload = try? decoders[i].nextFrame() {
                    guard case .command(let c)? = try? DaemonMessage(bytes: payload) else { continue }
                    answer(c, on: sockets[i])
                }
            }
        }
    }

    private func answer(_ c: Command, on socket: UnixSocket) {
        let reply: HelperMessage
        switch c.type {
        case .filterScanList:
            reply = .response(command: c.id, result: .success, network: nil, networkList: [])
        case .evaluate:
            var n = c.network!
            n.confidence = Confidence(rawValue: evaluateConfidence) ?? .none
            reply = .response(command: c.id, result: .success, network: n, networkList: nil)
        default:
            reply = .response(command: c.id, result: .success, network: nil, networkList: nil)
        }
        try? socket.writeAll(reply.framed)
        switch c.type {
        case .maintain: maintains.add()
        case .filterScanList: scans.add()
        case .authenticate: authenticates.add()
        default: break
        }
    }
}

extension Daemon {
    /// A started hotspotd whose loop runs on a thread of its own (4 MiB of stack), for the in-process benchmarks;
    /// the caller stops it.
    static func runningOnThread(options: DaemonOptions) throws -> Daemon {
        let daemon = try Daemon(options: options)
        try daemon.start()
        try SystemThread.detach("in-process hotspotd", stackSize: 1 << 22) { daemon.run() }
        return daemon
    }
}
