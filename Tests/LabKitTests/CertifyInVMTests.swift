import Foundation
import HotspotSystem
import Testing
import TestSupport
@testable import LabKit

/// `hotspot-lab certify` end to end in the VM: the reference portal helper passes every check, and a
/// deliberately broken helper (Tests/Fixtures/CertifyFixture: the reference helper behind a relay that
/// breaks exactly one rule) fails the check that names that rule, with evidence from the trace.
@Suite("InVM: certify (root)", .tags(.inVM), .serialized,
       .enabled(if: InVM.hwsimAvailable && TestHost.isRoot, "needs root and mac80211_hwsim: runs inside the hotspot-lab VM (see VMSuiteTests)"))
struct InVMCertifyTests {
    static let reference = #"hotspot-helper-portal --account guest:croissant --network "Cafe Lumiere""#
    static let topology = "topologies/certify.yaml"

    static func certify(_ helper: String, only: [String]? = nil) throws -> CertificationReport {
        try InVMScenarioTests.loadHwsim()
        let certifier = try Certifier(topologyPath: topology, helpers: [helper], only: only)
        certifier.onProgress = { print("certify: \($0)") }
        let report = certifier.run()
        for r in report.results {
            print("\(r.passed ? "pass" : "FAIL") \(r.check.id): \(r.reason)")
            for line in r.evidence.prefix(4) { print("    \(line)") }
        }
        return report
    }

    @Test("root: the reference portal helper passes every check")
    func referencePasses() throws {
        let report = try Self.certify(Self.reference)
        #expect(report.results.count == CertificationCheck.all.count)
        for r in report.results { #expect(r.passed, "\(r.check.id): \(r.reason)") }
        #expect(report.passed)
        // Each run left its trace; the evidence of a check quotes trace records.
        #expect(report.runs.allSatisfy { !$0.records.isEmpty })
        #expect(report.results.first { $0.check.id == "logoff" }?.evidence.first?.contains("\"commandType\":\"logoff\"") == true)
    }

    /// Each broken mode, the check it must fail, and the checks of the same runs that must still pass.
    static let broken: [(mode: String, fails: String)] = [
        ("never-maintain", "deadlines"),
        ("claim-everything", "decoys"),
        ("claim-everything", "scan-list-passwords"),
        ("high-everything", "not-high-for-everything"),
        ("double", "one-response"),
        ("fail-just-joined", "maintain"),
        ("no-reauth", "reauthenticate"),
        ("fail-unsupported", "unsupported-network"),
        ("logoff-keeps-session", "logoff"),
        ("temporary-as-failure", "temporary-failure"),
        ("invalid-result", "valid-results"),
        ("trust-dns", "dns-hijack"),
    ]

    @Test("root: a helper broken in one way fails the check that names it", arguments: Array(0..<broken.count))
    func brokenHelperFailsItsCheck(_ index: Int) throws {
        let (mode, check) = Self.broken[index]
        let report = try Self.certify("hotspot-certify-fixture --break \(mode) -- \(Self.reference)", only: [check])
        let result = try #require(report.results.first { $0.check.id == check })
        #expect(!result.passed, "--break \(mode) should fail \(check): \(result.reason)")
        #expect(!result.evidence.isEmpty, "a failed check shows its evidence")
        #expect(!report.passed)
    }
}
