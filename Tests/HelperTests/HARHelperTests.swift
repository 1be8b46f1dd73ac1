import Foundation
import HotspotCore
import Portals
import Testing
@testable import HotspotHelper
@testable import PortalHelper
import ReferenceHelperSupport

/// The reference portal helper against recorded portals (`hotspot-lab portal import`), served by the real portal
/// server on loopback: it signs in on the recorded form portals and declines the rest.
@Suite("Recorded portals: the reference helper (loopback)")
struct HARHelperTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/har").path

    /// Imports `document` and writes the definition to a temporary file; the recorded kind's settings.
    static func definition(_ document: HARDocument, name: String) throws -> [String: String] {
        let result = try HARImport.convert(document, source: name + ".har")
        let path = NSTemporaryDirectory() + "hotspotlab-har-\(UUID().uuidString)-\(name).json"
        try result.definition.encoded().write(to: URL(fileURLWithPath: path))
        return ["definition": path, "username": "guest", "password": "guest-password"]
    }

    static func fixture(_ name: String) throws -> [String: String] {
        try definition(try HARDocument.read(path: "\(fixtures)/\(name).har"), name: name)
    }

    @Test(arguments: ["grand-hotel-form", "two-hosts-chain", "wispr"])
    func signsInOnRecordedLoginPortals(_ name: String) async throws {
        let settings = try Self.fixture(name)
        defer { unlink(settings["definition"] ?? "") }
        let lab = try await LoopbackPortal.start("recorded", settings: settings)
        defer { lab.stop() }
        let wrong = try HelperLogicTests.portalLogic(["--account", "guest:not-the-password"])
        let right = try HelperLogicTests.portalLogic(["--account", "guest:guest-password"])
        let (evaluation, refused, allowedBefore, accepted, allowedAfter) = try await blocking {
            (HelperLogicTests.Outcome(right.evaluate(lab.http, lease: [:])),
             HelperLogicTests.Outcome(wrong.authenticate(lab.http, ssid: "Venue")),
             lab.gate.isAllowed("127.0.0.1"),
             HelperLogicTests.Outcome(right.authenticate(lab.http, ssid: "Venue")),
             lab.gate.isAllowed("127.0.0.1"))
        }
        #expect(evaluation.confidence == .high, "\(name): \(evaluation)")
        #expect(refused.result == .failure, "\(name): \(refused)")
        if name == "grand-hotel-form" { #expect(refused.reason.contains("401"), "the recorded refusal: \(refused)") }
        #expect(!allowedBefore)
        #expect(accepted.result == .success, "\(name): \(accepted)")
        #expect(allowedAfter)
    }

    @Test func declinesTheJavaScriptOnlyPage() async throws {
        let settings = try Self.fixture("javascript-only")
        defer { unlink(settings["definition"] ?? "") }
        let lab = try await LoopbackPortal.start("recorded", settings: settings)
        defer { lab.stop() }
        let logic = try HelperLogicTests.portalLogic(["--account", "guest:guest-password"])
        let (evaluation, authentication) = try await blocking {
            (HelperLogicTests.Outcome(logic.evaluate(lab.http, lease: [:])), HelperLogicTests.Outcome(logic.authenticate(lab.http, ssid: "Mall")))
        }
        #expect(evaluation.confidence == HotspotHelperConfidence.none, "\(evaluation)")
        #expect(authentication.result == .unsupportedNetwork, "\(authentication)")
        #expect(lab.sent.contains("GET \(lab.base)/"), "the page was served: \(lab.sent)")
        #expect(lab.gate.entries.isEmpty)
    }

    /// Round trip: the helper's traffic with our own form-login portal recorded as HAR, imported, served as a
    /// recorded portal: the same helper signs in there, and the wrong account is refused as recorded.
    @Test func roundTripOfTheFormLoginKind() async throws {
        let original = try await LoopbackPortal.start("form-login", settings: ["username": "guest", "password": "croissant"])
        let writer = HARWriter()
        let wrong = try HelperLogicTests.portalLogic(["--account", "guest:baguette"])
        let right = try HelperLogicTests.portalLogic(["--account", "guest:croissant"])
        let recorded = try await blocking {
            let recording: HTTPSend = { (request) throws(HotspotTrafficError) -> HotspotHTTPResponse in
                let response = try original.http(request)
                writer.record(method: request.method, url: request.url, requestHeaders: request.headers.map { ($0.name, $0.value) },
                              requestBody: request.body.isEmpty ? nil : String(decoding: request.body, as: UTF8.self),
                              status: response.status, responseHeaders: response.headers.map { ($0.name, $0.value) }, responseBody: response.text)
                return response
            }
            return (HelperLogicTests.Outcome(wrong.authenticate(recording, ssid: "Cafe")), HelperLogicTests.Outcome(right.authenticate(recording, ssid: "Cafe")))
        }
        original.stop()
        #expect(recorded.0.result == .failure && recorded.1.result == .success, "recording: \(recorded)")
        let har = try HARDocument.parse(try writer.document.encoded())
        let result = try HARImport.convert(har, source: "form-login.har")
        #expect(result.signInEntry != nil && result.refusalEntry != nil, "\(result.warnings)")
        #expect(result.personal.contains { $0.value == "croissant" && $0.replacement == "{{setting:password}}" })
        let written = String(decoding: try result.definition.encoded(), as: UTF8.self)
        #expect(!written.contains("croissant") && !written.contains("baguette"))

        let settings = try Self.definition(har, name: "form-login")
        defer { unlink(settings["definition"] ?? "") }
        let replayed = try await LoopbackPortal.start("recorded", settings: settings)
        defer { replayed.stop() }
        let wrongAgain = try HelperLogicTests.portalLogic(["--account", "guest:baguette"])
        let rightAgain = try HelperLogicTests.portalLogic(["--account", "guest:guest-password"])
        let outcomes = try await blocking {
            (HelperLogicTests.Outcome(wrongAgain.authenticate(replayed.http, ssid: "Cafe")),
             HelperLogicTests.Outcome(rightAgain.authenticate(replayed.http, ssid: "Cafe")))
        }
        #expect(outcomes.0.result == .failure && outcomes.0.reason.contains("401"), "\(outcomes.0)")
        #expect(outcomes.1.result == .success, "\(outcomes.1)")
        #expect(replayed.gate.entries == ["allow 127.0.0.1 30"])
    }
}
