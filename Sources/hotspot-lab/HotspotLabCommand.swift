import ArgumentParser
import HotspotSystem

@main
struct HotspotLabCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hotspot-lab",
        abstract: "The Hotspot Helper lab: the subsystem's state machine, real radios, real daemons, real portals.",
        subcommands: [
            SpecCommand.self,
            BenchCommand.self,
            CtlCommand.self,
            VMCommand.self, SelftestCommand.self,
            DoctorCommand.self, CleanCommand.self,
            UpCommand.self, DownCommand.self,
            DemoCommand.self, RunCommand.self, CertifyCommand.self, ReplayCommand.self,
            PortalCommand.self,
        ]
    )

    /// The signal service first, before anything is parsed or created (docs/RELIABILITY.md, "Signals").
    static func main() async {
        installSignalService()
        await main(nil)
    }
}
