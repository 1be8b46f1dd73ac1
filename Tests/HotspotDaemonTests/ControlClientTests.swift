import HotspotClient
import HotspotProtocol
import HotspotSystem
import Testing
import TestSupport

/// `ControlClient.request` against a fake hotspotd control socket that this test drives (`FakeDaemon`): a reply that
/// comes after its request gave up is not taken for the next request's (it was until 2026-11-29: a request starved
/// past its bound on a loaded machine made every later request read the reply before its own).
@Suite("control client: a late reply")
struct ControlClientTests {
    /// A `status` reply naming `which`, echoing the request's `requestID` as hotspotd does.
    static func reply(_ daemon: FakeDaemon, to request: JSON, _ which: String) throws {
        var o: [String: JSON] = ["type": "status", "which": .string(which)]
        if let rid = request["requestID"] { o["requestID"] = rid }
        try daemon.send(.object(o))
    }

    @Test("a reply that came after its request gave up is dropped; the next request gets its own")
    func lateReplyIsDropped() throws {
        let daemon = try FakeDaemon("control", file: "control.sock")
        let client = try ControlClient(path: daemon.path)
        try daemon.accept(timeout: .seconds(30))
        // The first request gives up: the daemon does not answer until it has.
        #expect(throws: (any Error).self) { try client.request(.status, timeout: .milliseconds(100)) }
        let first = try daemon.read(timeout: .seconds(30))
        try Self.reply(daemon, to: first, "first (late)")
        // The second request is answered after the late reply is already waiting in the client's socket, by a thread
        // started here (not a task: the blocking request below holds a thread of the cooperative pool, and on a loaded
        // machine with other suites running a task could wait for one past the request's bound).
        let server = try SystemThread.start("fake hotspotd") {
            do {
                try Self.reply(daemon, to: try daemon.read(timeout: .seconds(30)), "second")
            } catch {
                Issue.record("fake hotspotd: \(error)")
            }
        }
        let reply = try client.request(.status, timeout: .seconds(30))
        server.join()
        #expect(reply["which"]?.stringValue == "second", "\(reply.text)")
        #expect(reply["requestID"] == nil, "the client's own id is not the caller's: \(reply.text)")
        #expect(client.staleReplies == 1)
        #expect(first["requestID"] != nil)
    }
}
