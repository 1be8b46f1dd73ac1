import Foundation
import Testing
import TestSupport
@testable import LabKit
@testable import LabCertify
@testable import LabTopology

/// certify's `ipv6-only` check end to end in the native tier (host kernel, root, no VM): the run `ipv6-only` makes
/// the certification café IPv6-only (NAT64, DNS64); the reference portal helper and the reference provider pair
/// sign in there and pass; `hotspot-certify-fixture --break ipv4-literal` (the reference helper whose sign-in starts
/// at the portal's IPv4 address written into its code) fails it, named as the cause with the address from its log,
/// and, as the control, passes `reauthenticate` on the IPv4 café of the run `captive`.
@Suite("certify ipv6-only: an IPv6-only café in the native tier (root)", .serialized, .requiresRoot)
struct IPv6OnlyCertifyRootTests {
    static let reference = #"hotspot-helper-portal --account guest:croissant --network "Cafe Lumiere""#
    static let broken = #"hotspot-certify-fixture --break ipv4-literal -- "# + reference

    static func certify(helpers: [String] = [], app: StationApp? = nil, only: [String]) throws -> CertificationReport {
        let certifier = try Certifier(topologyPath: "topologies/certify.yaml", helpers: helpers, only: only, app: app)
        certifier.linkMode = .veth
        certifier.jobs = 2
        certifier.onProgress = { print("certify ipv6-only: \($0)") }
        let report = certifier.run()
        for r in report.results { print("\(r.verdict) \(r.check.id): \(r.reason)") }
        #expect(report.tier == "native")
        return report
    }

    @Test("root: the reference portal helper signs in on the IPv6-only café: ipv6-only passes, the gate holds it")
    func referencePasses() throws {
        let report = try Self.certify(helpers: [Self.reference], only: ["ipv6-only"])
        let result = try #require(report.results.first { $0.check.id == "ipv6-only" })
        #expect(result.passed, "\(result.reason)")
        #expect(result.evidence.contains("gate after the sign-in: authenticated"), "\(result.evidence)")
        #expect(report.runs.map(\.run) == [.ipv6Only])
        // The café really was IPv6-only: hotspotd's IP up came from IPv6, DHCPv4 failed, no IPv4 address.
        let records = try #require(report.runs.first).records
        #expect(records.contains { $0.record.station?.action == "dhcpFailed" })
        let up = try #require(records.first { $0.record.station?.action == "ipv6Up" }?.record.station)
        #expect(up.ipv6Up == true && (up.ipv4Addresses ?? []).isEmpty, "\(up)")
    }

    @Test("root: the reference portal provider pair passes ipv6-only too")
    func referencePairPasses() throws {
        let app = Certifier.providerApp(evaluation: #"hotspot-provider-portal-evaluation --network "Cafe Lumiere""#,
                                        authentication: "hotspot-provider-portal-authentication --account guest:croissant")
        let report = try Self.certify(app: app, only: ["ipv6-only"])
        let result = try #require(report.results.first { $0.check.id == "ipv6-only" })
        #expect(result.passed, "\(result.reason)")
    }

    @Test("root: a helper that hard-codes the portal's IPv4 address fails ipv6-only, the cause named with the address; it passes reauthenticate on IPv4")
    func ipv4LiteralFails() throws {
        let report = try Self.certify(helpers: [Self.broken], only: ["ipv6-only", "reauthenticate"])
        let result = try #require(report.results.first { $0.check.id == "ipv6-only" })
        #expect(!result.passed && !result.notReached)
        #expect(result.reason.hasPrefix("authenticate answered failure"), "\(result.reason)")
        #expect(result.reason.contains("IPv6-only café") && result.reason.contains("198.51.100.1"), "\(result.reason)")
        // As on iOS, the SDK synthesized the literal into the NAT64 prefix (while IP is suppressed, before the sign-in),
        // and the gate refused it there: NAT64 opens only after a sign-in.
        #expect(result.reason.contains("(2001:db8:ff64::c633:6401)"), "\(result.reason)")
        #expect(result.cause?.check == "ipv6-only" && result.cause?.run == .ipv6Only, "\(String(describing: result.cause))")
        #expect(report.causes.contains { $0.check == "ipv6-only" })
        // The control: the same helper on the IPv4 café signs in and again after authenticationRequired.
        let control = try #require(report.results.first { $0.check.id == "reauthenticate" })
        #expect(control.passed, "\(control.reason)")
        #expect(!report.passed)
    }
}
