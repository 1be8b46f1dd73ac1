import HotspotCore
import HotspotProtocol

/// The trace names of the machine's events (docs/TRACE.md, `event` records).
extension Event {
    var traceName: String {
        switch self {
        case .associated: "associated"
        case .disassociated: "disassociated"
        case .signalChanged: "signalChanged"
        case .ipUp: "ipUp"
        case .ipDown: "ipDown"
        case .helperRegistered: "helperRegistered"
        case .helperGone: "helperGone"
        case .response: "response"
        case .deadlinePassed: "deadlinePassed"
        case .maintainTimerFired: "maintainTimerFired"
        case .logoffRequested: "logoffRequested"
        case .foreground: "foreground"
        case .scanListShown: "scanListShown"
        }
    }

    var traceDetail: TraceRecord.Event.Detail? {
        switch self {
        case .associated(let n): .init(network: TraceNetwork(n))
        case .signalChanged(let s): .init(signalStrength: s)
        case .helperRegistered(let h, let name): .init(helper: h, displayName: name)
        case .helperGone(let h): .init(helper: h)
        case .response(let r): .init(helper: r.helper, command: Int(r.command), result: r.result.description)
        case .deadlinePassed(let id): .init(command: Int(id))
        case .logoffRequested(let h, let n): .init(network: TraceNetwork(n), helper: h)
        case .foreground(let h): .init(helper: h, helperIsNull: h == nil)
        case .scanListShown(let l): .init(networks: l.map(TraceNetwork.init))
        default: nil
        }
    }
}
