/// How long a step took, in seconds (what a step's result line prints).
public enum StepClock {
    public static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = (ContinuousClock.now - start).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }
}
