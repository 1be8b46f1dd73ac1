import Foundation
import HotspotCore

#if canImport(Glibc)
import Glibc
#endif

/// `hotspot-lab bench core`: the pure state machine's speed and allocations.
///
/// Replays the guide's four sequences (captive, not captive, captive with UI, captive cached) on one
/// machine, `--iterations` times, on one thread, the way a driver does: each event goes through
/// `handle(_:into:)` with a reused effects array, and each answer is built from the `send` effect of
/// the command it answers. Every iteration ends back in Inactive; the first iteration's states and
/// effect counts are checked against the guide, later ones against the first.
///
/// Allocations are counted two ways:
/// - in process, `mallinfo2()` before and after the timed run: the heap must not grow;
/// - exactly, with a perf uprobe on libc's `malloc` (`perf probe -x libc.so.6 malloc`, root): the bench
///   runs itself twice under `perf stat` with different iteration counts; the difference in malloc calls
///   divided by the difference in events is the number of allocations per steady-state event (start-up
///   and warm-up cancel out). It adds the probe when missing and removes what it added.
///   (Valgrind 3.19 aborts on the async `hotspot-lab` binary; see bench/README.md for its cross-check on
///   a synchronous build of this same file.)
public struct CoreBenchmark: Sendable {
    /// How many times to replay the four sequences.
    public var iterations: Int
    /// Count mallocs per event with a perf uprobe (needs perf and root).
    public var countMallocs: Bool
    /// Print nothing (the child runs of the malloc count).
    public var quiet: Bool

    public init(iterations: Int = 1_000_000, countMallocs: Bool = true, quiet: Bool = false) {
        self.iterations = iterations
        self.countMallocs = countMallocs
        self.quiet = quiet
    }

    public func run() throws {
        var bench = CoreBench()
        bench.warmUp()
        let heapBefore = heapInUse()
        let clock = ContinuousClock()
        let start = clock.now
        let cpuStart = threadCPUTime()
        let events = bench.replay(iterations)
        let cpu = threadCPUTime() - cpuStart
        let elapsed = clock.now - start
        let heapAfter = heapInUse()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if quiet { return }
        print("bench core: the guide's four sequences x \(iterations) (\(CoreBench.eventsPerIteration) events each), one thread")
        print("  events:           \(events)")
        print("  wall time:        \(String(format: "%.3f", seconds)) s, \(String(format: "%.2f", Double(events) / seconds / 1e6)) M events/s")
        print("  thread CPU time:  \(String(format: "%.3f", cpu)) s, \(String(format: "%.2f", Double(events) / cpu / 1e6)) M events/s, "
              + "\(String(format: "%.1f", cpu * 1e9 / Double(events))) ns/event")
        if let heapBefore, let heapAfter {
            print("  heap growth:      \(heapAfter - heapBefore) bytes over the timed run (mallinfo2: uordblks + hblkhd)")
        }
        guard countMallocs else { return }
        do {
            let (small, large) = (2_000, 12_000)
            let (a, b) = try MallocProbe.withProbe {
                (try MallocProbe.mallocCalls(iterations: small), try MallocProbe.mallocCalls(iterations: large))
            }
            let perEvent = Double(b - a) / Double((large - small) * CoreBench.eventsPerIteration)
            print("  allocations:      \(String(format: "%.6f", perEvent)) mallocs per event in steady state "
                  + "(perf uprobe on malloc: \(a) calls for \(small) iterations, \(b) for \(large))")
        } catch {
            print("  allocations:      not counted: \(error) (--no-count-mallocs to skip)")
        }
    }

    /// This thread's CPU time in seconds: unlike wall time, not inflated by other processes on a shared machine.
    func threadCPUTime() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Bytes the program holds from malloc (`mallinfo2().uordblks`). Glibc's Swift module does not
    /// export <malloc.h>, so the function is looked up with dlsym. It returns a 10-word struct, which
    /// the x86-64 SysV ABI returns through a caller-provided buffer passed as the first argument:
    /// calling it as `(buffer) -> buffer` is the same call. Elsewhere: nil (not measured).
    func heapInUse() -> Int? {
        #if os(Linux) && arch(x86_64)
        typealias MallInfo2 = @convention(c) (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallinfo2") else { return nil }
        let call = unsafeBitCast(symbol, to: MallInfo2.self)
        var fields = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)  // arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost
        withUnsafeMutableBytes(of: &fields) { _ = call($0.baseAddress!) }
        return fields.7 + fields.4  // uordblks (arena chunks in use) + hblkhd (mmapped chunks)
        #else
        return nil
        #endif
    }
}

/// Counts libc malloc calls of a child run of this benchmark with a perf uprobe.
enum MallocProbe {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static let event = "probe_libc:malloc"

    static func findTool(_ name: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin"
        return paths.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The libc this process has mapped (the one the child will use).
    static func libcPath() throws -> String {
        let maps = try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
        guard let line = maps.split(separator: "\n").first(where: { $0.hasSuffix("/libc.so.6") }),
              let path = line.split(separator: " ").last else { throw Failure(description: "read /proc/self/maps: no libc.so.6 mapped") }
        return String(path)
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    /// Runs `body` with the malloc uprobe in place; removes it afterwards if this call added it.
    static func withProbe<T>(_ body: () throws -> T) throws -> T {
        guard let perf = findTool("perf") else { throw Failure(description: "perf is not installed (apt-get install linux-perf)") }
        let list = try run(perf, ["probe", "--list"])
        var added = false
        if !list.output.contains(event) {
            let libc = try libcPath()
            let result = try run(perf, ["probe", "-x", libc, "--add", "malloc"])
            guard result.status == 0 else {
                throw Failure(description: "perf probe -x \(libc) --add malloc exited with \(result.status): \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
            }
            added = true
        }
        defer { if added { _ = try? run(perf, ["probe", "--del", event]) } }
        return try body()
    }

    /// Runs this benchmark for `iterations` under `perf stat` and returns its malloc calls.
    static func mallocCalls(iterations: Int) throws -> Int {
        guard let perf = findTool("perf") else { throw Failure(description: "perf is not installed") }
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var arguments = ["stat", "-x", ",", "-e", event, "--", me]
        // The subcommand path: everything up to and including "core".
        let own = CommandLine.arguments.dropFirst()
        if let core = own.firstIndex(of: "core") { arguments += own[...core] } else { arguments += ["bench", "core"] }
        arguments += ["--iterations", "\(iterations)", "--no-count-mallocs", "--quiet"]
        let result = try run(perf, arguments)
        guard result.status == 0 else {
            throw Failure(description: "perf \(arguments.joined(separator: " ")) exited with \(result.status): \(result.output)")
        }
        // CSV: "1296,,probe_libc:malloc,26832543,100.00,,"
        guard let line = result.output.split(separator: "\n").first(where: { $0.contains(event) }),
              let count = Int(line.split(separator: ",", omittingEmptySubsequences: false)[0]) else {
            throw Failure(description: "perf stat printed no \(event) count: \(result.output)")
        }
        return count
    }
}

/// The four sequences as a script a driver plays: plain events, and answers to the command last sent
/// to a helper (the id comes from the `send` effect, as in a real driver).
struct CoreBench {
    enum Step {
        case event(Event)
        /// Helper index, the command answered, the result, the network answered with (evaluate: with its confidence).
        case answer(Int, CommandType, HelperResult, HotspotNetwork?)
        /// The user removes the network, so the next iteration evaluates it again.
        case forget(NetworkIdentity)
    }

    static let helpers: [HelperID] = ["com.example.alpha", "com.example.beta"]
    static let captive = HotspotNetwork(ssid: "CoffeeShop", bssid: "02:00:00:00:00:01", signalStrength: 0.8, didAutoJoin: true)
    static let open = HotspotNetwork(ssid: "Library", bssid: "02:00:00:00:00:02", signalStrength: 0.7, didAutoJoin: true)
    static let portal = HotspotNetwork(ssid: "Hotel", bssid: "02:00:00:00:00:03", signalStrength: 0.6, didAutoJoin: true)
    static let cached = HotspotNetwork(ssid: "Airport", bssid: "02:00:00:00:00:04", signalStrength: 0.5, didAutoJoin: true)

    /// Each sequence, then the states it must pass through (checked on the first iteration).
    static func claim(_ network: HotspotNetwork, _ confidence: Confidence) -> HotspotNetwork {
        var network = network
        network.confidence = confidence
        return network
    }

    static let script: [Step] = [
        // Captive: evaluate (b none, a low), authenticate, Authenticated, timer, maintain, leave.
        .event(.associated(captive)), .event(.ipUp),
        .answer(1, .evaluate, .success, claim(captive, .none)), .answer(0, .evaluate, .success, claim(captive, .low)),
        .answer(0, .authenticate, .success, nil),
        .event(.maintainTimerFired), .answer(0, .maintain, .success, nil),
        .event(.disassociated), .forget(captive.identity),
        // Not captive: nobody claims it.
        .event(.associated(open)), .event(.ipUp),
        .answer(0, .evaluate, .success, claim(open, .none)), .answer(1, .evaluate, .success, claim(open, .none)),
        .event(.disassociated),
        // Captive with UI: b claims high at once (a's late answer is rejected), uiRequired, foreground, presentUI.
        .event(.associated(portal)), .event(.ipUp),
        .answer(1, .evaluate, .success, claim(portal, .high)), .answer(0, .evaluate, .success, claim(portal, .high)),
        .answer(1, .authenticate, .uiRequired, nil),
        .event(.foreground(helpers[1])), .answer(1, .presentUI, .success, nil), .event(.foreground(nil)),
        .event(.disassociated), .forget(portal.identity),
        // Captive (cached): Maintaining with didJustJoin, Authenticated, timer, maintain.
        .event(.associated(cached)), .event(.ipUp),
        .answer(0, .maintain, .success, nil),
        .event(.maintainTimerFired), .answer(0, .maintain, .success, nil),
        .event(.disassociated),
    ]

    static let expectedStates: [HotspotState] = [
        .inactive, .evaluating, .evaluating, .authenticating, .authenticated, .maintaining, .authenticated, .inactive,
        .inactive, .evaluating, .evaluating, .authenticated, .inactive,
        .inactive, .evaluating, .authenticating, .authenticating, .presentingUI, .presentingUI, .authenticated, .authenticated, .inactive,
        .inactive, .maintaining, .authenticated, .maintaining, .authenticated, .inactive,
    ]

    static let eventsPerIteration = script.reduce(0) { n, step in if case .forget = step { n } else { n + 1 } }

    var machine: HotspotMachine
    var effects: [Effect] = []
    var side: [Effect] = []
    var effectsPerIteration = -1

    init() {
        machine = HotspotMachine(cache: [Self.cached.identity: .helper(Self.helpers[0])])
        effects.reserveCapacity(64)
        side.reserveCapacity(8)
        for helper in Self.helpers {
            machine.handle(.helperRegistered(helper, displayName: helper == Self.helpers[0] ? "Alpha" : "Beta"), into: &effects)
        }
        precondition(effects.isEmpty, "registration rejected: \(effects)")
    }

    /// The script as flat arrays, so replaying copies no script step: per step, what it is, the event
    /// (plain events), the response template (answers: the id is filled in from the `send` effect).
    let kinds: [UInt8] = script.map { if case .event = $0 { 0 } else if case .answer = $0 { 1 } else { 2 } }
    let events: [Event] = script.map { if case .event(let e) = $0 { e } else { .ipUp } }
    struct Answer {
        var helper: Int
        var type: CommandType
        var result: HelperResult
        var network: HotspotNetwork?
    }
    let answers: [Answer] = script.map {
        if case .answer(let h, let t, let r, let n) = $0 { Answer(helper: h, type: t, result: r, network: n) }
        else { Answer(helper: 0, type: .none, result: .success, network: nil) }
    }
    let forgets: [NetworkIdentity] = script.map { if case .forget(let n) = $0 { n } else { NetworkIdentity(ssid: "", security: .open) } }

    /// Per answer step, the answered command's id minus the iteration's first command id. Command ids
    /// count up by `commandsPerIteration` each iteration, so the timed loop needs no bookkeeping of its
    /// own: it measures the machine, not a driver's routing table. (A wrong id would be rejected, change
    /// the effect count, and stop the run.)
    var idOffsets: [CommandID] = []
    var commandsPerIteration: CommandID = 0
    var nextIterationFirstID: CommandID = 0

    /// One checked iteration: every state as the guide says; fills the caches and capacities, and learns
    /// which command each answer answers from the `send` effects, as a driver would.
    mutating func warmUp() {
        var states: [HotspotState] = []
        var total = 0
        var lastSent: [(id: CommandID, type: CommandType)] = [(0, .none), (0, .none)]
        var firstID: CommandID?
        var sends: CommandID = 0
        idOffsets = Array(repeating: 0, count: Self.script.count)
        for i in 0..<Self.script.count {
            if kinds[i] == 1 {
                let sent = lastSent[answers[i].helper]
                precondition(sent.type == answers[i].type, "no \(answers[i].type) sent to \(Self.helpers[answers[i].helper])")
                idOffsets[i] = sent.id - (firstID ?? 0)
            }
            guard perform(i, id: firstID.map { $0 + idOffsets[i] } ?? 0) else { continue }
            states.append(machine.state)
            total += effects.count
            for effect in effects {
                if case .send(let command) = effect {
                    lastSent[command.helper == Self.helpers[0] ? 0 : 1] = (command.id, command.type)
                    if firstID == nil { firstID = command.id }
                    sends += 1
                }
            }
        }
        precondition(states == Self.expectedStates, "the sequences went wrong: \(states)")
        effectsPerIteration = total
        commandsPerIteration = sends
        nextIterationFirstID = (firstID ?? 0) + sends
        _ = replay(1)
    }

    /// Replays the script `iterations` times; returns the number of events handled.
    mutating func replay(_ iterations: Int) -> Int {
        var events = 0
        let count = Self.script.count
        for _ in 0..<iterations {
            var total = 0
            let first = nextIterationFirstID
            for i in 0..<count where perform(i, id: first &+ idOffsets[i]) {
                events += 1
                total &+= effects.count
            }
            if total != effectsPerIteration {
                fatalError("iteration produced \(total) effects, the first produced \(effectsPerIteration)")
            }
            nextIterationFirstID &+= commandsPerIteration
        }
        precondition(machine.state == .inactive)
        return events
    }

    /// Performs step `i` (an answer answers command `id`); false when it was not an event.
    @inline(__always)
    mutating func perform(_ i: Int, id: CommandID) -> Bool {
        effects.removeAll(keepingCapacity: true)
        switch kinds[i] {
        case 0:
            machine.handle(events[i], into: &effects)
        case 1:
            let response = Response(helper: Self.helpers[answers[i].helper], command: id, result: answers[i].result, network: answers[i].network)
            machine.handle(.response(response), into: &effects)
        default:
            side.removeAll(keepingCapacity: true)
            machine.forget(forgets[i], into: &side)
            return false
        }
        return true
    }
}
