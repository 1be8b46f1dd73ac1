import ArgumentParser
import Foundation
import HotspotSystem
import LabKit

/// `hotspot-lab bench profile`: where the emulated machine's time goes in one scenario (issue 19). Inside the VM,
/// around one run of the scenario:
/// - BSD process accounting (acct(2)) records every process that exits: its name, CPU time, wall time and minor
///   faults, so process starts are counted per binary (udhcpc's script's `ip` calls, our Swift binaries, hostapd);
/// - `perf record -a -e cpu-clock` samples every CPU (software clock: TCG emulates no PMU), so the samples say which
///   binary or library the CPU was in: the dynamic loader's relocations, libswiftCore, Foundation, the kernel.
/// The raw files stay in the output folder (`acct`, `perf.data`, `kallsyms`), the tables go to standard output.
public struct ProfileBenchmark: Sendable {
    public var scenarioPath: String
    /// Samples per second per CPU.
    public var frequency: Int
    /// Call chains too (`perf record -g`).
    public var callGraph: Bool
    let scenario: Scenario

    public init(scenarioPath: String, frequency: Int = 199, callGraph: Bool = false) throws {
        guard (1...10_000).contains(frequency) else { throw ValidationError("--frequency must be 1 ... 10000 samples per second") }
        self.scenarioPath = scenarioPath
        self.frequency = frequency
        self.callGraph = callGraph
        scenario = try ScenarioParser.load(path: scenarioPath)
    }

    /// Runs the scenario with accounting and sampling on; writes the raw files into `folder`.
    public func record(into folder: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let perfPath = try Self.tool("perf", package: "linux-perf")
        // Written to the VM's tmpfs, copied afterwards: the kernel appends each record, cheaper than over 9p.
        let localAcct = NSTemporaryDirectory() + "hotspot-profile-\(getpid()).acct"
        try ProcessAccounting.start(path: localAcct)
        defer { try? ProcessAccounting.stop() }
        // perf.data goes to the VM's tmpfs first (perf writes continuously; over 9p that costs the run itself).
        let localPerf = NSTemporaryDirectory() + "hotspot-profile-\(getpid()).perf.data"
        // No workload: `perf record -a` samples until SIGINT (with a workload it also waits for that to end).
        // Started with its events off (`-D -1`), switched on through its control FIFO; the scenario starts on perf's
        // acknowledgement (PerfControl).
        let control = NSTemporaryDirectory() + "hotspot-profile-\(getpid()).ctl", ack = control + "-ack"
        for fifo in [control, ack] {
            unlink(fifo)
            guard mkfifo(fifo, 0o600) == 0 else { throw SystemError("mkfifo", fifo, errno: errno) }
        }
        defer { unlink(control); unlink(ack) }
        let arguments = ["record", "-a", "-e", "cpu-clock", "-F", "\(frequency)", "-o", localPerf, "-D", "-1", "--control", "fifo:\(control),\(ack)"] + (callGraph ? ["-g"] : [])
        Self.say("starting \(perfPath) \(arguments.joined(separator: " "))")
        let perf = try ChildProcess.spawn(ProcessConfiguration(perfPath, arguments, stdout: .file(folder + "/perf.log"), stderr: .file(folder + "/perf.log")))
        try PerfControl.enable(perf, control: control, ack: ack, log: folder + "/perf.log")
        let cpuBefore = CPUTotals.now()
        Self.say("profiling \(scenario.name): perf record -a -e cpu-clock -F \(frequency) and process accounting are on")
        let start = Date()
        let runner = ScenarioRunner()
        runner.onStep = { _, step in
            Self.say(String(format: "  %@ %6.2f s  %@", step.passed ? "✓" : "✗", step.elapsed, step.step.text as NSString))
        }
        let result = runner.run(scenario)
        let wall = Date().timeIntervalSince(start)
        let cpu = CPUTotals.now().since(cpuBefore)
        Self.say("scenario done; stopping perf")
        try perf.signal(SIGINT)
        guard let status = try perf.wait(timeout: .seconds(120)) else {
            try? perf.signal(SIGKILL)
            throw SystemError("stop", "perf record", reason: "still writing 120 s after SIGINT; see \(folder)/perf.log")
        }
        Self.say("perf stopped (\(status))")
        try ProcessAccounting.stop()
        for name in ["acct", "perf.data"] { try? FileManager.default.removeItem(atPath: folder + "/" + name) }
        try FileManager.default.copyItem(atPath: localPerf, toPath: folder + "/perf.data")
        try? FileManager.default.removeItem(atPath: localPerf)
        try FileManager.default.copyItem(atPath: localAcct, toPath: folder + "/acct")
        try? FileManager.default.removeItem(atPath: localAcct)
        // perf report needs the guest kernel's symbols (the host's kernel is another build).
        // Read to the end: /proc files report size 0, and a read sized by it stopped after the first page.
        if let handle = FileHandle(forReadingAtPath: "/proc/kallsyms"), let symbols = try? handle.readToEnd() {
            FileManager.default.createFile(atPath: folder + "/kallsyms", contents: symbols)
            try? handle.close()
        }
        try cpu.text.write(toFile: folder + "/cpu.txt", atomically: true, encoding: .utf8)
        print(String(format: "scenario %@: %@ in %.2f s (lab up %.2f s); profile in %@", scenario.name,
                     result.passed ? "passed" : "FAILED", wall, result.labUpSeconds, folder))
        if !result.passed { print("  failure: \(result.failure?.message ?? result.setupError ?? "?")") }
        print("  lab up: " + result.labUpParts.map { String(format: "%@ %.2f s", $0.0, $0.1) }.joined(separator: ", "))
        if let traceFile = result.traceFile, let trace = try? TraceFile.load(path: traceFile) {
            let row = SequenceBenchmark.breakdown(trace.records)
            for key in ["join -> associated", "associated -> DHCP lease", "lease -> evaluate answered", "evaluate -> authenticate answered",
                        "join -> Authenticated"] {
                if let value = row[key] { print(String(format: "  %@: %.3f s", key, value)) }
            }
        }
    }

    /// The tables from the raw files in `folder` (on the host: perf report is slow under TCG).
    public static func report(folder: String, top: Int = 25) throws {
        for file in ["acct", "perf.data", "kallsyms"] where access(folder + "/" + file, R_OK) != 0 {
            throw SystemError("read the profile folder's \(file) (bench profile --report: a folder an earlier `bench profile` wrote)",
                              folder + "/" + file, errno: errno)
        }
        if let text = readSmallFile(folder + "/cpu.txt") { print("\n" + text, terminator: "") }
        let records = try ProcessAccounting.parse(Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/acct"))))
        let rows = ProcessAccounting.summarize(records)
        let cpu = rows.reduce(0) { $0 + $1.cpuSeconds }
        print("\nProcesses that exited during the run (BSD accounting): \(records.count) processes, \(String(format: "%.2f", cpu)) s CPU")
        print("\n| command | processes | CPU | CPU per process | wall per process | minor faults per process |\n|---|---|---|---|---|---|")
        for row in rows.prefix(top) {
            let n = Double(row.processes)
            print(String(format: "| %@ | %d | %.2f s | %.3f s | %.3f s | %.0f |", row.command, row.processes, row.cpuSeconds,
                         row.cpuSeconds / n, row.elapsedSeconds / n, row.minorFaults / n))
        }
        let perfPath = try tool("perf", package: "linux-perf")
        for (title, sort) in [("binary or library (dso)", "dso"), ("process (comm)", "comm")] {
            let output = try ProcessRunner.check(ProcessConfiguration(perfPath, [
                "report", "-i", folder + "/perf.data", "--stdio", "--sort", sort, "--kallsyms", folder + "/kallsyms",
                "--percent-limit", "0.5", "-q",
            ]), timeout: .seconds(300)).stdout
            print("\nCPU samples by \(title) (perf record -a -e cpu-clock):\n\n| share | \(sort) |\n|---|---|")
            for line in output.split(separator: "\n") {
                let fields = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
                guard fields.count == 2, fields[0].hasSuffix("%") else { continue }
                print("| \(fields[0]) | \(fields[1].trimmingCharacters(in: .whitespaces)) |")
            }
        }
    }

    /// Progress, unbuffered (standard output is a pipe to the host when this runs in the VM).
    static func say(_ line: String) { StandardStreams.error(line + "\n") }

    static func tool(_ name: String, package: String) throws -> String {
        try SystemTools.require(name, package: package)
    }
}

/// The machine's CPU time by kind (/proc/stat's first line) and this process's own (getrusage), to say how much of
/// a scenario's CPU the accounting's table (processes that exited) leaves out: the lab runner itself, daemons
/// still running, and the kernel's threads (network namespaces' cleanup, softirqs).
struct CPUTotals {
    var machine: [String: Double] = [:]
    var runner: Double = 0
    var reapedChildren: Double = 0
    static let fields = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]

    static func now() -> CPUTotals {
        var totals = CPUTotals()
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        if let line = readSmallFile("/proc/stat")?.split(separator: "\n").first, line.hasPrefix("cpu ") {
            for (name, value) in zip(fields, line.split(separator: " ").dropFirst()) { totals.machine[name] = (Double(value) ?? 0) / tick }
        }
        totals.runner = ResourceUsage.cpuSeconds(RUSAGE_SELF)
        totals.reapedChildren = ResourceUsage.cpuSeconds(RUSAGE_CHILDREN)
        return totals
    }

    func since(_ before: CPUTotals) -> CPUTotals {
        var delta = CPUTotals()
        for (name, value) in machine { delta.machine[name] = value - (before.machine[name] ?? 0) }
        delta.runner = runner - before.runner
        delta.reapedChildren = reapedChildren - before.reapedChildren
        return delta
    }

    /// Busy CPU: everything but idle and iowait.
    var busy: Double { machine.filter { $0.key != "idle" && $0.key != "iowait" }.values.reduce(0, +) }

    var text: String {
        func s(_ name: String) -> String { String(format: "%.2f s", machine[name] ?? 0) }
        return "CPU over the scenario (/proc/stat, every CPU): \(String(format: "%.2f s", busy)) busy (user \(s("user")), system \(s("system")), "
            + "irq \(s("irq")), softirq \(s("softirq"))), idle \(s("idle"))\n"
            + String(format: "of which the lab runner (this process): %.2f s; its exited children (perf among them): %.2f s\n", runner, reapedChildren)
    }
}
