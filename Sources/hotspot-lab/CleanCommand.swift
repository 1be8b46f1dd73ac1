import ArgumentParser
import LabKit

/// `hotspot-lab clean`: removes what dead lab runs left (owner pid gone). Live runs and names without a
/// dead run's prefix are never touched.
struct CleanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clean",
        abstract: "Remove namespaces, links, radios and processes left by dead lab runs (under /run/hotspot-lab)."
    )

    func run() throws {
        let report = LabCleanup.cleanDeadRuns()
        print(report.description)
        if !report.errors.isEmpty { throw ExitCode(1) }
    }
}
