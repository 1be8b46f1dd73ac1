// The payload of a record when it is of one kind, else nil: `entries.compactMap { $0.record.transition?.to }`.
// One line per case of `TraceRecord` (a new kind adds its line here too).

extension TraceRecord {
    public var start: Start? { if case .start(let p) = self { p } else { nil } }
    public var stop: Stop? { if case .stop(let p) = self { p } else { nil } }
    public var warning: Warning? { if case .warning(let p) = self { p } else { nil } }
    public var stateTrimmed: StateTrimmed? { if case .stateTrimmed(let p) = self { p } else { nil } }
    public var traceLoss: TraceLoss? { if case .traceLoss(let p) = self { p } else { nil } }
    public var connectionLimit: ConnectionLimit? { if case .connectionLimit(let p) = self { p } else { nil } }
    public var connect: Connect? { if case .connect(let p) = self { p } else { nil } }
    public var disconnect: Disconnect? { if case .disconnect(let p) = self { p } else { nil } }
    public var event: Event? { if case .event(let p) = self { p } else { nil } }
    public var transition: Transition? { if case .transition(let p) = self { p } else { nil } }
    public var command: Command? { if case .command(let p) = self { p } else { nil } }
    public var response: Response? { if case .response(let p) = self { p } else { nil } }
    public var cancel: Cancel? { if case .cancel(let p) = self { p } else { nil } }
    public var rejected: Rejected? { if case .rejected(let p) = self { p } else { nil } }
    public var irregular: Irregular? { if case .irregular(let p) = self { p } else { nil } }
    public var protocolError: ProtocolErrorRecord? { if case .protocolError(let p) = self { p } else { nil } }
    public var timer: Timer? { if case .timer(let p) = self { p } else { nil } }
    public var maintainTimer: MaintainTimer? { if case .maintainTimer(let p) = self { p } else { nil } }
    public var network: NetworkAction? { if case .network(let p) = self { p } else { nil } }
    public var hook: Hook? { if case .hook(let p) = self { p } else { nil } }
    public var autoJoin: AutoJoin? { if case .autoJoin(let p) = self { p } else { nil } }
    public var cache: Cache? { if case .cache(let p) = self { p } else { nil } }
    public var traceRotated: TraceRotated? { if case .traceRotated(let p) = self { p } else { nil } }
    public var persist: Persist? { if case .persist(let p) = self { p } else { nil } }
    public var logoffRequest: LogoffRequest? { if case .logoffRequest(let p) = self { p } else { nil } }
    public var logoffAnswer: LogoffAnswer? { if case .logoffAnswer(let p) = self { p } else { nil } }
    public var notification: Notification? { if case .notification(let p) = self { p } else { nil } }
    public var helperReport: HelperReport? { if case .helperReport(let p) = self { p } else { nil } }
    public var scanList: ScanList? { if case .scanList(let p) = self { p } else { nil } }
    public var overloaded: Overloaded? { if case .overloaded(let p) = self { p } else { nil } }
    public var error: Error? { if case .error(let p) = self { p } else { nil } }
    public var station: Station? { if case .station(let p) = self { p } else { nil } }
    public var userAction: UserAction? { if case .userAction(let p) = self { p } else { nil } }
    public var labAction: LabActionRecord? { if case .labAction(let p) = self { p } else { nil } }
    public var managerSet: ManagerSet? { if case .managerSet(let p) = self { p } else { nil } }
    public var evaluatedSSID: EvaluatedSSID? { if case .evaluatedSSID(let p) = self { p } else { nil } }
    public var providerLaunched: ProviderLaunched? { if case .providerLaunched(let p) = self { p } else { nil } }
    public var providerRegistered: ProviderRegistered? { if case .providerRegistered(let p) = self { p } else { nil } }
    public var providerStarted: ProviderStarted? { if case .providerStarted(let p) = self { p } else { nil } }
    public var providerStopped: ProviderStopped? { if case .providerStopped(let p) = self { p } else { nil } }
    public var providerStoppedAck: ProviderStoppedAck? { if case .providerStoppedAck(let p) = self { p } else { nil } }
    public var providerKilled: ProviderKilled? { if case .providerKilled(let p) = self { p } else { nil } }
    public var providerExited: ProviderExited? { if case .providerExited(let p) = self { p } else { nil } }
    public var providerNoAnswer: ProviderNoAnswer? { if case .providerNoAnswer(let p) = self { p } else { nil } }
}

extension TraceRecord {
    /// The app and role of a provider's record (`provider...` kinds); nil for other kinds.
    public var provider: (app: String, role: String)? {
        switch self {
        case .providerLaunched(let p): (p.app, p.role)
        case .providerRegistered(let p): (p.app, p.role)
        case .providerStarted(let p): (p.app, p.role)
        case .providerStopped(let p): (p.app, p.role)
        case .providerStoppedAck(let p): (p.app, p.role)
        case .providerKilled(let p): (p.app, p.role)
        case .providerExited(let p): (p.app, p.role)
        case .providerNoAnswer(let p): (p.app, p.role)
        // A helper report carries the app of a provider that reported (its role is not in it).
        case .helperReport(let p): p.app.map { ($0, "") }
        default: nil
        }
    }
}
