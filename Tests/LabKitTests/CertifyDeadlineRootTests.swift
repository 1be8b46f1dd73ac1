import Foundation
import HotspotProtocol
import Testing
import TestSupport
@testable import LabKit
@testable import LabCertify
@testable import LabScenarioModel
@testable import LabScenarios

/// Certify's deadlines are iOS's (docs/CERTIFY.md, "The certification lab"; docs/SPEC.md, "Commands and their
/// deadlines": 45 s), never scaled: a deadline is a verdict, so it must be the platform's. A helper that answers
/// evaluate 13 s late (later than the 11.25 s certify once gave, within the platform's 45 s) passes `deadlines`, as it
/// would on an iPhone; the same helper answering 50 s late fails it, as iOS would stop waiting at 45 s (the control:
/// the same code path, only the delay changed). Native tier, so the verdicts hold on a loaded machine too.
@Suite("certify deadlines are iOS's 45 s (root)", .serialized, .requiresRoot)
struct CertifyDeadlineRootTests {
    static func certify(evaluateDelay: Double) throws -> CertificationReport {
        let helper = "hotspot-vendor-fixture --pattern campus --evaluate-delay \(evaluateDelay)"
        let certifier = try Certifier(topologyPath: "topologies/certify.yaml", helpers: [helper], only: ["deadlines"])
        certifier.linkMode = .veth
        certifier.jobs = 2
        certifier.onProgress = { print("certify [evaluate \(evaluateDelay) s late]: \($0)") }
        let report = certifier.run()
        for r in report.results { print("[evaluate \(evaluateDelay) s late] \(r.passed ? "pass" : "FAIL") \(r.check.id): \(r.reason)") }
        return report
    }

    /// The longest evaluate answer of the report's runs, in seconds (hotspotd's `latency_us`).
    static func slowestEvaluate(_ report: CertificationReport) -> Double {
        report.runs.flatMap(\.records).of(\.response).filter { $0.commandType == "evaluate" }
            .compactMap { $0.latency_us.map { $0 / 1e6 } }.max() ?? 0
    }

    /// Both certifications at once (they mostly wait: on the helper's delay and on hotspotd's 45 s deadline), when
    /// the first test asks.
    static let reports: [Result<CertificationReport, any Error>] = ParallelRuns.map([13.0, 50.0], jobs: 2) { delay in
        Result { try certify(evaluateDelay: delay) }
    }

    @Test("root: a helper answering evaluate 13 s late passes deadlines (iOS waits 45 s)")
    func thirteenSecondsPass() throws {
        let report = try Self.reports[0].get()
        let deadlines = try #require(report.results.first { $0.check.id == "deadlines" })
        #expect(deadlines.passed, "\(deadlines.reason)")
        // It really was slower than a scaled deadline would allow.
        #expect(Self.slowestEvaluate(report) > 11.25, "slowest evaluate \(Self.slowestEvaluate(report)) s")
        #expect(report.runs.allSatisfy { $0.error == nil }, "\(report.runs.compactMap(\.error))")
    }

    @Test("root: the same helper answering evaluate 50 s late fails deadlines, naming the unanswered evaluate")
    func fiftySecondsFail() throws {
        let report = try Self.reports[1].get()
        let deadlines = try #require(report.results.first { $0.check.id == "deadlines" })
        #expect(!deadlines.passed)
        #expect(deadlines.reason.contains("evaluate"), "\(deadlines.reason)")
        #expect(Set(report.causes.map(\.check)) == ["deadlines"], "\(report.causes)")
    }
}
