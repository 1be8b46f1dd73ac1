import CTLSShim
import Glibc
import HotspotSystem
import Testing

/// `StandardStreams`: the lab runner's and hotspot-lab's unbuffered writes to stdout and stderr. Foundation's
/// `FileHandle.write(_:)` traps on EPIPE (its `try!`), which ended the process where SIGPIPE does not: these report
/// the failure instead. No root.
@Suite("StandardStreams: writes that report a gone reader, never trap")
struct StandardStreamsTests {
    @Test("every byte reaches a pipe, in order, past a short write's size")
    func everyByte() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0, "pipe: \(String(cString: strerror(errno)))")
        defer { close(ends[0]) }
        let text = String(repeating: "0123456789abcdef", count: 2048)  // 32 KiB: within the pipe's buffer
        #expect(StandardStreams.write(text, to: ends[1]))
        close(ends[1])
        var read: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            let n = Glibc.read(ends[0], &chunk, chunk.count)
            if n <= 0 { break }
            read += chunk[0..<n]
        }
        #expect(String(decoding: read, as: UTF8.self) == text)
    }

    @Test("a pipe whose reader is gone: false with EPIPE, and the process goes on (SIGPIPE blocked here, then consumed)")
    func readerGone() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0, "pipe: \(String(cString: strerror(errno)))")
        defer { close(ends[1]) }
        close(ends[0])
        // This thread's SIGPIPE blocked, so that the write's signal stays pending instead of ending the test process;
        // consumed afterwards (it is the thread's own, raised by its write).
        var block = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGPIPE)
        var old = sigset_t()
        pthread_sigmask(SIG_BLOCK, &block, &old)
        defer { pthread_sigmask(SIG_SETMASK, &old, nil) }
        let wrote = StandardStreams.write("a line nobody reads\n", to: ends[1])
        let cause = errno
        var zero = timespec(tv_sec: 0, tv_nsec: 0)
        let consumed = sigtimedwait(&block, nil, &zero)
        #expect(!wrote)
        #expect(cause == EPIPE, "errno \(cause): \(String(cString: strerror(cause)))")
        #expect(consumed == SIGPIPE, "the write raised no SIGPIPE: it was not the kernel's EPIPE path")
        #expect(!StandardStreams.write("x", to: -1), "a descriptor that is not open: false (EBADF)")
    }

    @Test("hsl_write_nosigpipe to a pipe whose reader is gone: -1 with EPIPE, and no SIGPIPE delivered or left pending")
    func writeWithoutSIGPIPE() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0, "pipe: \(String(cString: strerror(errno)))")
        defer { close(ends[1]) }
        close(ends[0])
        let bytes: [UInt8] = Array("enable\n".utf8)
        let n = hsl_write_nosigpipe(ends[1], bytes, bytes.count)
        let cause = errno
        #expect(n == -1 && cause == EPIPE, "wrote \(n), errno \(cause)")
        var pending = sigset_t()
        sigemptyset(&pending)
        sigpending(&pending)
        #expect(sigismember(&pending, SIGPIPE) == 0, "the write's SIGPIPE was left pending")
        // The control: with a reader, every byte goes through.
        var live: [Int32] = [-1, -1]
        try #require(pipe(&live) == 0)
        defer { close(live[0]); close(live[1]) }
        #expect(hsl_write_nosigpipe(live[1], bytes, bytes.count) == bytes.count)
    }
}
