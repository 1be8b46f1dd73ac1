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

    @Flag(help: "Also create two radios, move them into two lab namespaces and delete them (needs mac80211_hwsim: run it as `hotspot-lab vm -- doctor --radio-probe` here).")
    var radioProbe = false

    func run() throws {
        var report = Doctor.run(probeKVM: !noKVMProbe)
        if radioProbe { report.checks.append(Doctor.radioProbe()) }
        print(report.text, terminator: "")
        if !report.essentialOK || (radioProbe && report.checks.last?.ok != true) { throw ExitCode(1) }
    }
}
