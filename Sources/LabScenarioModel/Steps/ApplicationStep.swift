import Foundation
import LabTopology

/// `application: allowed|blocked` / `{expect: ..., url: U}`: a general application in the station gets HTTP 200
/// from U (default the internet's web server), or does not.
public struct ApplicationStep: ScenarioStepAction {
    public var expect: Connectivity
    public var url: String?

    static let kind = StepKind("application", example: "application: allowed", replay: .notReplayed) { args in
        if args.isScalar { return ApplicationStep(expect: try connectivity(args.value), url: nil) }
        let keys = try args.keys(allowed: ["expect", "url"], required: ["expect"])
        return ApplicationStep(expect: try connectivity(keys.required("expect")), url: try keys["url"]?.nonEmptyString())
    }

    static func connectivity(_ field: Field) throws -> Connectivity {
        let value = try ScenarioParser.oneOf(field, Connectivity.allCases.map(\.rawValue), what: "connectivity")
        guard let connectivity = Connectivity(rawValue: value) else { throw field.error("unknown connectivity `\(value)`") }
        return connectivity
    }

    public func perform(in context: any StepContext) throws -> String {
        let target = url ?? "http://\(context.topology.internet.address)/"
        let (code, error) = try context.application(target)
        let allowed = code == 200
        guard allowed == (expect == .allowed) else {
            throw StepFailure("expected the application's GET \(target) to be \(expect.rawValue), it was "
                              + (allowed ? "allowed (HTTP 200)" : "blocked (\(code.map { "HTTP \($0)" } ?? error))")
                              + " in state \(try context.status()["state"]?.stringValue ?? "?")")
        }
        return "application \(expect.rawValue): " + (code.map { "HTTP \($0)" } ?? error)
    }
}
