import Foundation
import Glibc
import HotspotClient
import HotspotProtocol
import HotspotSystem
import Testing

/// `ControlClient.request` against a fake hotspotd control socket that this test drives: a reply that comes after
/// its request gave up is not taken for the next request's (it was until 2026-11-29: a request starved past its bound
/// on a loaded machine made every later request read the reply before its own).
@Suite("control client: a late reply")
struct ControlClientTests {
    /// One accepted connection of a listening socket at a fresh path, read frame by frame.
    final class FakeDaemon: @unchecked Sendable {  // @unchecked: used by one thread at a time, handed over by join
        let listener: UnixSocket
        var connection: UnixSocket?
        var decoder = FrameDecoder()
        let directory = NSTemporaryDirectory() + "hslt-ctl-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let path: String

        init() throws {
            path = directory + "/control.sock"
            listener = try UnixSocket.listen(path: path)
        }

        deinit {
            connection?.close()
            listener.close()
            unlink(path)
            rmdir(directory)
        }

        func accept() throws {
            for _ in 0..<3000 {
                if let c = try listener.accept() { connection = c; return }
                _ = listener.waitReadable(timeout: .milliseconds(10))
            }
            throw SystemError("accept on", path, reason: "no client within 30 s")
        }

        /// The next request (waits up to 30 s).
        func receive() throws -> JSON {
            let c = try #require(connection)
            var buffer = [UInt8](repeating: 0, count: 4096)
            for _ in 0..<300 {
                if let payload = try decoder.nextFrame() { return try JSON.parse(payload) }
                guard c.waitReadable(timeout: .milliseconds(100)) else { continue }
                switch try buffer.withUnsafeMutableBytes({ p throws(SystemError) in try c.read(into: p) }) {
                case .bytes(let n): decoder.append(buffer[0..<n])
                case .wouldBlock: continue
                case .endOfFile: throw SystemError("read a request on", path, reason: "end of file")
                }
            }
            throw SystemError("read a request on", path, reason: "none within 30 s")
        }

        /// A `status` reply naming `which`, echoing the request's `requestID` as hotspotd does.
        func reply(to request: JSON, _ which: String) throws {
            var o: [String: JSON] = ["type": "status", "which": .string(which)]
            if let rid = request["requestID"] { o["requestID"] = rid }
            try #require(connection).writeAll(frame(JSON.object(o).bytes))
        }
    }

    @Test("a reply that came after its request gave up is dropped; the next request gets its own")
    func lateReplyIsDropped() throws {
        let daemon = try FakeDaemon()
        let client = try ControlClient(path: daemon.path)
        try daemon.accept()
        // The first request gives up: the daemon does not answer until it has.
        #expect(throws: (any Error).self) { try client.request(.status, timeout: .milliseconds(100)) }
        let first = try daemon.receive()
        try daemon.reply(to: first, "first (late)")
        // The second request is answered after the late reply is already waiting in the client's socket.
        let server = try SystemThread.start("fake hotspotd") {
            do {
                let second = try daemon.receive()
                try daemon.reply(to: second, "second")
            } catch {
                Issue.record("fake hotspotd: \(error)")
            }
        }
        let reply = try client.request(.status, timeout: .seconds(30))
        server.join()
        #expect(reply["which"]?.stringValue == "second", "\(reply.text)")
        #expect(reply["requestID"] == nil, "the client's own id is not the caller's: \(reply.text)")
        #expect(client.staleReplies == 1)
        // The ids on the wire were two different ones.
        #expect(first["requestID"] != nil)
    }
}
