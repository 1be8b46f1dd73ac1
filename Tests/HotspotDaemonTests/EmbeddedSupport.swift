import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Testing

/// Helpers for tests on `EmbeddedDaemon`: the test plays the helpers and the control client.
extension EmbeddedDaemon {
    /// A control client connected (its replies read as they come).
    func control() -> Peer { connect(.control) }

    /// The state machine's state, read through the control socket's `status`.
    func status(_ ctl: Peer) throws -> JSON {
        try #require(try ctl.request(.status))
    }

    /// Associates with `network` and reports IP, as the lab does over the control socket.
    func join(_ ctl: Peer, _ network: HotspotNetwork) throws {
        #expect(try ctl.request(.associate(network))?["type"]?.stringValue == "ok")
        #expect(try ctl.request(.ipUp)?["type"]?.stringValue == "ok")
    }
}

extension EmbeddedDaemon.Peer {
    /// The next `command` waiting for this helper, as sent.
    func command() throws -> JSON {
        try #require(try read(type: "command"), "a command is waiting for the helper")
    }

    /// Answers `command` with `result` (evaluate: confidence `confidence`; filterScanList: its list).
    func answer(_ command: JSON, _ result: HelperResult = .success, confidence: Confidence = .high) throws {
        let id = CommandID(try #require(command["id"]?.intValue))
        var network: HotspotNetwork?
        var list: [HotspotNetwork]?
        if command["commandName"]?.stringValue == "evaluate", let n = command["network"] {
            var net = try HotspotNetwork(wire: n)
            net.confidence = confidence
            network = net
        }
        if command["commandName"]?.stringValue == "filterScanList", let l = command["networkList"]?.arrayValue {
            list = try l.map { try HotspotNetwork(wire: $0) }
        }
        send(.response(command: id, result: result, network: network, networkList: list))
    }
}
