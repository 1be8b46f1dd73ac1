import HotspotSystem

/// How long the lab waits for a helper to register with hotspotd, decided by what the helper does and not by the
/// machine's speed (issue 25: a verdict may depend only on what the helper did). iOS sets no time for
/// `NEHotspotHelper.register`; the lab must end a run some time, and a fixed 20 s was a verdict a slow enough machine
/// could change. So it gives up on a helper that is alive but not registered only when
/// - it has sat idle for `quiet` after at least `floor`: neither it nor a descendant spent CPU or waited on a run
///   queue for one (`ProcessTree.Usage`). It waits for something that is not coming, however fast the machine. A
///   helper starved by a busy machine is runnable, so it is never idle (CI run of stop 45: a spinning helper in a
///   loaded cgroup got no CPU for 1.5 s and was judged idle, the wrong verdict). Nor is one blocked on I/O in the
///   kernel (state D: its binary paged in from a busy disk or the VM's 9p share);
/// - it has spent `cpuBudget` CPU-seconds without registering: it computes, but not towards a registration (a
///   Swift helper's start costs a fraction of a second of CPU, even under emulation);
/// - or `cap` has passed in any case (a helper that polls lightly forever).
/// A helper that is slow only because the machine is busy keeps spending CPU, or waiting for it, and is waited for. A
/// helper that exits before registering is named at once by the caller. Pure: the caller samples the clock and the
/// helper's usage.
public struct RegistrationPatience: Sendable, Equatable {
    public var floor: Double
    public var quiet: Double
    public var cpuBudget: Double
    public var cap: Double

    public init(floor: Double = 20, quiet: Double = 5, cpuBudget: Double = 10, cap: Double = 180) {
        self.floor = floor
        self.quiet = quiet
        self.cpuBudget = cpuBudget
        self.cap = cap
    }

    /// What the watch has seen of one helper: its CPU and its run-queue wait at the last samples that grew them,
    /// and when it last computed or wanted to.
    public struct Watch: Sendable, Equatable {
        public var cpu: Double = 0
        public var waited: Double = 0
        public var grewAt: Double = 0
        public init() {}
    }

    public enum Decision: Sendable, Equatable {
        case wait
        /// Give up; the text says why, for "not registered with hotspotd: ...".
        case giveUp(String)
    }

    /// The decision at `elapsed` seconds since the helper was started, its tree's usage being `usage` (nil: not
    /// sampled this time). CPU spent, run-queue wait grown, a runnable thread or one blocked on I/O is activity.
    public func decide(elapsed: Double, usage: ProcessTree.Usage?, watch: inout Watch) -> Decision {
        if let usage {
            if usage.cpu > watch.cpu || usage.waited > watch.waited || usage.runnable || usage.blockedOnIO { watch.grewAt = elapsed }
            watch.cpu = max(watch.cpu, usage.cpu)
            watch.waited = max(watch.waited, usage.waited)
        }
        if watch.cpu >= cpuBudget {
            return .giveUp("spent \(Self.text(watch.cpu)) s of CPU in \(Self.text(elapsed)) s without registering (at most \(Self.text(cpuBudget)) s of CPU)")
        }
        if elapsed >= cap {
            return .giveUp("not registered within \(Self.text(cap)) s, though it kept computing or waiting for a CPU (\(Self.text(watch.cpu)) s of CPU)")
        }
        if elapsed >= floor && elapsed - watch.grewAt >= quiet {
            return .giveUp("not registered within \(Self.text(elapsed)) s, idle (neither computing nor waiting for a CPU) for the last \(Self.text(elapsed - watch.grewAt)) s "
                           + "(\(Self.text(watch.cpu)) s of CPU in all)")
        }
        return .wait
    }

    static func text(_ seconds: Double) -> String {
        let tenths = (seconds * 10).rounded() / 10
        return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
    }
}
