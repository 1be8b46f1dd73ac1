import ArgumentParser

/// `hotspot-lab bench <area>`: speed and memory targets live here, not in timed tests.
/// Each area is its own subcommand in its own file (BenchCore.swift, BenchLab.swift, ...).
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run a benchmark and print its results (see bench/README.md for recorded runs).",
        subcommands: [
            // Add each bench area here, one line each.
            BenchCore.self,
            BenchVM.self,
            BenchProtocol.self,
            BenchLab.self,
            BenchSequence.self,
            BenchDemo.self,
            BenchReplay.self,
        ]
    )
}
