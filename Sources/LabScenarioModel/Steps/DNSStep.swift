import Foundation
import LabTopology

/// `dns: MODE` / `{mode, hotspot}`: the hotspot's DNS: no-answer, refused, servfail, hijack (every name answers
/// with the gateway), private (public names answer with an RFC 1918 address) or normal (`DNSAnswerMode.names`).
public struct DNSStep: ScenarioStepAction {
    public var mode: String
    public var hotspot: String?

    static let kind = StepKind("dns", example: "dns: hijack", replay: .asWritten) { args in
        let modes = DNSAnswerMode.names
        if args.isScalar { return DNSStep(mode: try ScenarioParser.oneOf(args.value, modes, what: "DNS mode"), hotspot: nil) }
        let keys = try args.keys(allowed: ["mode", "hotspot"], required: ["mode"])
        return DNSStep(mode: try ScenarioParser.oneOf(keys.required("mode"), modes, what: "DNS mode"), hotspot: try args.hotspot(keys["hotspot"]))
    }

    public func perform(in context: any StepContext) throws -> String {
        let hotspot = try context.hotspotFor(hotspot)
        return try context.setDNS(hotspot: hotspot.name, mode: mode)
    }
}
