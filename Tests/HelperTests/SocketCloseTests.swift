import Foundation
import HotspotSystem
import Testing
@testable import HotspotHelper
#if canImport(Glibc)
import Glibc
#endif

/// Closing a command socket on one thread while another waits on it (issue 24). The waiting call must be woken
/// and fail with ECANCELED (a plain close(2) wakes no `poll` on Linux: the call would sleep until its timeout),
/// and it must never touch the descriptor's number once another open may have reused it.
///
/// Each test starts the call on a thread, waits until that thread sleeps in poll(2) (read from
/// /proc/self/task/TID/syscall), then closes. Right after `close()` returns it opens a socketpair (which takes the
/// lowest free numbers: the closed one, had it been released under the sleeping call) with a byte waiting in it.
/// The verdict rests on what happened, not on time: the call's error, the bytes untouched, and the socket released
/// once the call is done (its number free or naming another file: tests running beside it open files too). The waits are bounded only so that a broken build fails instead of hanging.
@Suite struct SocketCloseTests {
    @Test func closingATCPConnectionWakesABlockedReadWithCancelled() throws {
        let (listener, port) = bindLoopback(SOCK_STREAM)
        defer { close(listener) }
        #expect(listen(listener, 1) == 0)
        let tcp = try HotspotTCPConnection.connect(host: "127.0.0.1", port: port, timeout: .seconds(30))
        let peer = accept(listener, nil, nil)
        #expect(peer >= 0)
        defer { close(peer) }

        let outcome = try closeWhileBlocked(number: tcp.fd, close: { tcp.close() }) {
            "\(try tcp.read(timeout: .seconds(300)).count) bytes"
        }
        #expect(outcome.error?.errno == ECANCELED, "the read ended with \(outcome.error.map(String.init(describing:)) ?? outcome.returned ?? "")")
        #expect(outcome.error?.operation == "read from")
        #expect(tcp.fd == -1)
        // After close, calls fail at once without touching a descriptor.
        #expect(throws: HotspotTrafficError.self) { try tcp.write([1], timeout: .seconds(1)) }
        #expect(tcp.mark == nil)
    }

    @Test func closingATCPConnectionWakesABlockedWriteWithCancelled() throws {
        let (listener, port) = bindLoopback(SOCK_STREAM)
        defer { close(listener) }
        #expect(listen(listener, 1) == 0)
        let tcp = try HotspotTCPConnection.connect(host: "127.0.0.1", port: port, timeout: .seconds(30))
        let peer = accept(listener, nil, nil) // never reads: the send buffer fills and the write waits in poll
        #expect(peer >= 0)
        defer { close(peer) }

        let outcome = try closeWhileBlocked(number: tcp.fd, close: { tcp.close() }) {
            try tcp.write([UInt8](repeating: 0x41, count: 64 << 20), timeout: .seconds(300))
            return "written"
        }
        #expect(outcome.error?.errno == ECANCELED, "the write ended with \(outcome.error.map(String.init(describing:)) ?? outcome.returned ?? "")")
        #expect(outcome.error?.operation == "send to")
    }

    @Test func closingAUDPSocketWakesABlockedReceiveWithCancelled() throws {
        let (server, port) = bindLoopback(SOCK_DGRAM)
        defer { close(server) }
        let udp = try HotspotUDPSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(30))

        let outcome = try closeWhileBlocked(number: udp.fd, close: { udp.close() }) {
            try udp.receive(timeout: .seconds(300)) == nil ? "nil" : "a datagram"
        }
        #expect(outcome.error?.errno == ECANCELED, "the receive ended with \(outcome.error.map(String.init(describing:)) ?? outcome.returned ?? "")")
        #expect(outcome.error?.operation == "receive a datagram from")
        #expect(throws: HotspotTrafficError.self) { try udp.send([1]) }
    }

    /// `shutdown()` (not close) still ends a pending receive with end of stream, as NWUDPSession's cancel needs.
    @Test func shuttingAUDPSocketDownEndsABlockedReceiveWithNil() throws {
        let (server, port) = bindLoopback(SOCK_DGRAM)
        defer { close(server) }
        let udp = try HotspotUDPSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(30))
        let outcome = try closeWhileBlocked(number: udp.fd, close: { udp.shutdown() }, expectReleased: false) {
            try udp.receive(timeout: .seconds(300)) == nil ? "nil" : "a datagram"
        }
        #expect(outcome.error == nil)
        #expect(outcome.returned == "nil")
        #expect(udp.fd >= 0)
        udp.close()
    }
}

/// How a call that was closed under ended.
struct BlockedOutcome {
    var error: HotspotTrafficError?
    /// What the call returned, in words, when it did not throw.
    var returned: String?
}

/// Runs `call` on a new thread, waits until that thread sleeps in poll(2), runs `close`, and checks that the number
/// `number` is not reused under the call: a socketpair opened right after `close` returns keeps the byte written into
/// it, and (when `expectReleased`) the number is released once the call has ended.
func closeWhileBlocked(number: Int32, close: () -> Void, expectReleased: Bool = true,
                       _ call: @escaping @Sendable () throws -> String) throws -> BlockedOutcome {
    struct State {
        var thread: Int32 = 0
        var finished = false
        var error: HotspotTrafficError?
        var returned: String?
        var other: String?
    }
    let state = Locked(State())
    let original = identity(number)
    try #require(original != nil)
    try SystemThread.detach("blocked call") {
        let tid = currentThreadID()
        state.withLock { $0.thread = tid }
        do {
            let returned = try call()
            state.withLock { $0.returned = returned }
        } catch let error as HotspotTrafficError {
            state.withLock { $0.error = error }
        } catch {
            state.withLock { $0.other = String(describing: error) }
        }
        state.withLock { $0.finished = true }
    }
    // Failure guard only: the call sleeps in poll within milliseconds on an idle machine.
    let thread = try #require(waitFor(seconds: 60) { state.withLock { $0.thread != 0 ? $0.thread : nil } })
    try #require(thread > 0, "this thread's id could not be read from /proc/thread-self")
    let polling = waitFor(seconds: 60) { sleepsInPoll(thread) ? true : nil }
    #expect(polling == true, "the call never slept in poll(2)")
    close()

    var pair: [Int32] = [-1, -1]
    #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
    defer { pair.forEach { _ = Glibc.close($0) } }
    var byte: UInt8 = 0x5A
    #expect(Glibc.write(pair[1], &byte, 1) == 1)
    #expect(Glibc.write(pair[0], &byte, 1) == 1)

    // Failure guard only: the call's own timeout (300 s) is far beyond it, so a call that was not woken fails here.
    let finished = waitFor(seconds: 60) { state.withLock { $0.finished ? true : nil } }
    #expect(finished == true, "the call was not woken by close()")
    let (error, returned, other) = state.withLock { ($0.error, $0.returned, $0.other) }
    #expect(other == nil, "unexpected error \(other ?? "")")

    // Nothing read or wrote the socketpair, whatever numbers it got.
    for fd in pair {
        var got: UInt8 = 0
        #expect(recv(fd, &got, 1, Int32(MSG_DONTWAIT)) == 1 && got == 0x5A, "the byte waiting on descriptor \(fd) was taken")
        #expect(recv(fd, &got, 1, Int32(MSG_DONTWAIT)) == -1, "descriptor \(fd) got bytes it was not sent")
    }
    // Released once the call ended: the number is free, or (other tests open files meanwhile) names another socket.
    if expectReleased {
        #expect(identity(number) != original, "descriptor \(number) was not released")
    }
    return BlockedOutcome(error: error, returned: returned)
}

/// The device and inode of what descriptor `fd` names now, nil when it is not open.
func identity(_ fd: Int32) -> [UInt64]? {
    var st = stat()
    guard fstat(fd, &st) == 0 else { return nil }
    return [UInt64(st.st_dev), UInt64(st.st_ino)]
}

/// Polls `probe` every millisecond until it gives a value or `seconds` pass.
func waitFor<T>(seconds: Int, _ probe: () -> T?) -> T? {
    let end = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < end {
        if let value = probe() { return value }
        usleep(1000)
    }
    return probe()
}

/// Whether thread `tid` of this process sleeps in poll(2) or ppoll(2) now.
func sleepsInPoll(_ tid: Int32) -> Bool {
    guard let text = try? String(contentsOfFile: "/proc/self/task/\(tid)/syscall", encoding: .utf8),
          let first = text.split(separator: " ").first, let number = Int(first) else { return false }
    #if arch(x86_64)
    return number == 7 || number == 271
    #elseif arch(arm64)
    return number == 73
    #else
    return false
    #endif
}

/// This thread's kernel id, from /proc/thread-self (a link to `PID/task/TID`); -1 when unreadable.
func currentThreadID() -> Int32 {
    guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"),
          let last = target.split(separator: "/").last, let tid = Int32(last) else { return -1 }
    return tid
}
