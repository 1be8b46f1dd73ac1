// step-registry-tool --output FILE STEP_FILE...: writes the Swift file declaring `StepRegistry.declaredKinds`, every
// step kind the step files declare (StepRegistryScanner). Run by the build-tool plugin StepRegistryPlugin on every
// build of LabKit; exits 1 with one `file:line:column: error: ...` line per problem, which fails the build.
import Foundation
import StepRegistryScanner

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2, arguments[0] == "--output" else {
    fail("usage: step-registry-tool --output FILE STEP_FILE... (got \(arguments.count) argument(s))")
}
let output = arguments[1]
let inputs = arguments.dropFirst(2)

var files: [(path: String, text: String)] = []
for path in inputs {
    do {
        files.append((path, try String(contentsOfFile: path, encoding: .utf8)))
    } catch {
        fail("\(path):1:1: error: step-registry-tool: reading the step file \(path): \(error.localizedDescription)")
    }
}

let generated: String
do {
    generated = try StepRegistryScanner.generate(files)
} catch {
    fail("\(error)")
}
// Rewritten only when it changes, so that an unchanged registry does not recompile LabKit.
if (try? String(contentsOfFile: output, encoding: .utf8)) != generated {
    do {
        try generated.write(toFile: output, atomically: true, encoding: .utf8)
    } catch {
        fail("step-registry-tool: writing the generated registry \(output): \(error.localizedDescription)")
    }
}
