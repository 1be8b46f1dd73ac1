import Foundation

/// `foreground: HELPER` / `foreground: null`: the user taps the helper's notification.
public struct ForegroundStep: ScenarioStepAction {
    public var helper: String?

    static let kind = StepKind("foreground", example: "foreground: hotspot-helper-portal", replay: .asWritten) { args in
        ForegroundStep(helper: args.isNull ? nil : try args.helper(args.value))
    }

    public func perform(in context: any StepContext) throws -> String {
        try context.foreground(helper.map(context.helperID))
        return "foreground \(helper.map(context.helperID) ?? "none")"
    }
}
