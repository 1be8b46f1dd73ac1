import Foundation
import HotspotSystem

/// `sleep: SECONDS`: wait. `sleep: {seconds: S, since: state}`: wait until S seconds after the trace time of the
/// transition the last `wait-state` matched, however late the runner saw it (a loaded machine); no wait when that time
/// has passed, and S seconds from now when the last wait matched none (hotspotd was already in the state). Replay
/// writes the second form for the recorded pause between a state and the user's or the lab's next action, so the
/// action keeps its place against hotspotd's timers. Not replayed: the replay waits the recorded pauses itself.
public struct SleepStep: ScenarioStepAction {
    public var seconds: Double
    /// Counted from the last matched state's trace time rather than from now.
    public var sinceState = false

    static let kind = StepKind("sleep", example: "sleep: 1", replay: .notReplayed) { args in
        if args.isScalar { return SleepStep(seconds: try ScenarioParser.number(args.value, in: 0...600)) }
        let keys = try args.keys(allowed: ["seconds", "since"], required: ["seconds"])
        _ = try keys["since"].map { try ScenarioParser.oneOf($0, ["state"], what: "since") }
        return SleepStep(seconds: try ScenarioParser.number(keys.required("seconds"), in: 0...600), sinceState: keys["since"] != nil)
    }

    public func perform(in context: any StepContext) throws -> String {
        guard sinceState, let line = context.matchedTransition, line >= 0,
              let entered = context.readTrace(from: line).first, entered.record.transition != nil, let t = entered.time else {
            context.pause(seconds)
            return sinceState ? "slept \(seconds) s (no state matched by the last wait: counted from now)" : "slept \(seconds) s"
        }
        let left = t / 1e9 + seconds - context.monotonicNow().secondsDouble
        guard left > 0 else {
            return String(format: "no sleep: %.2f s after the state (seq %d) had passed %.2f s before", seconds, entered.seq, -left)
        }
        context.pause(left)
        return String(format: "slept %.2f s, to %.2f s after the state (seq %d)", left, seconds, entered.seq)
    }
}
