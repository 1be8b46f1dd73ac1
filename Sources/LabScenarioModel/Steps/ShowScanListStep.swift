import Foundation
import HotspotProtocol

/// `show-scan-list` / `show-scan-list: {expect: {SSID: Display Name, SSID2: null}}`: wpa_supplicant scans, the list
/// goes to hotspotd (filterScanList to every helper); optionally the annotations expected (nil: none).
public struct ShowScanListStep: ScenarioStepAction {
    public var expect: [ExpectedAnnotation]

    public struct ExpectedAnnotation: Sendable {
        public var ssid: String
        public var annotation: String?
    }

    /// Replayed without the original run's expectations.
    static let kind = StepKind("show-scan-list", example: "show-scan-list: {expect: {Cafe Lumiere: Portal Login}}", replay: .rewritten { _ in "show-scan-list" }) { args in
        if args.isNull { return ShowScanListStep(expect: []) }
        let keys = try args.keys(allowed: ["expect"])
        guard let expect = keys["expect"], case .mapping(let m) = expect.node else {
            return ShowScanListStep(expect: [])
        }
        return ShowScanListStep(expect: try m.map { key, value in
            let f = expect.child(key.string ?? "?", value)
            return ExpectedAnnotation(ssid: key.string ?? "", annotation: ScenarioParser.isNull(f) ? nil : try f.string())
        })
    }

    public func perform(in context: any StepContext) throws -> String {
        let list = try context.showScanList()
        let lines = Self.render(scanList: list)
        for item in expect {
            guard let entry = list.first(where: { $0.network.ssid.text == item.ssid }) else {
                throw StepFailure("expected \(item.ssid) in the scan list; the list shows: \(lines.joined(separator: "; "))")
            }
            let actual = entry.annotation
            guard actual == item.annotation else {
                throw StepFailure("expected \(item.ssid) annotated \(item.annotation.map { "\"\($0)\"" } ?? "with nothing"), "
                                  + "actual \(actual.map { "\"\($0)\"" } ?? "nothing")")
            }
        }
        return "scan list:\n" + lines.map { "      " + $0 }.joined(separator: "\n")
    }

    /// The scan list as a person sees it: one line per network with its helper's annotation.
    public static func render(scanList: [TraceScanListEntry]) -> [String] {
        scanList.map { entry in
            let ssid = entry.network.ssid.inline
            let secure = entry.network.isSecure == true || (entry.network.security ?? "open") != "open"
            var line = (secure ? "🔒 " : "   ") + ssid
            if let annotation = entry.annotation { line += "  — \(annotation)" }
            return line
        }
    }
}
