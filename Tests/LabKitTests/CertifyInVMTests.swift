import Foundation
import HotspotSystem
import Testing
import TestSupport
@testable import LabKit
@testable import LabCertify
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabTopology
@testable import LabVM

/// `hotspot-lab certify` end to end in the VM, in the radio tier: the reference portal helper and the reference provider
/// pair pass every check, and a sample of the broken fixtures (Tests/Fixtures/CertifyFixture: the reference helper behind
/// a relay that breaks exactly one rule) fails as in the native tier. Every broken fixture is certified on the host, in
/// the native tier (NativeCertifyRootTests, and beside two CPU hogs); `CertifyParityCheck` compares the two tiers.
@Suite("InVM: certify (root)", .tags(.inVM), .serialized,
       .enabled(if: InVM.hwsimAvailable && TestHost.isRoot, "needs root and mac80211_hwsim: runs inside the hotspot-lab VM (see VMSuiteTests)"))
struct InVMCertifyTests {
    static let reference = CertifyCases.reference
    static let topology = CertifyCases.topology

    static func certify(_ helper: String, only: [String]? = nil) throws -> CertificationReport {
        try certify(helpers: [helper], only: only)
    }

    /// `jobs`: labs at once within this certify (its runs are independent labs, mostly waiting: issue 19).
    static func certify(helpers: [String] = [], only: [String]? = nil, app: StationApp? = nil, jobs: Int = 2) throws -> CertificationReport {
        try InVMScenarioTests.loadHwsim()
        let certifier = try Certifier(topologyPath: topology, helpers: helpers, only: only, app: app)
        certifier.jobs = jobs
        certifier.linkMode = .radio
        let tag = helpers.first.map { " [\($0.split(separator: " ").prefix(3).joined(separator: " "))]" } ?? ""
        certifier.onProgress = { print("certify\(tag): \($0)") }
        let report = certifier.run()
        let lines = report.results.flatMap { r in
            ["\(r.passed ? "pass" : "FAIL") \(r.check.id): \(r.reason)"] + r.evidence.prefix(4).map { "    \($0)" }
        }
        print(lines.joined(separator: "\n"))
        return report
    }

    /// Certifies every item two at a time, each certify with one lab at a time (so two labs at once in all, as
    /// `--jobs 2`): the broken cases below each need one or two runs, so one certify at a time left a lab slot
    /// idle for most of them. Made once, when the first case asks; each case then judges its own report.
    static func certifiedTwoAtATime<T>(_ items: [T], _ certify: @escaping (T) throws -> CertificationReport) -> [Result<CertificationReport, any Error>] {
        do { try InVMScenarioTests.loadHwsim() } catch { return items.map { _ in .failure(error) } }
        return ParallelRuns.map(items, jobs: 2) { item in Result { try certify(item) } }
    }

    @Test("root: the reference portal helper passes every check")
    func referencePasses() throws {
        let report = try Self.certify(Self.reference)
        #expect(report.tier == "radio")
        #expect(report.results.count == CertificationCheck.all.count)
        for r in report.results { #expect(r.passed, "\(r.check.id): \(r.reason)") }
        #expect(report.passed)
        // Each run left its trace; the evidence of a check quotes trace records.
        #expect(report.runs.allSatisfy { !$0.records.isEmpty })
        #expect(report.results.first { $0.check.id == "logoff" }?.evidence.first?.contains("\"commandType\":\"logoff\"") == true)
    }

    static let referenceEvaluation = CertifyCases.referenceEvaluation
    static let referenceAuthentication = CertifyCases.referenceAuthentication

    @Test("root: the reference portal provider pair passes the twelve checks and the four provider checks")
    func referencePairPasses() throws {
        let report = try Self.certify(app: Certifier.providerApp(evaluation: Self.referenceEvaluation, authentication: Self.referenceAuthentication))
        #expect(report.results.count == CertificationCheck.all.count + CertificationCheck.providerChecks.count)
        for r in report.results { #expect(r.passed, "\(r.check.id): \(r.reason)") }
        #expect(report.passed)
    }

    /// Parity (issue 25 item 2): a sample of the broken fixtures (`CertifyParityCheck.radioSample`) certified in the
    /// radio tier, with the assertions every tier makes; each leaves its verdict in the results share, and the host
    /// (VMBootTests.suitesInsideOneBoot) compares it with the native tier's verdict of the same fixture. Every broken
    /// fixture, provider pair and `drop-cookies` is certified in the native tier on the host: NativeCertifyRootTests.
    static let sampleReports = certifiedTwoAtATime(CertifyParityCheck.radioSample) { mode in
        let index = CertifyCases.broken.firstIndex { $0.mode == mode }!
        return try certify(helpers: [CertifyCases.fixture(mode)], only: [CertifyCases.broken[index].fails], jobs: 1)
    }

    @Test("root: a sample of broken fixtures fails in the radio tier as in the native tier (verdicts left for the host's parity check)",
          arguments: CertifyParityCheck.radioSample)
    func brokenSampleInRadioTier(_ mode: String) throws {
        let position = try #require(CertifyParityCheck.radioSample.firstIndex(of: mode))
        let index = try #require(CertifyCases.broken.firstIndex { $0.mode == mode })
        let report = try Self.sampleReports[position].get()
        #expect(report.tier == "radio")
        CertifyCases.expectBroken(report, index, "radio: ")
        let (_, fails, names) = CertifyCases.broken[index]
        if let folder = InVM.resultsDirectory {
            let data = try JSONEncoder().encode(CertifyVerdict(subject: mode, report: report, fails: fails, names: names))
            try FileManager.default.createDirectory(atPath: folder + "/" + CertifyParityCheck.folder, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: folder + "/" + CertifyParityCheck.folder + "/\(mode).json", contents: data))
        }
    }
}
