import Foundation
import LabTopology

/// `link: {hotspot, side, latency-ms, jitter-ms, loss-percent, rate-kbit}`: latency, jitter, loss and a rate limit
/// on the hotspot's uplink or radio side (netem); all zero: none.
public struct LinkQualityStep: ScenarioStepAction {
    public var hotspot: String?
    public var side: LinkSide
    public var latencyMS: Int
    public var jitterMS: Int
    public var lossPercent: Double
    public var rateKbit: Int

    static let kind = StepKind("link", example: "link: {loss-percent: 5}", replay: .asWritten) { args in
        let keys = try args.keys(allowed: ["hotspot", "side", "latency-ms", "jitter-ms", "loss-percent", "rate-kbit"])
        let side = try keys["side"].map { field -> LinkSide in
            let name = try ScenarioParser.oneOf(field, LinkSide.allCases.map(\.rawValue), what: "link side")
            guard let side = LinkSide(rawValue: name) else { throw field.error("unknown link side `\(name)`") }
            return side
        } ?? .uplink
        return LinkQualityStep(hotspot: try args.hotspot(keys["hotspot"]), side: side,
                               latencyMS: try keys["latency-ms"]?.int(in: 0...60_000) ?? 0, jitterMS: try keys["jitter-ms"]?.int(in: 0...60_000) ?? 0,
                               lossPercent: try keys["loss-percent"].map { try ScenarioParser.number($0, in: 0...100) } ?? 0,
                               rateKbit: try keys["rate-kbit"]?.int(in: 0...10_000_000) ?? 0)
    }

    public func perform(in context: any StepContext) throws -> String {
        let hotspot = try context.hotspotFor(hotspot)
        return try context.setLinkQuality(hotspot: hotspot.name, side: side, latencyMS: latencyMS, jitterMS: jitterMS,
                                          lossPercent: lossPercent, rateKbit: rateKbit)
    }
}
