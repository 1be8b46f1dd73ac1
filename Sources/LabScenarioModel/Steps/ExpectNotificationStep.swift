import Foundation

/// `expect-notification` / `expect-notification: H`: a helper (H) posted a user notification.
public struct ExpectNotificationStep: ScenarioStepAction {
    public var helper: String?

    static let kind = StepKind("expect-notification", example: "expect-notification: hotspot-helper-portal", replay: .notReplayed) { args in
        if args.isNull { return ExpectNotificationStep(helper: nil) }
        return ExpectNotificationStep(helper: try args.helper(args.value))
    }

    public func perform(in context: any StepContext) throws -> String {
        let notes = context.readTrace(from: 0).compactMap(\.record.notification)
        let wanted = helper.map(context.helperID)
        guard let note = notes.first(where: { wanted == nil || $0.helper == wanted }) else {
            throw StepFailure("expected a notification\(wanted.map { " from \($0)" } ?? ""), none was posted")
        }
        return "notification \"\(note.title)\": \(note.body)"
    }
}
