import Foundation

/// `join: SSID` / `join: {ssid: S, password: P}`: the user joins by hand (didAutoJoin false).
public struct JoinStep: ScenarioStepAction {
    public var ssid: String
    public var password: String?

    static let kind = StepKind("join", example: "join: Cafe Lumiere", replay: .asWritten) { args in
        if args.isScalar { return JoinStep(ssid: try args.value.nonEmptyString(), password: nil) }
        let keys = try args.keys(allowed: ["ssid", "password"], required: ["ssid"])
        return JoinStep(ssid: try keys.required("ssid").nonEmptyString(), password: try keys["password"]?.string())
    }

    public func perform(in context: any StepContext) throws -> String {
        try context.join(ssid, password: password)
        return "join \(ssid)"
    }
}
