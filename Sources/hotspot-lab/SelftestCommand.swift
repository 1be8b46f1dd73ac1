import ArgumentParser
import Foundation
import HotspotSystem
import LabKit

/// Hidden checks used by the VM tests and `bench vm`.
struct SelftestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "selftest",
        abstract: "Internal checks (used by the VM tests and bench vm).",
        shouldDisplay: false,
        subcommands: [SelftestHwsim.self, SelftestExit.self, SelftestStarts.self, SelftestStrayPipe.self]
    )
}

/// `hotspot-lab selftest hwsim [--where ...]`: two hwsim radios, hostapd + dnsmasq, wpa_supplicant +
/// udhcpc, association, lease and ping (see `HwsimSelftest`). Runs in the VM unless the host has hwsim.
struct SelftestHwsim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "hwsim", abstract: "Associate and get a DHCP lease between two mac80211_hwsim radios.")

    @OptionGroup var placement: Placement

    @Option(help: "netlink (our NEW_RADIO + SET_WIPHY_NETNS, module loaded with radios=0) or modprobe (radios=2 + iw).")
    var radios: String = "netlink"

    @Option(help: "Capture the air (hwsim0) into this pcap file. In the VM, put it under $HOTSPOT_LAB_VM_RESULTS and use hotspot-lab vm --results DIR to keep it.")
    var pcap: String?

    func run() async throws {
        try await placement.relayIfNeeded()
        let provider: any HwsimRadioProvider
        switch radios {
        case "netlink": provider = NetlinkRadioProvider()
        case "modprobe": provider = ModprobeRadioProvider(count: 2)
        default: throw ValidationError("--radios: expected netlink or modprobe, got \(radios)")
        }
        var selftest = HwsimSelftest(provider: provider)
        selftest.pcapPath = pcap
        let report = try selftest.run { line in
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
        print("selftest: ok (radios via \(report.providerName), lease \(report.leaseAddress))")
    }
}

/// `hotspot-lab selftest exit --code N [--stdout TEXT] [--stderr TEXT]`: prints and exits with N (checks
/// that output and exit codes cross the VM boundary intact).
struct SelftestExit: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "exit", abstract: "Print the given text and exit with the given code.")

    @Option var code: Int32 = 0
    @Option var stdout: String = ""
    @Option var stderr: String = ""

    func run() throws {
        if !stdout.isEmpty { FileHandle.standardOutput.write(Data((stdout + "\n").utf8)) }
        if !stderr.isEmpty { StandardStreams.error(stderr + "\n") }
        throw ExitCode(code)
    }
}

/// `hotspot-lab selftest stray-pipe [--after-output-closes] [--then-wait]`: with shutdown taken over as the lab
/// commands take it (`LabSignals`), one write to a socket whose peer is closed, then one line: the write's error, the
/// stop request (none expected) and the SIGPIPEs dropped as not the output's. `--after-output-closes` waits for the
/// reader of standard output to go first (then the SIGPIPE is a stop: exit 141, "SIGPIPE (output closed)");
/// `--then-wait` waits for a stop signal after the line (`kill -PIPE` from another process is one). Used by
/// `StrayPipeTests`.
struct SelftestStrayPipe: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stray-pipe", abstract: "Write to a closed socket: a SIGPIPE that is not the output's.")

    @Flag(help: "Wait until the reader of standard output is gone before the write.")
    var afterOutputCloses = false

    @Flag(help: "After the line, wait for a stop signal.")
    var thenWait = false

    func run() throws {
        LabSignals.install(command: "selftest stray-pipe")
        if afterOutputCloses {
            let deadline = ContinuousClock.now + .seconds(300)
            while !SignalService.outputGone() {
                guard ContinuousClock.now < deadline else { throw ValidationError("--after-output-closes: standard output's reader still there after 300 s") }
                usleep(1000)
            }
        }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw SystemError("create a socket pair for", "selftest stray-pipe", errno: Errno.current)
        }
        close(pair[1])
        let byte: [UInt8] = [0x21]
        let written = write(pair[0], byte, 1)
        let code = Errno.current
        close(pair[0])
        // A stop was requested: its handler tears down and ends the process with 128 + the signal.
        while SignalService.stopRequest != nil { sleep(60) }
        labSay("selftest: write to a socket whose peer is closed: " + (written < 0 ? Errno.text(code) : "\(written) byte written")
               + "; stop request: none; SIGPIPEs dropped as not the output's: \(SignalService.strayPipeSignals.load(ordering: .relaxed))")
        while thenWait { sleep(60) }
    }
}

/// `hotspot-lab vm -- selftest starts [--runs N] "CMD ARGS"...`: the wall and CPU time (the child's, from
/// RUSAGE_CHILDREN) of running each command to its end, median of N runs. Under the VM's emulation this is what a
/// process start costs a lab (bench/README.md "Process starts in the VM"). Words are split on spaces, no shell.
struct SelftestStarts: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "starts", abstract: "Time each command's run (median wall and CPU time).")
    @Option(help: "Runs of each command (the median is printed).") var runs: Int = 3
    @Argument(help: "Commands, each one argument: \"/path/to/program --flag\".") var commands: [String]

    func validate() throws {
        guard runs > 0 else { throw ValidationError("--runs: expected a positive number, got \(runs)") }
        guard !commands.isEmpty else { throw ValidationError("give at least one command to time") }
    }

    func run() throws {
        for command in commands {
            let words = command.split(separator: " ").map(String.init)
            guard let program = words.first else { throw ValidationError("an empty command") }
            var walls: [Double] = []
            var cpus: [Double] = []
            for _ in 0..<runs {
                let before = ResourceUsage.cpuSeconds(RUSAGE_CHILDREN)
                let start = Date()
                let p = Process()
                p.executableURL = URL(fileURLWithPath: program)
                p.arguments = Array(words.dropFirst())
                p.standardOutput = FileHandle.nullDevice
                p.standardError = FileHandle.nullDevice
                do { try p.run() } catch { throw ValidationError("start \(program): \(error)") }
                p.waitUntilExit()
                walls.append(Date().timeIntervalSince(start))
                cpus.append(ResourceUsage.cpuSeconds(RUSAGE_CHILDREN) - before)
            }
            print(String(format: "%-60@ wall %.3f s  cpu %.3f s (median of %d)", command as NSString, walls.sorted()[runs / 2], cpus.sorted()[runs / 2], runs))
        }
    }
}
