import Foundation
import HotspotSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What to run inside the VM: a program from the host's file system (seen read-only over 9p, with a
/// throw-away writable overlay), its arguments, working directory and environment.
public struct VMJob: Sendable, Equatable {
    public var executable: String
    public var arguments: [String]
    public var workingDirectory: String
    public var environment: [String: String]

    public init(executable: String, arguments: [String], workingDirectory: String = "/", environment: [String: String] = [:]) {
        self.executable = executable
        self.arguments = arguments
        self.workingDirectory = workingDirectory
        self.environment = environment
    }

    /// This process's own binary (`/proc/self/exe`) with `arguments`, the current directory and the
    /// environment variables that matter (`VMJob.passedEnvironment`).
    public static func currentProcess(arguments: [String]) -> VMJob {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return VMJob(
            executable: exe, arguments: arguments,
            workingDirectory: FileManager.default.currentDirectoryPath,
            environment: passedEnvironment()
        )
    }

    /// The variables passed into the VM: PATH, HOME, USER, LOGNAME, TERM, TZ, LANG, LC_*, NO_COLOR, CI,
    /// GITHUB_ACTIONS, SWIFT_BACKTRACE and every HOTSPOT_LAB_*. The runner adds HOTSPOT_LAB_IN_VM=1 and
    /// HOTSPOT_LAB_VM_RESULTS.
    public static func passedEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        let exact: Set<String> = ["PATH", "HOME", "USER", "LOGNAME", "TERM", "TZ", "LANG", "NO_COLOR", "CI", "GITHUB_ACTIONS", "SWIFT_BACKTRACE"]
        return environment.filter { key, _ in
            exact.contains(key) || key.hasPrefix("LC_") || key.hasPrefix("HOTSPOT_LAB_")
        }
    }

    /// The `/bin/sh` script the VM's init runs in the chroot.
    public func script(resultsMount: String = VMInit.resultsMount) -> String {
        var env = environment
        env["HOTSPOT_LAB_IN_VM"] = "1"
        env["HOTSPOT_LAB_VM_RESULTS"] = resultsMount
        if env["PATH"] == nil { env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" }
        let assignments = env.keys.sorted().map { Self.quote("\($0)=\(env[$0]!)") }
        let wd = Self.quote(workingDirectory)
        return """
            cd \(wd) 2>/dev/null || { echo "hotspot-lab vm: working directory "\(wd)" is not visible in the VM (/tmp and /run are fresh tmpfs there); using /" >&2; cd /; }
            exec /usr/bin/env -i \(assignments.joined(separator: " ")) \(([executable] + arguments).map(Self.quote).joined(separator: " "))

            """
    }

    /// Single-quotes `text` for /bin/sh.
    public static func quote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// Which qemu accelerator to use.
public enum VMAccelerator: String, Sendable, CaseIterable {
    /// KVM when a short probe boot succeeds, else TCG.
    case auto
    case kvm
    case tcg
}

/// How to boot.
public struct VMOptions: Sendable {
    /// nil: the newest `/boot/vmlinuz-*` with mac80211_hwsim.
    public var kernelPath: String?
    /// Seconds from qemu start until the inner command must have finished.
    public var timeout: Double
    /// Seconds from qemu start until the inner command must have started.
    public var bootTimeout: Double
    public var memoryMB: Int
    public var cpus: Int
    public var accelerator: VMAccelerator
    /// Stop the VM on SIGINT/SIGTERM (the CLI); tests leave it off.
    public var handleInterrupts: Bool
    /// Where the initramfs, the extracted kernel and the KVM probe result are cached.
    public var cacheRoot: String
    /// A host directory to use as the writable results share (`HOTSPOT_LAB_VM_RESULTS` inside), kept
    /// after the run so the caller can read what the inner command left there. nil: a temporary one.
    public var resultsDirectory: String?
    /// Load `mac80211_hwsim radios=0` before the job starts (so `Netlink.Hwsim` works at once inside).
    public var preloadHwsim: Bool
    /// Kernel modules to load in the background while the job starts (a job that builds labs: `LabKernelModules`);
    /// the job waits for `VMInit.modulesLoading` to go away before it relies on them. Empty: none.
    public var preloadModules: [String] = []

    public init(
        kernelPath: String? = nil, timeout: Double = 900, bootTimeout: Double = 60,
        memoryMB: Int = 1024, cpus: Int = 2, accelerator: VMAccelerator? = nil,
        handleInterrupts: Bool = false, cacheRoot: String = VMCache.root(), resultsDirectory: String? = nil,
        preloadHwsim: Bool = true
    ) {
        self.preloadHwsim = preloadHwsim
        self.resultsDirectory = resultsDirectory
        self.kernelPath = kernelPath
        self.timeout = timeout
        self.bootTimeout = bootTimeout
        self.memoryMB = memoryMB
        self.cpus = cpus
        self.accelerator = accelerator ?? ProcessInfo.processInfo.environment["HOTSPOT_LAB_VM_ACCEL"].flatMap(VMAccelerator.init(rawValue:)) ?? .auto
        self.handleInterrupts = handleInterrupts
        self.cacheRoot = cacheRoot
    }
}

/// Which stream a chunk of the inner command's output came from.
public enum VMOutputStream: Sendable { case stdout, stderr }

/// How a VM run went.
public struct VMRunResult: Sendable {
    /// The inner command's exit status (128+N when killed by signal N).
    public var exitCode: Int32
    /// `kvm` or `tcg`.
    public var accelerator: VMAccelerator
    public var kernelVersion: String
    /// Seconds since `run` was called: initramfs ready, qemu started, inner command started (seen by
    /// the host), qemu ended.
    public var prepared: Double
    public var qemuStarted: Double
    public var innerStarted: Double?
    /// When the host saw mac80211_hwsim loaded inside (with `preloadHwsim`).
    public var hwsimReady: Double?
    public var finished: Double
    /// Guest uptime when the inner command started and ended (from the guest's own clock).
    public var guestStartUptime: Double?
    public var guestEndUptime: Double?
    /// Guest uptime when mac80211_hwsim was loaded (with `preloadHwsim`).
    public var guestHwsimUptime: Double?
    public var initramfsCached: Bool
    /// The last lines of the kernel console.
    public var consoleTail: String
}

/// Boots the distribution kernel under qemu with the host root shared read-only over virtio-9p
/// (plus a tmpfs overlay), no network device (`-nic none`), and runs one `VMJob` inside. The inner
/// stdout/stderr arrive over two virtio serial ports (the kernel console stays on ttyS0, in a log),
/// the exit code over a second, writable 9p share.
public final class VMRunner: @unchecked Sendable {  // @unchecked: lets only (its options); a run keeps its state in locals
    public let options: VMOptions

    public init(options: VMOptions = VMOptions()) {
        self.options = options
    }

    /// `qemu-system-x86_64` from PATH.
    public static func qemuPath() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") + ["/usr/bin"] {
            let candidate = "\(dir)/qemu-system-x86_64"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw VMError.toolMissing(tool: "qemu-system-x86_64", package: "qemu-system-x86")
    }

    /// Runs `job` in a fresh VM; `output` receives the inner command's stdout/stderr as it arrives
    /// (on reader threads). Blocks until the VM is gone.
    public func run(_ job: VMJob, output: @escaping @Sendable (VMOutputStream, Data) -> Void) throws -> VMRunResult {
        let t0 = Date()
        func elapsed() -> Double { Date().timeIntervalSince(t0) }
        let qemu = try Self.qemuPath()
        let kernel = try VMKernel.locate(options.kernelPath)
        let builder = InitramfsBuilder(kernel: kernel, cacheRoot: options.cacheRoot)
        let initramfs = try builder.build()
        let bootImage = kernel.extractedELF(cacheDirectory: builder.cacheDirectory) ?? kernel.imagePath
        let accel = try resolveAccelerator(qemu: qemu, kernel: bootImage, initramfs: initramfs.path, cacheDirectory: builder.cacheDirectory)
        let prepared = elapsed()

        var template = Array("/tmp/hotspot-lab-vm.XXXXXX".utf8CString)
        guard let dirPointer = mkdtemp(&template) else { throw VMError.errno("create run directory", "/tmp/hotspot-lab-vm.XXXXXX") }
        let runDir = String(cString: dirPointer)
        try? "\(getpid())\n".write(toFile: "\(runDir)/owner", atomically: false, encoding: .utf8)
        Self.sweepStaleRunDirectories(except: runDir)
        let results = options.resultsDirectory ?? "\(runDir)/results"
        for stale in ["job.sh", "started", "finished", "exit-code", "exit-code.tmp", "hwsim-ready"] { unlink("\(results)/\(stale)") }
        let console = "\(runDir)/console.log"
        defer { try? FileManager.default.removeItem(atPath: runDir) }
        try VMCache.makeDirectory(results)
        guard FileManager.default.createFile(atPath: "\(results)/job.sh", contents: Data(job.script().utf8)) else {
            throw VMError.errno("write", "\(results)/job.sh")
        }

        let args = Self.qemuArguments(
            qemu: qemu, kernel: bootImage, initramfs: initramfs.path, accelerator: accel,
            memoryMB: options.memoryMB, cpus: options.cpus, console: console, results: results, probe: false,
            preloadHwsim: options.preloadHwsim, preloadModules: options.preloadModules
        )
        var outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw VMError.errno("create pipe for", "qemu") }
        let interrupts = options.handleInterrupts ? try VMInterruptWatcher() : nil
        defer { interrupts?.cancel() }
        let child: VMChild
        do {
            child = try VMChild.spawn(Self.dieWithParent(args), stdout: outPipe[1], stderr: errPipe[1])
        } catch {
            [outPipe[0], outPipe[1], errPipe[0], errPipe[1]].forEach { close($0) }
            throw error
        }
        close(outPipe[1]); close(errPipe[1])
        let qemuStarted = elapsed()
        let outReader = VMPipeReader(fd: outPipe[0]) { output(.stdout, $0) }
        let errReader = VMPipeReader(fd: errPipe[0]) { output(.stderr, $0) }

        var innerStarted: Double?
        var hwsimReady: Double?
        var status: Int32?
        var failure: VMError?
        while status == nil {
            if let s = child.poll() { status = s; break }
            let now = elapsed() - qemuStarted
            if options.preloadHwsim, hwsimReady == nil, FileManager.default.fileExists(atPath: "\(results)/hwsim-ready") {
                hwsimReady = elapsed()
            }
            if innerStarted == nil, FileManager.default.fileExists(atPath: "\(results)/started") {
                innerStarted = elapsed()
            }
            if interrupts?.fired == true {
                failure = .interrupted
            } else if innerStarted == nil && now > options.bootTimeout {
                failure = .bootTimeout(seconds: options.bootTimeout, consoleTail: "")
            } else if now > options.timeout {
                failure = .runTimeout(seconds: options.timeout, consoleTail: "")
            }
            if failure != nil {
                status = child.stop()
                break
            }
            usleep(20_000)
        }
        if interrupts?.fired == true { failure = .interrupted }  // Ctrl-C also reaches qemu itself
        outReader.finish()
        errReader.finish()
        let finished = elapsed()
        let tail = Self.consoleTail(console)
        switch failure {
        case .bootTimeout(let s, _): throw VMError.bootTimeout(seconds: s, consoleTail: tail)
        case .runTimeout(let s, _): throw VMError.runTimeout(seconds: s, consoleTail: tail)
        case .some(let other): throw other
        case .none: break
        }
        guard let codeText = try? String(contentsOfFile: "\(results)/exit-code", encoding: .utf8),
              let code = Int32(codeText.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw VMError.vmDied(qemuStatus: VMChild.describe(status: status ?? 0), consoleTail: tail)
        }
        func uptime(_ name: String) -> Double? {
            (try? String(contentsOfFile: "\(results)/\(name)", encoding: .utf8)).flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        return VMRunResult(
            exitCode: code, accelerator: accel, kernelVersion: kernel.version,
            prepared: prepared, qemuStarted: qemuStarted, innerStarted: innerStarted, hwsimReady: hwsimReady, finished: finished,
            guestStartUptime: uptime("started"), guestEndUptime: uptime("finished"), guestHwsimUptime: uptime("hwsim-ready"),
            initramfsCached: initramfs.cached, consoleTail: tail
        )
    }

    /// `run` on a dedicated thread, for async callers (keeps the cooperative pool free).
    public func run(_ job: VMJob, output: @escaping @Sendable (VMOutputStream, Data) -> Void) async throws -> VMRunResult {
        try await SystemThread.runAsync("hotspot-lab vm") { try self.run(job, output: output) }
    }

    /// The qemu command line (no network device at all: `-nic none`).
    public static func qemuArguments(
        qemu: String, kernel: String, initramfs: String, accelerator: VMAccelerator,
        memoryMB: Int, cpus: Int, console: String, results: String?, probe: Bool, preloadHwsim: Bool = false,
        preloadModules: [String] = []
    ) -> [String] {
        // Module names are [A-Za-z0-9_-]: anything else is dropped rather than let into the kernel's command line.
        let modules = preloadModules.filter { !$0.isEmpty && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") } }
        var args = [qemu, "-name", "hotspot-lab-vm"]
        // Under TCG the guest kernel finds no constant TSC flag, marks the TSC unstable ("TSCs unsynchronized") and
        // keeps time with the HPET: every clock read a system call and an MMIO exit to qemu. TCG's TSC is one host
        // clock for every vCPU, so the guest is told to trust it (the vDSO then reads time without entering the kernel).
        var clock = ""
        switch accelerator {
        case .kvm: args += ["-accel", "kvm", "-cpu", "host"]
        case .tcg, .auto:
            args += ["-accel", "tcg,thread=multi", "-cpu", "max"]
            clock = " tsc=reliable clocksource=tsc"
        }
        args += [
            "-m", "\(memoryMB)", "-smp", "\(cpus)",
            "-display", "none", "-monitor", "none", "-no-reboot", "-nic", "none",
            "-kernel", kernel, "-initrd", initramfs,
            "-append", "console=ttyS0 quiet panic=-1 mitigations=off nokaslr i8042.noaux i8042.nokbd i8042.nopnp random.trust_cpu=on" + clock + (probe ? " hsl.probe" : "") + (preloadHwsim ? " hsl.hwsim" : "")
                + (modules.isEmpty ? "" : " hsl.modules=" + modules.joined(separator: ",")),
            "-chardev", "file,id=con,path=\(console)", "-serial", "chardev:con",
        ]
        if !probe {
            args += [
                "-fsdev", "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap",
                "-device", "virtio-9p-pci,fsdev=root,mount_tag=host",
                "-device", "virtio-serial-pci",
                "-chardev", "file,id=out,path=/proc/self/fd/1", "-device", "virtserialport,chardev=out,name=out",
                "-chardev", "file,id=err,path=/proc/self/fd/2", "-device", "virtserialport,chardev=err,name=err",
            ]
            if let results {
                args += [
                    "-fsdev", "local,id=results,path=\(results),security_model=none",
                    "-device", "virtio-9p-pci,fsdev=results,mount_tag=results",
                ]
            }
        }
        return args
    }

    /// Removes `/tmp/hotspot-lab-vm.*` folders left by runs whose process died without cleaning up
    /// (SIGKILL): their `owner` pid no longer exists. Folders of live runs are left alone.
    static func sweepStaleRunDirectories(except current: String, root: String = "/tmp") {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        for name in names where name.hasPrefix("hotspot-lab-vm.") && "\(root)/\(name)" != current {
            let dir = "\(root)/\(name)"
            guard let text = try? String(contentsOfFile: "\(dir)/owner", encoding: .utf8),
                  let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0 else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { try? FileManager.default.removeItem(atPath: dir) }
        }
    }

    /// Prefixes `setpriv --pdeathsig KILL` (util-linux, exec's in place: same PID) when available, so
    /// qemu dies with the thread that started it even if this process is SIGKILLed.
    static func dieWithParent(_ argv: [String]) -> [String] {
        for dir in ["/usr/bin", "/bin"] where FileManager.default.isExecutableFile(atPath: "\(dir)/setpriv") {
            return ["\(dir)/setpriv", "--pdeathsig", "KILL", "--"] + argv
        }
        return argv
    }

    static func consoleTail(_ path: String, lines: Int = 40) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { return "(no console output)" }
        let text = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\r", with: "")
        let all = text.split(separator: "\n", omittingEmptySubsequences: false)
        let tail = all.suffix(lines + 1).joined(separator: "\n").trimmingCharacters(in: .newlines)
        return tail.isEmpty ? "(console empty)" : tail
    }

    /// KVM when requested or when the probe boot (cached per host kernel and qemu binary) shows it works.
    func resolveAccelerator(qemu: String, kernel: String, initramfs: String, cacheDirectory: String) throws -> VMAccelerator {
        switch options.accelerator {
        case .kvm, .tcg: return options.accelerator
        case .auto: break
        }
        guard access("/dev/kvm", R_OK | W_OK) == 0 else { return .tcg }
        var uts = utsname()
        uname(&uts)
        let release = withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let attrs = try? FileManager.default.attributesOfItem(atPath: qemu)
        let stamp = "\(release) \(qemu) \((attrs?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0) \(kernel)"
        let cacheFile = "\(cacheDirectory)/accel-probe"
        if let cached = try? String(contentsOfFile: cacheFile, encoding: .utf8) {
            let parts = cached.split(separator: "\n", maxSplits: 1).map(String.init)
            if parts.count == 2, parts[1] == stamp, let accel = VMAccelerator(rawValue: parts[0]) { return accel }
        }
        let accel: VMAccelerator = Self.probeKVM(qemu: qemu, kernel: kernel, initramfs: initramfs) ? .kvm : .tcg
        try? "\(accel.rawValue)\n\(stamp)".write(toFile: cacheFile, atomically: true, encoding: .utf8)
        return accel
    }

    /// Boots with `-accel kvm -cpu host` and `hsl.probe` (init prints PROBE-OK and powers off) with a
    /// short timeout. On these machines `-cpu host` aborts (`failed to set MSR 0x10a`) or hangs.
    public static func probeKVM(qemu: String, kernel: String, initramfs: String, timeout: Double = 6) -> Bool {
        var template = Array("/tmp/hotspot-lab-kvm-probe.XXXXXX".utf8CString)
        guard let dirPointer = mkdtemp(&template) else { return false }
        let dir = String(cString: dirPointer)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let console = "\(dir)/console.log"
        let args = qemuArguments(qemu: qemu, kernel: kernel, initramfs: initramfs, accelerator: .kvm, memoryMB: 256, cpus: 1, console: console, results: nil, probe: true)
        let null = open("/dev/null", O_WRONLY)
        defer { close(null) }
        guard let child = try? VMChild.spawn(args, stdout: null, stderr: null) else { return false }
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32?
        while Date() < deadline {
            if let s = child.poll() { status = s; break }
            usleep(20_000)
        }
        if status == nil { child.stop(grace: 1) }
        let text = (try? String(contentsOfFile: console, encoding: .utf8)) ?? ""
        return status == 0 && text.contains("hotspot-lab-vm: PROBE-OK")
    }
}

/// Turns SIGINT, SIGTERM and SIGHUP into a flag while a VM runs (the run loop then stops qemu and cleans up):
/// it takes over shutdown from the signal service (`SignalService.onStop`) for the run. SIGPIPE (the reader
/// of our output gone) does not stop the VM; the writes that fail say so.
final class VMInterruptWatcher: Sendable {
    private let registration: SignalService.Registration
    /// The first signal that stopped a VM run in this process (`VMRunner.interruptSignal`).
    static let firstSignal = Atomic<Int32>(0)

    init() throws {
        try SignalService.install()
        registration = SignalService.onStop { request in
            guard request.cause == .received, request.signal != SIGPIPE else { return }
            _ = VMInterruptWatcher.firstSignal.compareExchange(expected: 0, desired: request.signal, ordering: .acquiringAndReleasing)
        }
    }

    var fired: Bool { VMInterruptWatcher.firstSignal.load(ordering: .acquiring) != 0 }

    func cancel() { registration.cancel() }
}

extension VMRunner {
    /// The signal (SIGINT, SIGTERM or SIGHUP) that stopped a VM run of this process (`VMError.interrupted`), nil if none.
    public static var interruptSignal: Int32? {
        let sig = VMInterruptWatcher.firstSignal.load(ordering: .acquiring)
        return sig == 0 ? nil : sig
    }
}
