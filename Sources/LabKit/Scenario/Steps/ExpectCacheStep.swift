import Foundation

/// `expect-cache: {ssid: S, helper: H | not-captive: true | none: true}`: hotspotd's cache entry for S.
public struct ExpectCacheStep: ScenarioStepAction {
    public var ssid: String
    /// A helper, "not captive", or nil (no entry).
    public var entry: String?

    static let kind = StepKind("expect-cache", example: "expect-cache: {ssid: Cafe Lumiere, none: true}", replay: .notReplayed) { args in
        let keys = try args.keys(allowed: ["ssid", "helper", "not-captive", "none"], required: ["ssid"])
        var entry: String?
        if let h = keys["helper"] { entry = try args.helper(h) }
        if try keys["not-captive"]?.bool() == true { entry = "not captive" }
        if try keys["none"]?.bool() == true { entry = nil }
        return ExpectCacheStep(ssid: try keys.required("ssid").nonEmptyString(), entry: entry)
    }

    public func perform(in context: any StepContext) throws -> String {
        let cache = try context.status()["cache"]?.arrayValue ?? []
        let item = cache.first { $0["ssid"]?.stringValue == ssid }
        let actual: String? = item.map { $0["notCaptive"]?.boolValue == true ? "not captive" : ($0["helper"]?.stringValue ?? "?") }
        let wanted = entry.map { $0 == "not captive" ? $0 : context.helperID($0) }
        guard actual == wanted else {
            throw StepFailure("expected the cache entry for \(ssid) to be \(wanted ?? "none"), actual \(actual ?? "none")")
        }
        return "cache \(ssid): \(actual ?? "none")"
    }
}
