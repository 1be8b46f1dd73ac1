import Foundation
import HotspotClient
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import TestSupport
import Testing

/// A station driver that records what the daemon asks and reports an association through its sink.
final class FakeStation: StationDriver, @unchecked Sendable {
    weak var sink: (any StationEventSink)?
    var joins: [String] = []
    var detached = false

    struct Refused: Error, CustomStringConvertible { let ssid: String; var description: String { "join \(ssid): refused by the fake station" } }

    func attach(to sink: any StationEventSink) throws {
        self.sink = sink
        sink.record(.station(.init(action: "attached")))
    }

    func join(ssid: SSID, password: String?) throws {
        guard ssid != "refused" else { throw Refused(ssid: ssid.text) }
        joins.append(ssid.text)
        sink?.record(.station(.init(action: "join", ssid: TraceSSID(text: ssid.text))))
        sink?.submit(.associated(HotspotNetwork(rawSSID: ssid, bssid: "02:00:00:00:00:09")), via: "fake")
    }

    func leave() throws {}
    func autoJoin(except disabled: Set<NetworkIdentity>) throws {}
    func detach() { detached = true }
}

/// The socket/poll shell (`Daemon`) in this process: station requests, the sink, the trace file.
@Suite("hotspotd shell in-process", .tags(.timingSensitive))
struct ShellTests {
    @Test("the shell carries station requests out on the driver and answers them; the driver's events reach the machine")
    func stationThroughTheShell() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-shell-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let station = FakeStation()
        let daemon = try Daemon(options: DaemonOptions(runDirectory: dir), station: station)
        try daemon.start()
        let stopped = DispatchSemaphore(value: 0)
        let thread = Thread {
            daemon.run()
            stopped.signal()
        }
        thread.start()
        let control = try ControlClient(path: daemon.options.controlSocket)
        try control.send(["type": "join", "ssid": "Cafe", "requestID": 21])
        let ok = try #require(try control.readMessage(timeout: .seconds(10)))
        #expect(ok["type"]?.stringValue == "ok" && ok["requestID"]?.intValue == 21)
        let s = try control.status()
        #expect(s["association"]?["ssid"]?.stringValue == "Cafe")
        try control.send(["type": "join", "ssid": "refused", "requestID": 22])
        let failed = try #require(try control.readMessage(timeout: .seconds(10)))
        #expect(failed["code"]?.stringValue == "requestFailed" && failed["requestID"]?.intValue == 22)
        #expect(failed["message"]?.stringValue == "join refused: refused by the fake station")
        daemon.stop()
        stopped.wait()
        #expect(station.joins == ["Cafe"])
        #expect(station.detached)
        let trace = try String(contentsOfFile: dir + "/trace.jsonl", encoding: .utf8).split(separator: "\n")
            .compactMap { try? JSON.parse(Array($0.utf8)) }
        let kinds = trace.compactMap { $0["kind"]?.stringValue }
        #expect(kinds.first == "start" && kinds.contains("stop"))
        #expect(trace.last?["reason"]?.stringValue == "daemon stopping", "the control connection closed after `stop`")
        #expect(trace.map { $0["seq"]?.intValue ?? 0 } == Array(1...trace.count), "numbered in order without gaps")
        #expect(trace.contains { $0["kind"]?.stringValue == "event" && $0["via"]?.stringValue == "fake" })
        #expect(trace.contains { $0["kind"]?.stringValue == "error" && $0["request"]?["ssid"]?.stringValue == "refused" })
        let order = kinds.filter { ["userAction", "station"].contains($0) }
        #expect(order == ["station", "userAction", "station", "userAction"], "attached; each userAction before the driver's record")
    }
}
