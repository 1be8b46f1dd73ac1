import Foundation
import HotspotCore
import HotspotSystem
import TestSupport
import Testing
@testable import HotspotHelper
#if canImport(Glibc)
import Glibc
#endif

/// `command.http` on an `https://` URL: the command's deadline (cut to 80%) bounds the TLS handshake too.
@Suite("command.http over TLS within the command's deadline", .serialized, .tags(.timingSensitive))
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
        // The handshake's budget is 80% of what was left of the 1 s deadline when the request started (the error
        // names it), not the request's own 10 s; it took at least that budget, and nowhere near 10 s. The budget,
        // not the wall time, carries the 80%: wall-time bounds fail on a loaded machine.
        let budget = try #require(error.detail.flatMap { Self.milliseconds(inDetail: $0) }, "no budget in \(error)")
        #expect(budget > 400 && budget <= 800, "budget \(budget) ms: expected 80% of what was left of the 1 s deadline")
        #expect(took >= .milliseconds(budget - 50) && took < .seconds(8), "took \(took) for a \(budget) ms budget")
    }

    /// `no answer within 800 ms` -> 800.
    static func milliseconds(inDetail detail: String) -> Int? {
        let words = detail.split(separator: " ")
        guard let ms = words.firstIndex(of: "ms"), ms > 0 else { return nil }
        return Int(words[ms - 1])
    }
}
