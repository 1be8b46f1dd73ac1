import Foundation
import Testing
@testable import LabKit

/// Where `--junit`, `--json` and `--html` may write: never over a folder or an existing YAML file (`run --json` takes
/// the next argument as its path: `run --json s.yaml t.yaml` once wrote the JSON report over the scenario s.yaml).
@Suite struct ReportFileTests {
    @Test func refusesAFolderAndAnExistingYAMLFile() throws {
        let dir = NSTemporaryDirectory() + "hsl-report-file-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "name: s\nsteps: []\n".write(toFile: dir + "/s.yaml", atomically: true, encoding: .utf8)
        try "{}".write(toFile: dir + "/old.json", atomically: true, encoding: .utf8)

        #expect(ReportFile.refusal(flag: "--json", path: "s.yaml", cwd: dir)
                == "--json s.yaml: is an existing YAML file (a scenario or topology?) that the report would overwrite; expected the report's own path (.json or any other file that is not YAML)")
        #expect(ReportFile.refusal(flag: "--html", path: dir, cwd: "/") == "--html \(dir): is a folder; expected a file to write the report to")
        // A new file, and an earlier report, may be written.
        #expect(ReportFile.refusal(flag: "--json", path: "new.yaml", cwd: dir) == nil)
        #expect(ReportFile.refusal(flag: "--json", path: dir + "/old.json") == nil)
        #expect(ReportFile.refusal([("--junit", nil), ("--json", dir + "/s.yaml")])?.hasPrefix("--json \(dir)/s.yaml") == true)
        #expect(ReportFile.refusal([("--junit", nil), ("--json", nil)]) == nil)
    }
}
