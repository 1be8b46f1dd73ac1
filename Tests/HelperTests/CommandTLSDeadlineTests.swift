import Foundation
import HotspotCore
import HotspotSystem
import Testing
@testable import HotspotHelper
#if canImport(Glibc)
import Glibc
#endif

/// `command.http` on an `https://` URL: the command's deadline (cut to 80%) bounds the TLS handshake too.
@Suite("command.http over TLS within the command's deadline", .serialized)
struct CommandTLSDeadlineTests {
    @Test func handshakeEndsAtEightyPercentOfTheDeadline() throws {
        let dir = NSTemporaryDirectory() + "hsl-cmd-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let daemon = try UnixSocket.listen(path: dir + "/helper.sock")
        defer { daemon.close() }
        let socket = try UnixSocket.connect(path: dir + "/helper.sock")
        let client = HelperClient(socket: socket, queue: DispatchQueue(label: "cmd-tls"), identifier: "t", handler: { _ in })
        let command = HotspotHelperCommand(
            Command(id: 7, type: .evaluate, helper: "t", network: nil, deadline: .milliseconds(1000)), client: client)
        // A TCP server that never answers the ClientHello (the kernel accepts; nobody speaks TLS).
        let (fd, port) = bindLoopback(SOCK_STREAM)
        #expect(listen(fd, 4) == 0)
        defer { close(fd) }
        var caught: (any Error)?
        let took = elapsed {
            do { _ = try command.http(.get("https://127.0.0.1:\(port)/", timeout: .seconds(10))) } catch { caught = error }
        }
        let error = try #require(caught as? HotspotTrafficError)
        #expect(error.isTimeout)
        #expect(error.operation == "TLS handshake with" && error.target == "127.0.0.1:\(port)", "\(error)")
        // 80% of 1000 ms, less what passed before the request started.
        #expect(took >= .milliseconds(700) && took < .milliseconds(1000), "took \(took): expected about 800 ms, before the 1 s deadline")
    }
}
