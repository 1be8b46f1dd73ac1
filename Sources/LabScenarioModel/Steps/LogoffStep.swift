import Foundation

/// `logoff: H` / `logoff: {helper: H, expect: accepted|refused}`: `logoff(network)` on behalf of the helper.
public struct LogoffStep: ScenarioStepAction {
    public var helper: String
    public var expectAccepted: Bool

    /// Replayed with the helper only: the recording's answer is not the replay's expectation.
    static let kind = StepKind("logoff", example: "logoff: {helper: hotspot-helper-portal, expect: refused}", replay: .rewritten { text in
        guard let helper = text.range(of: "helper: ") else { return text }
        return "logoff: " + text[helper.upperBound...].prefix { $0 != "," && $0 != "}" }
    }) { args in
        if args.isScalar { return LogoffStep(helper: try args.helper(args.value), expectAccepted: true) }
        let keys = try args.keys(allowed: ["helper", "expect"], required: ["helper"])
        let expect = try keys["expect"].map { try ScenarioParser.oneOf($0, ["accepted", "refused"], what: "logoff outcome") } ?? "accepted"
        return LogoffStep(helper: try args.helper(keys.required("helper")), expectAccepted: expect == "accepted")
    }

    public func perform(in context: any StepContext) throws -> String {
        let accepted = try context.logoff(helper: context.helperID(helper))
        guard accepted == expectAccepted else {
            throw StepFailure("expected logoff to be \(expectAccepted ? "accepted" : "refused"), it was \(accepted ? "accepted" : "refused") (state \(try context.status()["state"]?.stringValue ?? "?"))")
        }
        return "logoff \(accepted ? "accepted" : "refused")"
    }
}
