import Foundation
import HotspotCore
import HotspotProtocol
import LabTopology

/// `expect-cache: {ssid: S, helper: H | not-captive: true | none: true}`: hotspotd's cache entry for S
/// (`ssid_hex: 436166e9` instead of `ssid:` for an SSID that is not UTF-8: entries compare by bytes).
public struct ExpectCacheStep: ScenarioStepAction {
    public var ssid: SSID
    /// A helper, "not captive", or nil (no entry).
    public var entry: String?

    static let kind = StepKind("expect-cache", example: "expect-cache: {ssid: Cafe Lumiere, none: true}", replay: .notReplayed) { args in
        let keys = try args.keys(allowed: ["ssid", "ssid_hex", "helper", "not-captive", "none"])
        var entry: String?
        if let h = keys["helper"] { entry = try args.helper(h) }
        if try keys["not-captive"]?.bool() == true { entry = "not captive" }
        if try keys["none"]?.bool() == true { entry = nil }
        return ExpectCacheStep(ssid: try Reader.ssid(keys), entry: entry)
    }

    public func perform(in context: any StepContext) throws -> String {
        let cache = try context.status()["cache"]?.arrayValue ?? []
        let item = cache.first { SSID(wire: $0) == ssid }
        let actual: String? = item.map { $0["notCaptive"]?.boolValue == true ? "not captive" : ($0["helper"]?.stringValue ?? "?") }
        let wanted = entry.map { $0 == "not captive" ? $0 : context.helperID($0) }
        let name = SSIDText.inline(ssid)
        guard actual == wanted else {
            throw StepFailure("expected the cache entry for \(name) to be \(wanted ?? "none"), actual \(actual ?? "none")")
        }
        return "cache \(name): \(actual ?? "none")"
    }
}
