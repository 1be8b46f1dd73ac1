import ArgumentParser
import LabKit

/// `hotspot-lab doctor`: root, kernel features, tools (each with the apt command that fixes it) and the
/// radio mode the lab will use here.
struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check what this machine offers the lab (root, netns, veth, nftables, policy routing, mac80211_hwsim, KVM, tools)."
    )

    @Flag(help: "Skip the short qemu boot that checks whether KVM really works.")
    var noKVMProbe = false

    func run() throws {
        let report = Doctor.run(probeKVM: !noKVMProbe)
        print(report.text, terminator: "")
        if !report.essentialOK { throw ExitCode(1) }
    }
}
