import Foundation
import PortalKinds
import LabScenarios

/// JUnit XML, written once for every report that has it (`run`, `demo` and `replay` through
/// `JUnit.scenarios`, `certify` through `CertifyReports.junit`): one `<testsuites>` around one `<testsuite>`,
/// every text escaped by `Markup.escape`.
public enum JUnit {
    /// A `<failure>` (the test ran and failed) or an `<error>` (it could not run: counted in `errors`, not `failures`).
    public enum Outcome: Sendable {
        case passed
        case failure(message: String, type: String? = nil, body: String)
        case error(message: String, body: String = "")

        var isError: Bool {
            if case .error = self { return true }
            return false
        }
    }

    public struct TestCase: Sendable {
        public var classname: String
        public var name: String
        public var file: String?
        public var time: Double?
        public var outcome: Outcome
        public var systemOut: String
        /// Counted in `failures` (or, for an `error` outcome, in `errors`): by default, when the outcome is not `passed`.
        public var failed: Bool

        public init(classname: String, name: String, file: String? = nil, time: Double? = nil, outcome: Outcome, systemOut: String,
                    failed: Bool? = nil) {
            self.classname = classname
            self.name = name
            self.file = file
            self.time = time
            self.outcome = outcome
            self.systemOut = systemOut
            if let failed {
                self.failed = failed
            } else if case .passed = outcome {
                self.failed = false
            } else {
                self.failed = true
            }
        }
    }

    /// The document: `documentName` on `<testsuites>`, `suiteName` on `<testsuite>`; `time` (seconds) on both when given.
    public static func document(documentName: String, suiteName: String, time: Double? = nil,
                                properties: [(name: String, value: String)], cases: [TestCase]) -> String {
        let e = Markup.escape
        let failures = cases.filter { $0.failed && !$0.outcome.isError }.count
        let counts = "tests=\"\(cases.count)\" failures=\"\(failures)\" errors=\"\(cases.filter { $0.failed && $0.outcome.isError }.count)\""
            + (time.map { " time=\"\(seconds($0))\"" } ?? "")
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites name=\"\(e(documentName))\" \(counts)>\n"
        xml += "  <testsuite name=\"\(e(suiteName))\" \(counts)>\n"
        xml += "    <properties>" + properties.map { "<property name=\"\(e($0.name))\" value=\"\(e($0.value))\"/>" }.joined() + "</properties>\n"
        for c in cases {
            xml += "    <testcase classname=\"\(e(c.classname))\" name=\"\(e(c.name))\""
            if let file = c.file { xml += " file=\"\(e(file))\"" }
            if let time = c.time { xml += " time=\"\(seconds(time))\"" }
            xml += ">\n"
            switch c.outcome {
            case .passed: break
            case .error(let message, let body):
                xml += "      <error message=\"\(e(message))\"" + (body.isEmpty ? "/>\n" : ">\(e(body))</error>\n")
            case .failure(let message, let type, let body):
                xml += "      <failure message=\"\(e(message))\"" + (type.map { " type=\"\(e($0))\"" } ?? "") + ">\(e(body))</failure>\n"
            }
            xml += "      <system-out>\(e(c.systemOut))</system-out>\n    </testcase>\n"
        }
        return xml + "  </testsuite>\n</testsuites>\n"
    }

    /// One test case per scenario run (`run`, `demo`, `replay`): steps, tier, retries and logs in its output,
    /// the timeline in a failure's body, a setup error as `<error>`.
    public static func scenarios(_ results: [ScenarioResult], suite: String) -> String {
        let cases = results.map { r in
            var out = r.steps.map { String(format: "%.2f s %@ %@: %@", $0.elapsed, $0.passed ? "ok" : "FAILED", $0.step.text, $0.message) }
            if r.flaky { out.insert("flaky: failed on the first try, passed on the retry", at: 0) }
            out.insert("tier: \(r.tier)", at: 0)
            out.append("logs: \(r.logDirectory)")
            let outcome: Outcome = r.setupError.map { .error(message: $0) }
                ?? r.failure.map { .failure(message: $0.message, body: Timeline.render(r.timeline).joined(separator: "\n")) }
                ?? .passed
            return TestCase(classname: "scenarios.\(r.tier)", name: r.scenario.name, file: r.scenario.file, time: r.duration,
                            outcome: outcome, systemOut: out.joined(separator: "\n"), failed: !r.passed)
        }
        return document(documentName: suite, suiteName: suite, time: results.reduce(0) { $0 + $1.duration },
                        properties: [("tier", Array(Set(results.map(\.tier))).sorted().joined(separator: ","))], cases: cases)
    }

    private static func seconds(_ value: Double) -> String { String(format: "%.3f", value) }
}
