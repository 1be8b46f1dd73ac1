// Generates `StepRegistry.declaredKinds` for LabKit from its step files (Sources/LabKit/Scenario/Steps/*.swift), so
// that a new scenario step kind is its file alone (and its row in docs/SCENARIOS.md); and `CertifyChecks.declared`
// from its certify check files (Sources/LabKit/Certify/Checks/*.swift, one check type per file, named as the file),
// so that a new certify check is its file alone (and its row in docs/CERTIFY.md). The step files are the
// command's inputs: the list is generated again when one changes; adding or removing one changes the command.
import Foundation
import PackagePlugin

@main
struct StepRegistryPlugin: BuildToolPlugin {
    /// The step files' folder, the end of its path (the target's `directoryURL` needs tools version 6.1).
    static let stepsFolder = "/Scenario/Steps"
    static let checksFolder = "/Certify/Checks"

    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let module = target.sourceModule else {
            throw PluginError("StepRegistryPlugin: applying it to target \(target.name): not a source module")
        }
        let steps = module.sourceFiles(withSuffix: "swift")
            .map(\.url)
            .filter { $0.deletingLastPathComponent().standardizedFileURL.path.hasSuffix(Self.stepsFolder) }
            .sorted { $0.path < $1.path }
        guard !steps.isEmpty else {
            throw PluginError("StepRegistryPlugin: reading the step files of target \(target.name): no Swift file in a folder \(Self.stepsFolder)")
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "StepRegistry+Declared.swift")
        let checks = module.sourceFiles(withSuffix: "swift")
            .map(\.url)
            .filter { $0.deletingLastPathComponent().standardizedFileURL.path.hasSuffix(Self.checksFolder) }
            .sorted { $0.path < $1.path }
        let checksOutput = context.pluginWorkDirectoryURL.appending(path: "CertifyChecks+Declared.swift")
        return [
            .buildCommand(
                displayName: "Generating the certify check registry from \(checks.count) files of Sources/\(target.name)\(Self.checksFolder)",
                executable: try context.tool(named: "step-registry-tool").url,
                arguments: ["--certify-checks", "--output", checksOutput.path] + checks.map(\.path),
                inputFiles: checks,
                outputFiles: [checksOutput]
            ),
            .buildCommand(
                displayName: "Generating the step kind registry from \(steps.count) files of Sources/\(target.name)\(Self.stepsFolder)",
                executable: try context.tool(named: "step-registry-tool").url,
                arguments: ["--output", output.path] + steps.map(\.path),
                inputFiles: steps,
                outputFiles: [output]
            ),
        ]
    }
}

struct PluginError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
