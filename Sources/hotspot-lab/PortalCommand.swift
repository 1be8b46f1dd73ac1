import ArgumentParser
import Foundation
import LabKit
import HotspotSystem

/// `hotspot-lab portal import FILE.har`: a real venue's portal, from a browser's HAR capture, as a recorded portal
/// definition the `recorded` kind serves (docs/FIELD-FAILURES.md).
struct PortalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "portal",
        abstract: "Bring a real venue's portal into the lab.",
        subcommands: [PortalImportCommand.self]
    )
}

struct PortalImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Turn a HAR 1.2 capture of a portal sign-in into a recorded portal (personal values listed and replaced).")

    @Argument(help: "The HAR capture (Safari, Chrome, Firefox, Charles, mitmproxy: HAR 1.2).")
    var har: String

    @Option(help: "Output folder for portal.json and topology.yaml (default portals-local/NAME, kept out of git).")
    var out: String?

    @Option(name: .customLong("keep"), help: "Keep this listed value in the definition on purpose (repeatable).")
    var keep: [String] = []

    func run() throws {
        do {
            let output = try PortalImport.run(har: har, out: out, keep: Set(keep))
            print(output.report, terminator: "")
        } catch {
            StandardStreams.error("hotspot-lab portal import: \(error)\n")
            throw ExitCode(2)
        }
    }
}
