import ArgumentParser
import Foundation
import HotspotSystem
import LabKit

/// `hotspot-lab bench vm`: how long the VM takes to give us radios. Measures, from the moment the
/// runner is called: "hwsim ready" (mac80211_hwsim loaded inside), the first association and the DHCP
/// lease (the `selftest hwsim` run), the whole run, and the overhead of the VM over the same inner
/// command on the host (the hwsim selftest when the host kernel has hwsim, else a trivial command).
public struct VMBenchmark: Sendable {
    /// The VM to boot (`--kernel`, `--timeout`, `--accel`, `--memory` ...).
    public var options: VMOptions
    /// Runs of each measurement (the median is reported).
    public var runs: Int
    /// Target for start -> hwsim ready, in seconds (TCG on a 2-core machine).
    public var target: Double

    public init(options: VMOptions, runs: Int = 3, target: Double = 8) {
        self.options = options
        self.runs = runs
        self.target = target
    }

    public func run() async throws {
        guard runs > 0 else { throw ValidationError("--runs must be at least 1") }
        var options = self.options
        options.timeout = min(options.timeout, 300)
        let kernel = try VMKernel.locate(options.kernelPath)
        let loadBefore = Self.loadAverage()

        // Cold preparation: initramfs + vmlinux extraction into a fresh cache directory.
        let coldCache = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-bench-vm-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: coldCache) }
        let coldStart = Date()
        let coldBuilder = InitramfsBuilder(kernel: kernel, cacheRoot: coldCache)
        _ = try coldBuilder.build()
        _ = kernel.extractedELF(cacheDirectory: coldBuilder.cacheDirectory)
        let initramfsCold = Date().timeIntervalSince(coldStart)

        var ready: [Double] = [], associated: [Double] = [], leased: [Double] = [], whole: [Double] = [], started: [Double] = []
        var accel = VMAccelerator.tcg
        for i in 1...runs {
            let marks = LineMarks(["selftest: hwsim ready", "selftest: associated", "selftest: leased"])
            let result = try await VMRunner(options: options).run(VMJob.currentProcess(arguments: ["selftest", "hwsim"])) { marks.feed($1) }
            guard result.exitCode == 0 else {
                throw ValidationError("bench vm: selftest hwsim failed inside the VM (exit \(result.exitCode)):\n\(marks.text)")
            }
            accel = result.accelerator
            let t = marks.times
            // hwsim ready: the host sees the init's marker (mac80211_hwsim radios=0 loaded, before the job
            // starts); without preload, the selftest's own line.
            guard let r = result.hwsimReady ?? t[0], let a = t[1], let l = t[2] else { throw ValidationError("bench vm: missing milestones in:\n\(marks.text)") }
            ready.append(r); associated.append(a); leased.append(l); whole.append(result.finished)
            started.append(result.innerStarted ?? .nan)
            print(String(format: "run %d: hwsim ready %.2f s, inner started %.2f s, associated %.2f s, leased %.2f s, VM done %.2f s", i, r, result.innerStarted ?? -1, a, l, result.finished))
        }

        // Overhead: the same inner command in the VM and on the host.
        let hostHasHwsim = HwsimSupport.check()
        let innerArgs = hostHasHwsim.usable ? ["selftest", "hwsim", "--where", "host"] : ["selftest", "exit", "--code", "0"]
        var vmTrivial: [Double] = [], hostTrivial: [Double] = []
        for _ in 1...runs {
            let start = Date()
            var trivial = options
            trivial.preloadHwsim = hostHasHwsim.usable
            let result = try await VMRunner(options: trivial).run(VMJob.currentProcess(arguments: innerArgs)) { _, _ in }
            guard result.exitCode == 0 else { throw ValidationError("bench vm: \(innerArgs.joined(separator: " ")) failed in the VM (exit \(result.exitCode))") }
            vmTrivial.append(Date().timeIntervalSince(start))
            let hostStart = Date()
            let job = VMJob.currentProcess(arguments: innerArgs)
            let proc = Process()
            proc.executableURL = URL(fileURLWithPath: job.executable)
            proc.arguments = innerArgs
            proc.standardOutput = FileHandle.nullDevice
            try proc.run()
            proc.waitUntilExit()
            hostTrivial.append(Date().timeIntervalSince(hostStart))
        }

        func med(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        func f(_ x: Double) -> String { String(format: "%.2f s", x) }
        func range(_ xs: [Double]) -> String { "\(f(med(xs))) (\(f(xs.min()!))-\(f(xs.max()!)))" }
        let inner = innerArgs.joined(separator: " ")
        print("""

            bench vm: kernel \(kernel.version), accelerator \(accel.rawValue), \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(loadBefore) before / \(Self.loadAverage()) after, \(runs) runs (median (min-max))
            | measure | time |
            |---|---|
            | initramfs build, cold cache (modules + busybox + vmlinux extraction) | \(f(initramfsCold)) |
            | start -> hwsim ready (mac80211_hwsim radios=0 loaded in the VM) | \(range(ready)) |
            | start -> inner command started (boot, 9p root, overlay, hwsim) | \(range(started)) |
            | start -> first association (hostapd + wpa_supplicant) | \(range(associated)) |
            | start -> DHCP lease (dnsmasq + udhcpc) | \(range(leased)) |
            | whole selftest hwsim run in the VM | \(range(whole)) |
            | `\(inner)` in the VM | \(range(vmTrivial)) |
            | `\(inner)` on the host | \(range(hostTrivial)) |
            | VM overhead for `\(inner)` | \(f(med(vmTrivial) - med(hostTrivial))) |
            target: hwsim ready <= \(f(target)) under \(accel.rawValue): \(med(ready) <= target ? "met" : "MISSED") (median \(f(med(ready))))
            host: \(hostHasHwsim.reason)\(hostHasHwsim.usable ? "" : " (so the overhead is measured on a trivial inner command)")
            """)
    }
}

extension VMBenchmark {
    /// The 1-minute load average (TCG timings scale with how busy the host's cores are).
    public static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").first.map(String.init) ?? "?"
    }
}

/// Records when (seconds since creation) the first line containing each marker arrived.
final class LineMarks: @unchecked Sendable {  // @unchecked: the marks and the buffer are touched only with `lock` held
    private let lock = HotspotSystem.Mutex()
    private let start = Date()
    private let markers: [String]
    private var found: [Int: Double] = [:]
    private var buffer = ""
    private(set) var all = ""

    init(_ markers: [String]) { self.markers = markers }

    func feed(_ data: Data) {
        let now = Date().timeIntervalSince(start)
        lock.lock(); defer { lock.unlock() }
        let chunk = String(decoding: data, as: UTF8.self)
        all += chunk
        buffer += chunk
        while let newline = buffer.firstIndex(of: "\n") {
            let line = buffer[..<newline]
            for (i, marker) in markers.enumerated() where found[i] == nil && line.contains(marker) { found[i] = now }
            buffer.removeSubrange(...newline)
        }
    }

    var times: [Double?] { lock.lock(); defer { lock.unlock() }; return markers.indices.map { found[$0] } }
    var text: String { lock.lock(); defer { lock.unlock() }; return all }
}
