import ArgumentParser
import Foundation
import LabKit

/// Hidden checks used by the VM tests and `bench vm`.
struct SelftestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "selftest",
        abstract: "Internal checks (used by the VM tests and bench vm).",
        shouldDisplay: false,
        subcommands: [SelftestHwsim.self, SelftestExit.self]
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
        if !stderr.isEmpty { FileHandle.standardError.write(Data((stderr + "\n").utf8)) }
        throw ExitCode(code)
    }
}
