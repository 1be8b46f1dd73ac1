import Foundation
import HotspotSystem
import Testing

/// The process's umask is process-wide state no thread may borrow (issue 27). `UnixSocket.listen` once set
/// umask(0177) around bind and back; two threads binding at once could leave it 0177 for good, and every process the
/// lab started afterwards inherited it: hotspotd wrote its DHCP script 0600, udhcpc could not run it, and no IPv4
/// lease was read again (CI's vendor-pattern run stalled that way with two labs at once).
@Suite("umask: nothing changes it, files get exactly their mode")
struct UmaskTests {
    /// The umask, read without changing it (`/proc/self/status`).
    static func currentUmask() throws -> mode_t {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Umask:") })
        return try #require(mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8))
    }

    @Test("eight threads listening on Unix sockets at once leave the umask as it was; each socket file is 0600")
    func concurrentListens() throws {
        let before = try Self.currentUmask()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-umask-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let modes = Locked<[mode_t]>([])
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        for t in 0..<8 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                for i in 0..<150 {
                    let path = "\(dir)/t\(t)-\(i).sock"
                    do {
                        let socket = try UnixSocket.listen(path: path)
                        var st = stat()
                        if lstat(path, &st) == 0 { modes.withLock { $0.append(st.st_mode & 0o777) } }
                        socket.close()
                        unlink(path)
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        #expect(try Self.currentUmask() == before, "the umask changed from 0\(String(before, radix: 8))")
        let all = modes.withLock { $0 }
        #expect(all.count == 8 * 150)
        #expect(all.allSatisfy { $0 == 0o600 }, "socket modes \(Set(all).map { String($0, radix: 8) })")
    }

    @Test("AtomicFile.write gives exactly the mode asked for (an executable script stays executable)")
    func atomicFileMode() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-mode-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for mode: mode_t in [0o755, 0o700, 0o600, 0o644] {
            let path = "\(dir)/f-\(String(mode, radix: 8))"
            try AtomicFile.write(Array("#!/bin/sh\nexit 0\n".utf8), to: path, mode: mode)
            var st = stat()
            #expect(stat(path, &st) == 0)
            #expect(st.st_mode & 0o777 == mode, "\(path): 0\(String(st.st_mode & 0o777, radix: 8))")
        }
    }
}
