import Foundation
import Glibc
import HotspotSystem
import Testing

/// `WPACtrlSocket.request` against a fake wpa_supplicant control socket (a Unix datagram socket this test drives): a
/// reply that comes after its request gave up is not taken for the next request's (it was until 2026-11-29: a
/// request starved past its bound on a loaded machine shifted every later reply by one).
@Suite("wpa_supplicant control requests: a late reply")
struct WPACtrlSocketTests {
    /// A bound Unix datagram socket at a fresh path; `receive` returns the text and the sender's address.
    final class FakeServer: @unchecked Sendable {  // @unchecked: fd and path are set once in init
        let fd: Int32
        let path: String

        init() throws {
            path = NSTemporaryDirectory() + "hslt-wpa-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            guard fd >= 0 else { throw SystemError.current("socket for", path) }
            var addr = Self.address(path)
            let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
            guard bound == 0 else { throw SystemError.current("bind", path) }
        }

        deinit {
            Glibc.close(fd)
            unlink(path)
        }

        static func address(_ path: String) -> sockaddr_un {
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &addr.sun_path) { raw in
                let bytes = Array(path.utf8.prefix(raw.count - 1))
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            return addr
        }

        /// The next request (waits up to 30 s) and who sent it.
        func receive() throws -> (String, sockaddr_un, socklen_t) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 30_000) == 1 else { throw SystemError("receive a request on", path, reason: "none within 30 s") }
            var buffer = [UInt8](repeating: 0, count: 4096)
            var from = sockaddr_un()
            var length = socklen_t(MemoryLayout<sockaddr_un>.size)
            let n = buffer.withUnsafeMutableBytes { b in
                withUnsafeMutablePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, b.baseAddress, b.count, 0, $0, &length) } }
            }
            guard n >= 0 else { throw SystemError.current("recvfrom", path) }
            return (String(decoding: buffer[0..<n], as: UTF8.self), from, length)
        }

        func reply(_ text: String, to address: sockaddr_un, _ length: socklen_t) {
            var to = address
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { b in
                withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, b.baseAddress, b.count, 0, $0, length) } }
            }
        }
    }

    @Test("a reply that came after its request gave up is dropped, not taken for the next request's")
    func lateReplyIsNotTheNextOnes() throws {
        let server = try FakeServer()
        let control = try WPACtrlSocket(serverPath: server.path)
        defer { control.close() }
        // The first request gets no reply before its (short) bound: the server holds it until the request has thrown.
        let failure = #expect(throws: SystemError.self) { try control.request("STATUS", timeout: .milliseconds(50)) }
        #expect(failure.map { "\($0)" }?.contains("no reply within") == true)
        let (first, client, length) = try server.receive()
        #expect(first == "STATUS")
        server.reply("wpa_state=LATE\n", to: client, length)
        // The next request's reply comes from a thread once its request arrives.
        let answered = Thread { if let (text, from, len) = try? server.receive() { server.reply(text == "PING" ? "PONG\n" : "UNKNOWN\n", to: from, len) } }
        answered.start()
        #expect(try control.request("PING") == "PONG")
    }
}
