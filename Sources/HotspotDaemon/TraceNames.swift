import HotspotCore
import HotspotProtocol

/// The trace names of the machine's events (docs/TRACE.md, `event` records).
extension Event {
    var traceName: JSON {
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

    var traceDetail: JSON? {
        switch self {
        case .associated(let n): ["network": n.wire]
        case .signalChanged(let s): ["signalStrength": .number(s)]
        case .helperRegistered(let h, let name): ["helper": .string(h), "displayName": .string(name)]
        case .helperGone(let h): ["helper": .string(h)]
        case .response(let r): ["helper": .string(r.helper), "command": .number(Double(r.command)), "result": .string(r.result.description)]
        case .deadlinePassed(let id): ["command": .number(Double(id))]
        case .logoffRequested(let h, let n): ["helper": .string(h), "network": n.wire]
        case .foreground(let h): ["helper": h.map(JSON.string) ?? .null]
        case .scanListShown(let l): ["networks": .array(l.map(\.wire))]
        default: nil
        }
    }
}
