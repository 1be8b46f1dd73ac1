import Foundation
import HotspotCore
import LabTopology

/// `join: SSID` / `join: {ssid: S, password: P}` / `join: {ssid_hex: 436166e9}` (an SSID that is not UTF-8,
/// as its bytes): the user joins by hand (didAutoJoin false).
public struct JoinStep: ScenarioStepAction {
    public var ssid: SSID
    public var password: String?

    static let kind = StepKind("join", example: "join: Cafe Lumiere", replay: .asWritten) { args in
        if args.isScalar { return JoinStep(ssid: SSID(try args.value.nonEmptyString()), password: nil) }
        let keys = try args.keys(allowed: ["ssid", "ssid_hex", "password"])
        return JoinStep(ssid: try Reader.ssid(keys), password: try keys["password"]?.string())
    }

    public func perform(in context: any StepContext) throws -> String {
        try context.join(ssid, password: password)
        return "join \(SSIDText.inline(ssid))"
    }
}
