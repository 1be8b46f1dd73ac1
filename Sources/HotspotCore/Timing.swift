/// Every deadline and interval of the subsystem. The defaults are docs/SPEC.md's; labs scale them.
///
/// The machine never reads a clock: it emits these durations (already scaled) in its effects,
/// and the driver arms the timers and feeds back `deadlinePassed` / `maintainTimerFired`.
public struct Timing: Sendable, Hashable, Codable {
    public var filterScanListDeadline: Duration
    public var evaluateDeadline: Duration
    public var authenticateDeadline: Duration
    /// nil: presentUI has no deadline (the user takes as long as they take).
    public var presentUIDeadline: Duration?
    public var maintainDeadline: Duration
    public var logoffDeadline: Duration
    /// How long after Authenticated the maintain timer fires.
    public var maintainInterval: Duration
    /// How often filterScanList is repeated while the scan list is shown.
    public var scanListRefresh: Duration
    /// Multiplies every duration above: 0.001 turns 45 s into 45 ms.
    public var scale: Double

    public static let standard = Timing()

    public init(
        filterScanListDeadline: Duration = .seconds(45),
        evaluateDeadline: Duration = .seconds(45),
        authenticateDeadline: Duration = .seconds(45),
        presentUIDeadline: Duration? = nil,
        maintainDeadline: Duration = .seconds(45),
        logoffDeadline: Duration = .seconds(45),
        maintainInterval: Duration = .seconds(300),
        scanListRefresh: Duration = .seconds(5),
        scale: Double = 1.0
    ) {
        self.filterScanListDeadline = filterScanListDeadline
        self.evaluateDeadline = evaluateDeadline
        self.authenticateDeadline = authenticateDeadline
        self.presentUIDeadline = presentUIDeadline
        self.maintainDeadline = maintainDeadline
        self.logoffDeadline = logoffDeadline
        self.maintainInterval = maintainInterval
        self.scanListRefresh = scanListRefresh
        self.scale = scale
    }

    /// The standard timing with every duration multiplied by `scale`.
    public static func scaled(_ scale: Double) -> Timing { Timing(scale: scale) }

    public func scaled(_ duration: Duration) -> Duration {
        scale == 1.0 ? duration : duration * scale
    }

    /// The scaled deadline of a command, nil when it has none.
    public func deadline(for type: CommandType) -> Duration? {
        let raw: Duration?
        switch type {
        case .none: raw = nil
        case .filterScanList: raw = filterScanListDeadline
        case .evaluate: raw = evaluateDeadline
        case .authenticate: raw = authenticateDeadline
        case .presentUI: raw = presentUIDeadline
        case .maintain: raw = maintainDeadline
        case .logoff: raw = logoffDeadline
        }
        // Not `raw.map(scaled)`: a method reference as a closure allocates its context on every call.
        guard let raw else { return nil }
        return scaled(raw)
    }

    public var scaledMaintainInterval: Duration { scaled(maintainInterval) }
    public var scaledScanListRefresh: Duration { scaled(scanListRefresh) }
}
