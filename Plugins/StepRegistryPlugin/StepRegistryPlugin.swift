// Generates `StepRegistry.declaredKinds` for LabScenarioModel from its step files (Sources/LabScenarioModel/Steps/*.swift), so
// that a new scenario step kind is its file alone (and its row in docs/SCENARIOS.md); and `CertifyChecks.declared`
// for LabCertify from its certify check files (Sources/LabCertify/Checks/*.swift, one check type per file, named as
// the file), so that a new certify check is its file alone (and its row in docs/CERTIFY.md). The files are the
// command's inputs: the list is generated again when one changes; adding or removing one changes the command.
import Foundation
import PackagePlugin

@main
struct StepRegistryPlugin: BuildToolPlugin {
    /// The step files' folder and the check files' folder, the end of their paths (the target's `directoryURL` needs
    /// tools version 6.1).
    static let stepsFolder = "/Steps"
    static let checksFolder = "/Checks"

    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let module = target.sourceModule else {
            throw PluginError("StepRegistryPlugin: applying it to target \(target.name): not a source module")
        }
        func files(in folder: String) -> [URL] {
            module.sourceFiles(withSuffix: "swift")
                .map(\.url)
                .filter { $0.deletingLastPathComponent().standardizedFileURL.path.hasSuffix(folder) }
                .sorted { $0.path < $1.path }
        }
        let steps = files(in: Self.stepsFolder)
        let checks = files(in: Self.checksFolder)
        guard !steps.isEmpty || !checks.isEmpty else {
            throw PluginError("StepRegistryPlugin: reading target \(target.name): no Swift file in a folder \(Self.stepsFolder) or \(Self.checksFolder)")
        }
        var commands: [Command] = []
        if !checks.isEmpty {
            let checksOutput = context.pluginWorkDirectoryURL.appending(path: "CertifyChecks+Declared.swift")
            commands.append(.buildCommand(
                displayName: "Generating the certify check registry from \(checks.count) files of Sources/\(target.name)\(Self.checksFolder)",
                executable: try context.tool(named: "step-registry-tool").url,
                arguments: ["--certify-checks", "--output", checksOutput.path] + checks.map(\.path),
                inputFiles: checks,
                outputFiles: [checksOutput]
            ))
        }
        if !steps.isEmpty {
            let output = context.pluginWorkDirectoryURL.appending(path: "StepRegistry+Declared.swift")
            commands.append(.buildCommand(
                displayName: "Generating the step kind registry from \(steps.count) files of Sources/\(target.name)\(Self.stepsFolder)",
                executable: try context.tool(named: "step-registry-tool").url,
                arguments: ["--output", output.path] + steps.map(\.path),
                inputFiles: steps,
                outputFiles: [output]
            ))
        }
        return commands
    }
}

struct PluginError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
