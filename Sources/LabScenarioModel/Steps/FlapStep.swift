import Foundation
import HotspotCore

/// `flap: {count, min-seconds, max-seconds, seed}`: the station drops and re-joins `count` times at seeded
/// random intervals, as devices do when they sleep.
public struct FlapStep: ScenarioStepAction {
    public var count: Int
    public var minSeconds: Double
    public var maxSeconds: Double
    public var seed: UInt64

    static let kind = StepKind("flap", example: "flap: {count: 1}", replay: .asWritten) { args in
        let keys = try args.keys(allowed: ["count", "min-seconds", "max-seconds", "seed"], required: ["count"])
        let low = try keys["min-seconds"].map { try ScenarioParser.number($0, in: 0...600) } ?? 1
        let high = try keys["max-seconds"].map { try ScenarioParser.number($0, in: 0...600) } ?? 5
        guard low <= high else { throw try keys.required("max-seconds").error("expected max-seconds >= min-seconds (\(low)), found \(high)") }
        return FlapStep(count: try keys.required("count").int(in: 1...100), minSeconds: low, maxSeconds: high,
                        seed: UInt64(try keys["seed"]?.int(in: 0...Int(Int32.max)) ?? 1))
    }

    public func perform(in context: any StepContext) throws -> String {
        context.matchedTransition = nil  // its waits are its own: a later `sleep: {since: state}` counts from now
        var generator = SplitMix64(seed: seed)
        var intervals: [String] = []
        for _ in 0..<count {
            try context.leave()
            // Bounds for a state that never comes (each wait ends at once on it): above the 45 s command deadline a correct
            // helper may use at time scale 1 (they were 20 and 30 s).
            context.waitCursor = try context.waitForState("Inactive", after: context.waitCursor, timeout: .seconds(120))
            let away = minSeconds + (maxSeconds - minSeconds) * generator.nextUnit()
            context.pause(away)
            try context.autoJoin()
            context.waitCursor = try context.waitForState("Authenticated", after: context.waitCursor, timeout: .seconds(120))
            let stay = minSeconds + (maxSeconds - minSeconds) * generator.nextUnit()
            context.pause(stay)
            intervals.append(String(format: "away %.1f s, back %.1f s", away, stay))
        }
        return "flapped \(count) times (seed \(seed)): " + intervals.joined(separator: "; ")
    }
}
