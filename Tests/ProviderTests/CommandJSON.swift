import HotspotProtocol

/// A command frame as hotspotd sends it.
func commandJSON(id: Int, type: Int, ssid: String = "Cafe", list: [String]? = nil, deadlineMs: Double? = 5000) -> JSON {
    func network(_ ssid: String) -> JSON { ["ssid": .string(ssid), "bssid": "02:00:00:00:01:00", "security": "open"] }
    var o: [String: JSON] = ["type": "command", "id": .number(Double(id)), "commandType": .number(Double(type)), "helper": "app"]
    if let list { o["networkList"] = .array(list.map(network)) } else { o["network"] = network(ssid) }
    if let deadlineMs { o["deadline_ms"] = .number(deadlineMs) }
    return .object(o)
}
