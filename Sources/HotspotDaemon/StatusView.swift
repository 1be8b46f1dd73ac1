import HotspotCore
import HotspotProtocol

/// The control API's `status` answer (docs/PROTOCOL.md).
extension DaemonCore {
    public var status: JSON { .object(statusFields) }

    var statusFields: [String: JSON] {
        var o: [String: JSON] = [
            "type": "status",
            "state": .string(machine.state.rawValue),
            "interface": .string(options.interface),
            "association": machine.association.map(\.wire) ?? .null,
            "hasIP": .bool(machine.hasIP),
            "ipReleased": .bool(machine.ipReleased),
            "bestHelper": machine.bestHelper.map(JSON.string) ?? .null,
            "excludeList": .array(machine.excludeList.map(JSON.string)),
            "foreground": machine.foregroundHelper.map(JSON.string) ?? .null,
            "maintainTimerArmed": .bool(machine.maintainTimerArmed),
            "pid": .number(Double(pid)),
        ]
        let p = persistentState.json
        o["cache"] = p["cache"] ?? .array([])
        o["autoJoinDisabled"] = p["autoJoinDisabled"] ?? .array([])
        o["helpers"] = .array(machine.helpers.map { h in
            var e: [String: JSON] = ["identifier": .string(h.id), "displayName": .string(h.displayName)]
            if let peer = helperConnections[h.id]?.peer {
                e["pid"] = .number(Double(peer.pid))
                e["uid"] = .number(Double(peer.uid))
            }
            return .object(e)
        })
        o["pending"] = .array(machine.pending.map { c in
            ["id": .number(Double(c.id)), "commandType": .string(c.type.description), "helper": .string(c.helper)]
        })
        o["scanList"] = scanListVisible ? lastScanList.map { .array($0.map(\.wire)) } ?? .null : .null
        o["notifications"] = .array(notifications)
        o["apps"] = appsStatus
        o["connections"] = .object([
            "open": .number(Double(connections.count)),
            "refused": .object(Dictionary(uniqueKeysWithValues: refusedConnections.map { ($0.key.rawValue, JSON.number(Double($0.value))) })),
            "acceptFailures": .object(Dictionary(uniqueKeysWithValues: acceptFailures.map { ($0.key.rawValue, JSON.number(Double($0.value))) })),
        ])
        o["persistence"] = persistence.json(traceFile: options.traceFile, stateFile: options.stateFile)
        return o
    }
}
