import Foundation
import HotspotCore
import HotspotProtocol

/// The readable timeline of a run, from hotspotd's trace.
public enum Timeline {
    /// The SSID of a record or network object (`ssid_hex` first), as it may appear in a line: escaped if
    /// anything in it could break the line or the terminal (issue 17).
    static func ssid(_ json: JSON?) -> String {
        SSIDText.inline(wire: json)
    }

    public static func build(_ records: [JSON]) -> [TimelineEntry] {
        guard let t0 = records.first?["t_ns"]?.doubleValue else { return [] }
        var entries: [TimelineEntry] = []
        func add(_ r: JSON, _ kind: String, _ text: String) {
            entries.append(TimelineEntry(t: ((r["t_ns"]?.doubleValue ?? t0) - t0) / 1e9, kind: kind, text: text))
        }
        for r in records {
            switch r["kind"]?.stringValue ?? "" {
            case "transition":
                add(r, "state", "\(r["from"]?.stringValue ?? "?") → \(r["to"]?.stringValue ?? "?")"
                    + (r["bestHelper"]?.stringValue.map { " (best helper \($0))" } ?? ""))
            case "command":
                var text = "→ \(r["commandType"]?.stringValue ?? "?") to \(r["helper"]?.stringValue ?? "?")"
                if let n = r["network"], n["ssid"] != nil || n["ssid_hex"] != nil {
                    text += " [\(ssid(n))\(n["didJustJoin"]?.boolValue == true ? ", didJustJoin" : "")]"
                }
                add(r, "command", text)
            case "response":
                let latency = (r["latency_us"]?.doubleValue ?? 0) / 1000
                var text = "← \(r["commandType"]?.stringValue ?? "?") \(r["result"]?.stringValue ?? "?") from \(r["helper"]?.stringValue ?? "?")"
                if r["commandType"]?.stringValue == "evaluate", let c = r["network"]?["confidence"] {
                    text += " (confidence \(c.intValue.flatMap { Confidence(rawValue: $0)?.description } ?? c.stringValue ?? "?"))"
                }
                add(r, "response", text + String(format: " in %.1f ms", latency))
            case "event":
                let name = r["event"]?.stringValue ?? "?"
                switch name {
                case "associated":
                    let n = r["detail"]?["network"]
                    add(r, "event", "associated with \(ssid(n)) \(n?["bssid"]?.stringValue ?? "")"
                        + (n?["didAutoJoin"]?.boolValue == true ? " (auto-join)" : " (joined by the user)"))
                case "disassociated", "ipUp", "ipDown", "maintainTimerFired":
                    add(r, "event", name + (r["via"]?.stringValue.map { " (\($0))" } ?? ""))
                case "foreground":
                    add(r, "user", "user brings \(r["detail"]?["helper"]?.stringValue ?? "no helper") to the foreground")
                case "deadlinePassed":
                    add(r, "event", "deadline passed for command \(r["detail"]?["command"]?.intValue ?? -1)")
                case "helperGone":
                    add(r, "event", "helper \(r["detail"]?["helper"]?.stringValue ?? "?") gone")
                default: break
                }
            case "network":
                add(r, "network", r["action"]?.stringValue ?? "?")
            case "notification":
                add(r, "notification", "\(r["helper"]?.stringValue ?? "?") posts \"\(r["title"]?.stringValue ?? "")\"")
            case "irregular", "rejected":
                add(r, r["kind"]?.stringValue ?? "?", r["message"]?.stringValue ?? "?")
            case "cache":
                add(r, "cache", "cache \(ssid(r["network"])): "
                    + (r["action"]?.stringValue == "remove" ? "removed" : (r["helper"]?.stringValue ?? "not captive")))
            case "autoJoin":
                add(r, "autoJoin", "auto-join \(r["action"]?.stringValue ?? "?")d for \(ssid(r["network"]))")
            case "station":
                let action = r["action"]?.stringValue ?? "?"
                if action == "dhcpLease" {
                    add(r, "station", "DHCP lease \(r["lease"]?["ip"]?.stringValue ?? "?")" + String(format: " in %.0f ms", r["latency_ms"]?.doubleValue ?? 0))
                } else if action == "join" {
                    add(r, "user", "user joins \(ssid(r)) (password from \(r["passwordFrom"]?.stringValue ?? "?"))")
                } else if action == "roamed" {
                    add(r, "station", "roamed from \(r["from"]?.stringValue ?? "?") to \(r["to"]?.stringValue ?? "?")")
                } else if action == "signal" {
                    add(r, "station", String(format: "signal %.0f dBm (was %@)", r["rssi"]?.doubleValue ?? 0,
                                             r["previousRSSI"]?.doubleValue.map { String(format: "%.0f dBm", $0) } ?? "?"))
                } else if ["leave", "autoJoin"].contains(action) {
                    add(r, "user", action == "leave" ? "user leaves the network" : "device auto-joins known networks")
                }
            case "logoffRequest":
                add(r, "user", "logoff requested for \(r["helper"]?.stringValue ?? "?")")
            case "logoffAnswer":
                add(r, "event", "logoff \(r["accepted"]?.boolValue == true ? "accepted" : "refused")")
            case "scanList":
                let claimed = (r["networks"]?.arrayValue ?? []).filter { $0["annotation"]?.stringValue != nil }
                add(r, "scanList", "scan list shown: " + claimed.map { "\(ssid($0)) — \($0["annotation"]?.stringValue ?? "")" }.joined(separator: ", "))
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
