import Foundation
import HotspotCore
import HotspotProtocol

/// The readable timeline of a run, from hotspotd's trace.
public enum Timeline {
    /// Lines as parsed from a trace file (tests, reports that hold JSON): read as records first.
    public static func build(_ records: [JSON]) -> [TimelineEntry] { build(records.map(TraceEntry.init(json:))) }

    public static func build(_ records: [TraceEntry]) -> [TimelineEntry] {
        guard let t0 = records.first?.time else { return [] }
        var entries: [TimelineEntry] = []
        func add(_ r: TraceEntry, _ kind: String, _ text: String) {
            entries.append(TimelineEntry(t: ((r.time ?? t0) - t0) / 1e9, kind: kind, text: text))
        }
        for r in records {
            switch r.record {
            case .transition(let t):
                add(r, "state", "\(t.from) → \(t.to)" + (t.bestHelper.map { " (best helper \($0))" } ?? ""))
            case .command(let c):
                var text = "→ \(c.commandType) to \(c.helper)"
                if let n = c.network, n.ssid.text != nil || n.ssid.hex != nil {
                    text += " [\(n.ssid.inline)\(n.didJustJoin == true ? ", didJustJoin" : "")]"
                }
                add(r, "command", text)
            case .response(let a):
                let latency = (a.latency_us ?? 0) / 1000
                var text = "← \(a.commandType ?? "?") \(a.result) from \(a.helper)"
                if a.commandType == "evaluate", let n = a.network, n.confidence != nil {
                    text += " (confidence \(n.confidenceName ?? "?"))"
                }
                add(r, "response", text + String(format: " in %.1f ms", latency))
            case .event(let e):
                switch e.event {
                case "associated":
                    let n = e.detail?.network
                    add(r, "event", "associated with \(n?.ssid.inline ?? "?") \(n?.bssid ?? "")"
                        + (n?.didAutoJoin == true ? " (auto-join)" : " (joined by the user)"))
                case "disassociated", "ipUp", "ipDown", "maintainTimerFired":
                    add(r, "event", e.event + (e.origin.via.map { " (\($0))" } ?? ""))
                case "foreground":
                    add(r, "user", "user brings \(e.detail?.helper ?? "no helper") to the foreground")
                case "deadlinePassed":
                    add(r, "event", "deadline passed for command \(e.detail?.command ?? -1)")
                case "helperGone":
                    add(r, "event", "helper \(e.detail?.helper ?? "?") gone")
                default: break
                }
            case .network(let n):
                add(r, "network", n.action)
            case .notification(let n):
                add(r, "notification", "\(n.helper) posts \"\(n.title)\"")
            case .irregular(let i):
                add(r, "irregular", i.message ?? "?")
            case .rejected(let x):
                add(r, "rejected", x.message ?? "?")
            case .cache(let c):
                add(r, "cache", "cache \(c.network.ssid.inline): " + (c.action == "remove" ? "removed" : (c.helper ?? "not captive")))
            case .autoJoin(let a):
                add(r, "autoJoin", "auto-join \(a.action)d for \(a.network.ssid.inline)")
            case .station(let s):
                if s.action == "dhcpLease" {
                    add(r, "station", "DHCP lease \(s.lease?["ip"] ?? "?")" + String(format: " in %.0f ms", s.latency_ms ?? 0))
                } else if s.action == "join" {
                    add(r, "user", "user joins \(s.ssid.inline) (password from \(s.passwordFrom ?? "?"))")
                } else if s.action == "roamed" {
                    add(r, "station", "roamed from \(s.from ?? "?") to \(s.to ?? "?")")
                } else if s.action == "signal" {
                    add(r, "station", String(format: "signal %.0f dBm (was %@)", s.rssi ?? 0,
                                             s.previousRSSI.map { String(format: "%.0f dBm", $0) } ?? "?"))
                } else if ["leave", "autoJoin"].contains(s.action) {
                    add(r, "user", s.action == "leave" ? "user leaves the network" : "device auto-joins known networks")
                }
            case .logoffRequest(let l):
                add(r, "user", "logoff requested for \(l.helper)")
            case .logoffAnswer(let l):
                add(r, "event", "logoff \(l.accepted ? "accepted" : "refused")")
            case .scanList(let l):
                let claimed = l.networks.filter { $0.annotation != nil }
                add(r, "scanList", "scan list shown: " + claimed.map { "\($0.network.ssid.inline) — \($0.annotation ?? "")" }.joined(separator: ", "))
            default:
                break
            }
        }
        return entries
    }

    public static func render(_ entries: [TimelineEntry]) -> [String] {
        entries.map { String(format: "%8.3f s  ", $0.t) + $0.text }
    }
}
