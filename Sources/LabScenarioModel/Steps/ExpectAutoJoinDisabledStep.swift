import Foundation

/// `expect-auto-join-disabled: SSID` / `{ssid: S, disabled: false}`: hotspotd's auto-join-disabled list holds S (or not).
public struct ExpectAutoJoinDisabledStep: ScenarioStepAction {
    public var ssid: String
    public var disabled: Bool

    static let kind = StepKind("expect-auto-join-disabled", example: "expect-auto-join-disabled: Cafe Lumiere", replay: .notReplayed) { args in
        if args.isScalar { return ExpectAutoJoinDisabledStep(ssid: try args.value.nonEmptyString(), disabled: true) }
        let keys = try args.keys(allowed: ["ssid", "disabled"], required: ["ssid"])
        return ExpectAutoJoinDisabledStep(ssid: try keys.required("ssid").nonEmptyString(), disabled: try keys["disabled"]?.bool() ?? true)
    }

    public func perform(in context: any StepContext) throws -> String {
        let list = try context.status()["autoJoinDisabled"]?.arrayValue ?? []
        let isDisabled = list.contains { $0["ssid"]?.stringValue == ssid }
        guard isDisabled == disabled else {
            throw StepFailure("expected auto-join \(disabled ? "disabled" : "enabled") for \(ssid), it is \(isDisabled ? "disabled" : "enabled")")
        }
        return "auto-join \(disabled ? "disabled" : "enabled") for \(ssid)"
    }
}
