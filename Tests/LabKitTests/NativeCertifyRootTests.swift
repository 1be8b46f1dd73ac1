import Foundation
import HotspotProtocol
import HotspotSystem
import Testing
import TestSupport
@testable import LabKit
@testable import LabCertify
@testable import LabScenarioModel
@testable import LabScenarios

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

    /// Every maintain a certification's runs need is fired by the lab (`fireMaintainTimer`, traced `via: control`),
    /// after what the run marked before it in trace order: hotspotd's own timer (iOS's 300 s) never comes due. Until
    /// 2026-11-29 it fired 3 s after each login on its own and raced the lab's steps (a helper's audit).
    @Test("root: the lab fires every maintain timer of the captive and dns-hijack runs, after the marks it follows")
    func maintainsAreTheLabs() throws {
        let report = try CertifyCases.certify(helpers: [CertifyCases.reference], only: ["maintain", "reauthenticate", "dns-hijack", "logoff"],
                                              linkMode: .veth)
        #expect(report.passed, "\(report.results.map { "\($0.check.id): \($0.reason)" })")
        func fired(_ run: CertificationRun) throws -> [TraceEntry] {
            let records = try #require(report.runs.first { $0.run == run }).records
            let events = records.filter { $0.record.event?.event == "maintainTimerFired" }
            #expect(events.allSatisfy { $0.record.event?.origin.via == "control" }, "\(events.map(\.evidenceText))")
            return events
        }
        func mark(_ run: CertificationRun, _ name: String) throws -> Int {
            let records = try #require(report.runs.first { $0.run == run }).records
            return try #require(records.first { $0.record.labAction?.action.certify == name }, "no mark \(name)").seq
        }
        let captive = try fired(.captive)
        #expect(captive.count == 2, "after the sign-in and after the session ended: \(captive.map(\.seq))")
        let ended = try mark(.captive, RunDriver.sessionEndedMark)
        if captive.count == 2 { #expect(captive[1].seq > ended) }
        let hijack = try fired(.dnsHijack)
        let hijacked = try mark(.dnsHijack, RunDriver.hijackMark)
        #expect(hijack.count == 1 && hijack[0].seq > hijacked, "\(hijack.map(\.seq))")
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

/// Issue 25 item 4, a judge no timing can fool: beside two CPU hogs (`yes`, started here and killed by PID), every
/// broken fixture certified three times in the native tier gets exactly the verdict of the quiet run
/// (`NativeCertifyRootTests`: the same checks failed and the same checks owning the causes; a check passed in one and
/// not reached in the other is reported, not failed on),
/// and every lab starts. Not tagged .timingSensitive: it brings its own load (ci/under-load.sh would add more).
@Suite("Native tier: certify's verdicts on every broken fixture do not change beside two CPU hogs (root)", .serialized, .requiresRoot)
struct NativeCertifyUnderLoadRootTests {
    static let rounds = 3
    /// Certifies at once beside the hogs (each one lab at a time): labs mostly wait for the helper's timers.
    static let jobs = 4

    /// A case of the under-load run: which fixture, how it is certified, and its quiet verdict.
    struct Case: Sendable {
        var subject: String
        var fails: String
        var names: String
        var certify: @Sendable () throws -> CertificationReport
        var expect: @Sendable (CertificationReport, String) -> Void
        /// A provider pair (compared on its own check and causes: CertifyVerdict's `othersToo`).
        var isPair: Bool { subject.hasPrefix("pair ") }
    }

    static var cases: [Case] {
        CertifyCases.broken.indices.map { index in
            let item = CertifyCases.broken[index]
            return Case(subject: item.mode, fails: item.fails, names: item.names,
                        certify: { try CertifyCases.certifyBroken(index, linkMode: .veth, quiet: true) },
                        expect: { CertifyCases.expectBroken($0, index, $1) })
        } + CertifyCases.brokenPairs.indices.map { index in
            let pair = CertifyCases.brokenPairs[index]
            return Case(subject: "pair \(pair.fails)", fails: pair.fails, names: pair.names,
                        certify: { try CertifyCases.certifyBrokenPair(index, linkMode: .veth, quiet: true) },
                        expect: { CertifyCases.expectBrokenPair($0, index, $1) })
        } + [Case(subject: "drop-cookies", fails: "session-cookies", names: "refused: no session cookie",
                  certify: { try CertifyCases.certifyDropCookies(linkMode: .veth, quiet: true) },
                  expect: { CertifyCases.expectDropCookies($0, $1) })]
    }

    @Test("root: beside two CPU hogs, every broken fixture certified three times gets the quiet run's verdict; every lab starts")
    func verdictsUnderLoad() throws {
        let cases = Self.cases
        // The quiet verdicts first (the quiet suite's reports when it ran; drop-cookies certified here), then the hogs.
        let quiet: [CertifyVerdict] = try cases.indices.map { i in
            let c = cases[i]
            let report: CertificationReport
            if i < CertifyCases.broken.count {
                report = try NativeCertifyRootTests.brokenReports[i].get()
            } else if i < CertifyCases.broken.count + CertifyCases.brokenPairs.count {
                report = try NativeCertifyRootTests.brokenPairReports[i - CertifyCases.broken.count].get()
            } else {
                report = try c.certify()
            }
            c.expect(report, "quiet: ")
            return CertifyVerdict(subject: c.subject, report: report, fails: c.fails, names: c.names, othersToo: !c.isPair)
        }

        let hogs = try CPUHogs(2)
        defer { hogs.stop() }

        let work = (0..<Self.rounds).flatMap { round in cases.indices.map { (round, $0) } }
        let start = ContinuousClock.now
        let loaded = ParallelRuns.map(work, jobs: Self.jobs) { round, i in Result { try cases[i].certify() } }
        print("under load: \(work.count) certifies (\(cases.count) fixtures x \(Self.rounds)) beside 2 CPU hogs in \(ContinuousClock.now - start)")
        #expect(hogs.stopped().isEmpty, "CPU hogs (pids \(hogs.stopped())) stopped early: the load was not there")

        var wobbles: [String] = []
        // Pass against "not reached", or where a cause is also named: reported, not failed on (open: issue 25 item 4).
        // In CI on 2026-11-26, `sign-out-after-login` had reauthenticate pass in the quiet run and not reached in
        // all three loaded rounds; the failed checks and the causes were the same.
        var reached: [String] = []
        for ((round, i), outcome) in zip(work, loaded) {
            let c = cases[i]
            let context = "under load, round \(round + 1): "
            switch outcome {
            case .failure(let error):
                wobbles.append("\(c.subject) round \(round + 1): certify threw: \(error)")
            case .success(let report):
                let labErrors = CertifyCases.labStartFailures(report)
                if !labErrors.isEmpty { wobbles.append("\(c.subject) round \(round + 1): \(labErrors)") }
                c.expect(report, context)
                let verdict = CertifyVerdict(subject: c.subject, report: report, fails: c.fails, names: c.names, othersToo: !c.isPair)
                wobbles += CertifyVerdict.failureDifferences(quiet[i], verdict).map { "round \(round + 1): \($0)" }
                reached += CertifyVerdict.differences(quiet[i], verdict).map { "round \(round + 1): \($0)" }
            }
        }
        if !reached.isEmpty { print("under load: \(reached.count) differences in checks reached (not failed on):\n\(reached.joined(separator: "\n"))") }
        #expect(wobbles.isEmpty, "\(wobbles.count) wobbles beside two CPU hogs:\n\(wobbles.joined(separator: "\n"))")
    }
}
