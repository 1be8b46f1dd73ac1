import Foundation
import HotspotSystem
import Testing
import TestSupport
@testable import LabKit

/// `hotspot-lab certify` in the native tier (docs/SCENARIOS.md, "Tiers"), on the host kernel as root, no VM: every
/// broken fixture (`CertifyCases`: the CertifyFixture modes, the broken provider pairs, `drop-cookies`) fails exactly
/// the check that owns its cause, naming it. Certify never touches the air, so its verdicts are the radio tier's:
/// `InVMCertifyTests` certifies the reference helper, the reference pair and a sample of these fixtures in the VM,
/// and `CertifyParityCheck` compares that sample's radio verdicts with the ones here.
@Suite("Native tier: certify rejects every broken fixture, naming the cause (root)", .serialized, .requiresRoot)
struct NativeCertifyRootTests {
    /// Labs at once: each case is one certify with one lab at a time; the cases run this many at a time.
    static let jobs = 2

    /// Every case certified once, the first time a test asks; each test then judges its own report.
    static let brokenReports: [Result<CertificationReport, any Error>] = timed("broken fixtures") {
        ParallelRuns.map(Array(CertifyCases.broken.indices), jobs: jobs) { index in
            Result { try CertifyCases.certifyBroken(index, linkMode: .veth) }
        }
    }
    static let brokenPairReports: [Result<CertificationReport, any Error>] = timed("broken provider pairs") {
        ParallelRuns.map(Array(CertifyCases.brokenPairs.indices), jobs: jobs) { index in
            Result { try CertifyCases.certifyBrokenPair(index, linkMode: .veth) }
        }
    }

    static func timed<T>(_ what: String, _ body: () -> T) -> T {
        let start = ContinuousClock.now
        let value = body()
        print("native certify: \(what) in \(ContinuousClock.now - start)")
        return value
    }

    /// The native verdict of `CertifyCases.broken[index]` (for the parity check and the under-load test).
    static func brokenVerdict(_ index: Int) throws -> CertifyVerdict {
        let (mode, fails, names) = CertifyCases.broken[index]
        return CertifyVerdict(subject: mode, report: try brokenReports[index].get(), fails: fails, names: names)
    }

    @Test("root: a helper broken in one way fails exactly the check that owns the cause, naming it; the others of its runs pass or are not reached",
          arguments: Array(CertifyCases.broken.indices))
    func brokenHelperFailsItsCheck(_ index: Int) throws {
        let report = try Self.brokenReports[index].get()
        #expect(report.tier == "native")
        #expect(CertifyCases.labStartFailures(report).isEmpty, "\(CertifyCases.labStartFailures(report))")
        CertifyCases.expectBroken(report, index)
    }

    @Test("root: a provider pair broken in one way fails the provider check that owns it", arguments: Array(CertifyCases.brokenPairs.indices))
    func brokenPairFailsItsCheck(_ index: Int) throws {
        let report = try Self.brokenPairReports[index].get()
        #expect(report.tier == "native")
        CertifyCases.expectBrokenPair(report, index)
    }

    /// The cookie portal (run `cookie-portal`, SessionCookiesCheck): the reference helper keeps the session cookie from
    /// the sign-in page to the POST (over HTTPS, Secure and HttpOnly, with the CSRF token); the fixture's `drop-cookies`
    /// fails exactly `session-cookies`, named as the cause, with the portal's refusal as evidence.
    @Test("root: session-cookies: the reference helper passes; a helper that drops cookies fails it, named as the cause")
    func sessionCookies() throws {
        let reports = ParallelRuns.map([CertifyCases.reference, CertifyCases.fixture("drop-cookies")], jobs: Self.jobs) { helper in
            Result { try CertifyCases.certify(helpers: [helper], only: ["session-cookies"], linkMode: .veth) }
        }
        let good = try reports[0].get()
        #expect(good.tier == "native")
        #expect(good.passed && good.results.map(\.check.id) == ["session-cookies"], "\(good.results.map { "\($0.check.id): \($0.reason)" })")
        #expect(good.causes.isEmpty)
        CertifyCases.expectDropCookies(try reports[1].get())
    }
}
