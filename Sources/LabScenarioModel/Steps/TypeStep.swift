import Foundation

/// `type: {helper: H, text: T}`: the user types into the helper's UI.
public struct TypeStep: ScenarioStepAction {
    public var helper: String
    public var text: String

    static let kind = StepKind("type", example: "type: {helper: hotspot-helper-portal, text: abc}", replay: .asWritten) { args in
        let keys = try args.keys(allowed: ["helper", "text"], required: ["helper", "text"])
        return TypeStep(helper: try args.helper(keys.required("helper")), text: try keys.required("text").string())
    }

    public func perform(in context: any StepContext) throws -> String {
        guard context.helperPID(helper) != nil else { throw context.noHelper(helper) }
        try context.type(text, intoHelper: helper)
        return "typed into \(helper)"
    }
}
