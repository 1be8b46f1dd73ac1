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
        try certify(helpers: [helper], only: only)
    }

    /// `jobs`: labs at once within this certify (its runs are independent labs, mostly waiting: issue 19).
    static func certify(helpers: [String] = [], only: [String]? = nil, app: StationApp? = nil, jobs: Int = 2) throws -> CertificationReport {
        try InVMScenarioTests.loadHwsim()
        let certifier = try Certifier(topologyPath: topology, helpers: helpers, only: only, app: app)
        certifier.jobs = jobs
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
        #expect(report.results.count == CertificationCheck.all.count)
        for r in report.results { #expect(r.passed, "\(r.check.id): \(r.reason)") }
        #expect(report.passed)
        // Each run left its trace; the evidence of a check quotes trace records.
        #expect(report.runs.allSatisfy { !$0.records.isEmpty })
        #expect(report.results.first { $0.check.id == "logoff" }?.evidence.first?.contains("\"commandType\":\"logoff\"") == true)
    }

    static let referenceEvaluation = #"hotspot-provider-portal-evaluation --network "Cafe Lumiere""#
    static let referenceAuthentication = "hotspot-provider-portal-authentication --account guest:croissant"

    @Test("root: the reference portal provider pair passes the twelve checks and the four provider checks")
    func referencePairPasses() throws {
        let report = try Self.certify(app: Certifier.providerApp(evaluation: Self.referenceEvaluation, authentication: Self.referenceAuthentication))
        #expect(report.results.count == CertificationCheck.all.count + CertificationCheck.providerChecks.count)
        for r in report.results { #expect(r.passed, "\(r.check.id): \(r.reason)") }
        #expect(report.passed)
    }

    /// A pair broken in one way (`hotspot-test-provider` in place of one reference provider), the check that owns it, words of its reason.
    static let brokenPairs: [(evaluation: String, authentication: String, fails: String, names: String)] = [
        ("hotspot-test-provider --evaluate none --try-network http://198.18.0.1/", referenceAuthentication, "evaluation-no-network", "tried the network"),
        (referenceEvaluation, "hotspot-test-provider --deliver yes", "no-deliver", "called deliver()"),
        (referenceEvaluation, "hotspot-test-provider --start fail", "start-stop", "start() returned false"),
    ]

    static let brokenPairReports = certifiedTwoAtATime(brokenPairs) { pair in
        try certify(only: [pair.fails], app: Certifier.providerApp(evaluation: pair.evaluation, authentication: pair.authentication), jobs: 1)
    }

    @Test("root: a provider pair broken in one way fails the provider check that owns it", arguments: Array(0..<brokenPairs.count))
    func brokenPairFailsItsCheck(_ index: Int) throws {
        let (_, _, check, names) = Self.brokenPairs[index]
        let report = try Self.brokenPairReports[index].get()
        let result = try #require(report.results.first { $0.check.id == check })
        #expect(!result.passed && !result.notReached, "\(check): \(result.reason)")
        #expect((result.reason + result.evidence.joined(separator: " ")).contains(names), "\(check): \(result.reason) \(result.evidence)")
        #expect(!report.passed)
    }

    /// Each fixture defect, the check that owns its cause, and words its reason must contain (docs/CERTIFY.md,
    /// "How the checks are tested": the same table).
    static let broken: [(mode: String, fails: String, names: String)] = [
        ("never-maintain", "deadlines", "no answer to maintain"),
        ("claim-decoys", "decoys", "a network it cannot know"),
        ("no-passwords", "scan-list-passwords", "without a password"),
        ("high-everything", "not-high-for-everything", "answered high"),
        ("double", "one-response", "duplicateResponse"),
        ("sdk-double", "one-response", "secondDelivery"),
        ("fail-just-joined", "maintain", "with didJustJoin answered failure"),
        ("never-probe", "maintain", "from memory"),
        ("no-reauth", "reauthenticate", "authenticate answered failure"),
        ("fail-unsupported", "unsupported-network", "expected unsupportedNetwork"),
        ("logoff-keeps-session", "logoff", "still up"),
        ("sign-out-after-login", "logoff", "on its own"),
        ("temporary-as-failure", "temporary-failure", "expected temporaryFailure"),
        ("invalid-result", "valid-results", "not a valid result"),
        ("trust-dns", "dns-hijack", "resolved to the gateway"),
    ]

    /// The cookie portal (run `cookie-portal`, SessionCookiesCheck): the reference helper keeps the session cookie from
    /// the sign-in page to the POST (over HTTPS, Secure and HttpOnly, with the CSRF token); the fixture's `drop-cookies`
    /// (the reference helper's form sign-in over an HTTP client without cookies) fails exactly `session-cookies`,
    /// named as the cause, with the portal's refusal as evidence.
    @Test("root: session-cookies: the reference helper passes; a helper that drops cookies fails it, named as the cause")
    func sessionCookies() throws {
        // One lab at a time: the run switches the café's portal to HTTPS only, whose start waits for readiness.
        try InVMScenarioTests.loadHwsim()
        let reports = [Self.reference, "hotspot-certify-fixture --break drop-cookies -- \(Self.reference)"].map { helper in
            Result { try Self.certify(helpers: [helper], only: ["session-cookies"], jobs: 1) }
        }
        let good = try reports[0].get()
        #expect(good.passed && good.results.map(\.check.id) == ["session-cookies"], "\(good.results.map { "\($0.check.id): \($0.reason)" })")
        #expect(good.causes.isEmpty)
        let bad = try reports[1].get()
        let result = try #require(bad.results.first { $0.check.id == "session-cookies" })
        #expect(!result.passed && !result.notReached, "\(result.reason)")
        #expect(result.reason.contains("requires the session cookie") && result.reason.contains("refused: no session cookie"), "\(result.reason)")
        #expect(bad.causes.map(\.check) == ["session-cookies"], "\(bad.causes)")
        #expect(result.evidence.contains { $0.contains(SessionCookiesCheck.refusedMark) }, "\(result.evidence)")
    }

    static let brokenReports = certifiedTwoAtATime(broken) { item in
        try certify(helpers: ["hotspot-certify-fixture --break \(item.mode) -- \(reference)"], only: [item.fails], jobs: 1)
    }

    @Test("root: a helper broken in one way fails exactly the check that owns the cause, naming it; the others of its runs pass or are not reached",
          arguments: Array(0..<broken.count))
    func brokenHelperFailsItsCheck(_ index: Int) throws {
        let (mode, check, names) = Self.broken[index]
        let report = try Self.brokenReports[index].get()
        let result = try #require(report.results.first { $0.check.id == check })
        #expect(!result.passed && !result.notReached, "--break \(mode) should fail \(check): \(result.reason)")
        #expect(result.reason.contains(names), "--break \(mode): the reason names the cause: \(result.reason)")
        #expect(!result.evidence.isEmpty, "a failed check shows its evidence")
        #expect(!report.passed)
        // Every other check that reads only the runs performed: pass, or "not reached" naming this cause.
        let performed = Set(report.runs.map(\.run))
        let others = CertificationCheck.all.filter { $0.id != check && Set($0.runs).isSubset(of: performed) }
        let judge = Judge(runs: report.runs, home: "Cafe Lumiere", notCaptive: "Public Library", decoys: ["Airport Lounge", "Bank Secure"], timeScale: 0.25)
        for other in judge.report(helpers: report.helpers, checks: others).results {
            #expect(other.passed || other.notReached, "--break \(mode): \(other.check.id) must pass or be not reached, found: \(other.reason)")
        }
    }
}
