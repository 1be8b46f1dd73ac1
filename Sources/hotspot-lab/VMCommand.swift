import ArgumentParser
import Foundation
import LabKit
import LabVM
#if canImport(Glibc)
import Glibc
import HotspotSystem
#endif

extension LabPlacement: ExpressibleByArgument {}
extension VMAccelerator: ExpressibleByArgument {}

/// `hotspot-lab vm [--kernel PATH] [--timeout S] -- <hotspot-lab arguments>`: runs this same binary
/// inside a VM whose kernel has mac80211_hwsim, streams its output and exits with its exit code.
struct VMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vm",
        abstract: "Run hotspot-lab inside a small sealed VM (a distribution kernel with mac80211_hwsim).",
        discussion: """
            Boots /boot/vmlinuz-<version> under qemu (KVM when a probe shows it works, else TCG) with the host root \
            shared read-only over virtio-9p (plus a throw-away tmpfs overlay) and no network device at all, then runs \
            `hotspot-lab <arguments>` inside with the same working directory and environment, streams its output and \
            exits with its exit code. mac80211_hwsim is loaded with radios=0 before it starts. See docs/VM.md.

            Example: hotspot-lab vm -- selftest hwsim
            """
    )

    @OptionGroup var vm: VMOptionsGroup

    @Argument(parsing: .postTerminator, help: "The hotspot-lab arguments to run inside the VM (after --).")
    var arguments: [String] = []

    func run() async throws {
        var args = arguments
        if args.first == "--" { args.removeFirst() }
        guard !args.isEmpty else {
            throw ValidationError("give the hotspot-lab arguments to run inside the VM after --, e.g. hotspot-lab vm -- selftest hwsim")
        }
        let code = try await VMRelay.run(arguments: args, options: try vm.options())
        throw ExitCode(code)
    }
}

/// The VM options shared by `vm`, `bench vm` and `--where vm`.
struct VMOptionsGroup: ParsableArguments {
    @Option(help: "Kernel image to boot (/boot/vmlinuz-<version>; its /lib/modules/<version> is used). Default: the newest one with mac80211_hwsim.")
    var kernel: String?

    @Option(help: "Seconds before the VM is stopped.")
    var timeout: Double = 900

    @Option(help: "auto (KVM if a short probe boot works, else TCG), kvm or tcg. Env: HOTSPOT_LAB_VM_ACCEL.")
    var accel: VMAccelerator?

    @Option(help: "VM memory in MiB.")
    var memory: Int = 1024

    @Flag(help: "Do not load mac80211_hwsim radios=0 before the command starts (e.g. for selftest hwsim --radios modprobe).")
    var noHwsimPreload = false

    @Option(help: "Host folder to use as the VM's writable results share ($HOTSPOT_LAB_VM_RESULTS inside, /run/hotspot-lab-vm); kept after the run.")
    var results: String?

    func options() throws -> VMOptions {
        var dir: String?
        if let results {
            dir = URL(fileURLWithPath: results).standardizedFileURL.path
            do {
                try FileManager.default.createDirectory(atPath: dir!, withIntermediateDirectories: true)
            } catch {
                throw ValidationError("--results \(results): cannot create the folder: \(error.localizedDescription)")
            }
        }
        return VMOptions(kernelPath: kernel, timeout: timeout, memoryMB: memory, accelerator: accel, handleInterrupts: true,
                         resultsDirectory: dir, preloadHwsim: !noHwsimPreload)
    }
}

/// `--where host|vm|auto` for every lab command. Call `relayIfNeeded()` first thing in `run()`:
/// it returns when the command should run here, or runs the same command line in the VM (saying so
/// in one line on stderr) and exits with the inner exit code.
struct Placement: ParsableArguments {
    @Option(name: .customLong("where"), help: "host (this kernel), vm (the hotspot-lab VM) or auto (host when it has mac80211_hwsim, else vm).")
    var location: LabPlacement = .auto

    /// Where this command will run and why (for `doctor`).
    func resolve() -> (placement: LabPlacement, reason: String) {
        HwsimSupport.resolve(location)
    }

    /// `inputs`: files an argument names that the VM must read (a trace under /tmp, which is fresh in the VM):
    /// copied into the results share and the argument rewritten to the share's path inside.
    /// `logs`: called with the host folder of the VM run's logs and results share, before the exit code is thrown.
    /// `arguments`: the hotspot-lab arguments to run in the VM (default: this command line's).
    /// `logsRoot`: the command's `--logs` folder, if given: the VM run's logs go to a folder under it on the host (the
    /// VM's own file system is thrown away), and the command inside logs there instead of at the path it was given.
    func relayIfNeeded(vm: VMOptions = VMOptions(handleInterrupts: true), inputs: [String] = [], arguments replaced: [String]? = nil,
                       logsRoot: String? = nil, logs: ((String) -> Void)? = nil) async throws {
        let (placement, reason) = resolve()
        guard placement == .vm else {
            VMLogs.adoptInsideVM()
            return
        }
        StandardStreams.error("hotspot-lab: running in the VM (\(reason)); --where host to force the host kernel\n")
        // The VM's own /tmp is gone when it stops: its labs write their logs to a host folder, at the same path.
        var options = vm
        // The lab's kernel modules load in the background while hotspot-lab starts inside (about 1 s under TCG).
        options.preloadModules = LabKernelModules.modules
        var environment: [String: String] = [:]
        if options.resultsDirectory == nil, let folder = VMLogs.hostFolder(root: logsRoot) {
            options.resultsDirectory = folder
            environment[VMLogs.environmentKey] = folder
        }
        // The boot's lab CA, made here in the results share: milliseconds on the host, where the first lab inside
        // would spend 0.3-0.5 s of its bring-up on `openssl req` under TCG. Without it the VM makes its own.
        if let folder = options.resultsDirectory {
            do { try PortalTLS.prepareBootCA(share: folder, openssl: try RunningTopology.findTool("openssl")) } catch {
                StandardStreams.error("hotspot-lab: the lab CA is made inside the VM instead (\(error))\n")
            }
        }
        // Inside the VM `--where` resolves to host (HOTSPOT_LAB_IN_VM=1), so the arguments pass unchanged
        // (but for input files that the VM would not see).
        var arguments = replaced ?? Array(CommandLine.arguments.dropFirst())
        // Inside, the labs log under the share's folder ($HOTSPOT_LAB_LOGS, `VMLogs.adoptInsideVM`), which an explicit
        // `--logs` would override with a path that exists only in the VM.
        if environment[VMLogs.environmentKey] != nil { arguments = VMLogMirror.withoutLogsOption(arguments) }
        if let folder = options.resultsDirectory, !inputs.isEmpty {
            try FileManager.default.createDirectory(atPath: folder + "/inputs", withIntermediateDirectories: true)
            for (number, input) in inputs.enumerated() {
                let name = "\(number)-" + (input as NSString).lastPathComponent
                try? FileManager.default.removeItem(atPath: folder + "/inputs/" + name)
                try FileManager.default.copyItem(atPath: input, toPath: folder + "/inputs/" + name)
                arguments = arguments.map { $0 == input ? VMInit.resultsMount + "/inputs/" + name : $0 }
            }
        }
        let code = try await VMRelay.run(arguments: arguments, options: options, environment: environment)
        if let folder = environment[VMLogs.environmentKey] {
            for report in ReportFile.deliver(from: folder) { StandardStreams.error("hotspot-lab: wrote \(report)\n") }
            StandardStreams.error("hotspot-lab: the VM run's logs are in \(folder)\n")
            logs?(folder)
        }
        throw ExitCode(code)
    }
}

/// Logs of labs that run in the VM: the VM's results share is a host folder under the logs root
/// (`$HOTSPOT_LAB_LOGS` or /tmp/hotspot-lab, `vm-<time>-<pid>`). Inside, labs log to a local folder at that
/// same path (sockets cannot live on a 9p share) and `RunningTopology.down()` copies the files to the share
/// (`VMLogMirror`), so every log path printed inside is valid on the host afterwards.
enum VMLogs {
    static let environmentKey = VMLogMirror.environmentKey

    /// `root`: the command's `--logs` folder; nil for `$HOTSPOT_LAB_LOGS` or /tmp/hotspot-lab.
    static func hostFolder(root given: String? = nil) -> String? {
        let root = given.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            ?? ProcessInfo.processInfo.environment["HOTSPOT_LAB_LOGS"] ?? "/tmp/hotspot-lab"
        var t = time(nil)
        var parts = tm()
        localtime_r(&t, &parts)
        let stamp = String(format: "%04d%02d%02d-%02d%02d%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec)
        let folder = "\(root)/vm-\(stamp)-\(getpid())"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            return folder
        } catch {
            StandardStreams.error("hotspot-lab: cannot create \(folder) for the VM's logs (\(error)); they stay inside the VM\n")
            return nil
        }
    }

    /// Inside the VM: labs log under the host folder's path (copied to the share by `RunningTopology.down()`).
    static func adoptInsideVM() {
        guard InVM.isActive, let folder = ProcessInfo.processInfo.environment[environmentKey], InVM.resultsDirectory != nil else { return }
        setenv("HOTSPOT_LAB_LOGS", folder, 1)
    }
}

/// Runs this binary with `arguments` in the VM, streaming its output to ours.
enum VMRelay {
    static func run(arguments: [String], options: VMOptions, environment: [String: String] = [:]) async throws -> Int32 {
        let runner = VMRunner(options: options)
        var job = VMJob.currentProcess(arguments: arguments)
        job.environment.merge(environment) { _, new in new }
        job.environment["HOTSPOT_LAB_HOST_CWD"] = FileManager.default.currentDirectoryPath
        do {
            let result = try await runner.run(job) { stream, data in
                data.withUnsafeBytes { buffer in
                    var offset = 0
                    while offset < buffer.count {
                        let n = write(stream == .stdout ? 1 : 2, buffer.baseAddress! + offset, buffer.count - offset)
                        if n <= 0 { if errno == EINTR { continue }; break }
                        offset += n
                    }
                }
            }
            return result.exitCode
        } catch VMError.interrupted {
            // 128 + the signal, as on the host: 130 for SIGINT, 143 for SIGTERM (docs/RELIABILITY.md).
            let signal = VMRunner.interruptSignal ?? SIGINT
            StandardStreams.error("hotspot-lab vm: interrupted, VM stopped (\(signalName(signal)))\n")
            return 128 + signal
        }
    }
}
