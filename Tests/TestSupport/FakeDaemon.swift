#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HotspotProtocol
import HotspotSystem

public struct FakeDaemonError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// hotspotd's side of one socket, scripted by a test: listens on a fresh path, accepts one connection and reads
/// and writes frames with deadlines. The script runs on its own thread (`run`), so the client under test (a
/// provider, the control client) has the cooperative pool to itself.
public final class FakeDaemon: @unchecked Sendable {
    public let path: String
    public let directory: String
    public let listener: UnixSocket
    public private(set) var connection: UnixSocket?
    private var decoder = FrameDecoder()
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    public init(_ name: String, file: String = "helper.sock") throws {
        // A random part, not a shared counter: the test targets that use it run their tests at once.
        directory = "/tmp/hsl-providers-\(getpid())-\(UInt64.random(in: 0...UInt64.max))-\(name)"
        path = directory + "/" + file
        listener = try UnixSocket.listen(path: path)
    }

    deinit {
        connection?.close()
        listener.close()
        unlink(path)
        rmdir(directory)
    }

    public func accept(timeout: Duration = .seconds(60)) throws {
        let end = SystemMonotonicClock.read() + timeout
        while connection == nil {
            let left = end - SystemMonotonicClock.read()
            guard left > .zero else { throw FakeDaemonError("no connection to \(path) within \(timeout)") }
            if listener.waitReadable(timeout: left), let c = try listener.accept() { connection = c }
        }
    }

    /// The next frame as JSON; throws on timeout or end of file.
    public func read(timeout: Duration = .seconds(10)) throws -> JSON {
        guard let c = connection else { throw FakeDaemonError("read before accept") }
        let end = SystemMonotonicClock.read() + timeout
        while true {
            if let payload = try decoder.nextFrame() { return try JSON.parse(payload) }
            let left = end - SystemMonotonicClock.read()
            guard left > .zero else { throw FakeDaemonError("no message within \(timeout)") }
            guard c.waitReadable(timeout: left) else { continue }
            switch try buffer.withUnsafeMutableBytes({ p in try c.read(into: p) }) {
            case .bytes(let n): decoder.append(buffer[0..<n])
            case .wouldBlock: continue
            case .endOfFile: throw FakeDaemonError("the provider closed the connection")
            }
        }
    }

    /// Reads until a message of `type` (earlier ones are returned too, in order).
    public func read(until type: String, timeout: Duration = .seconds(10)) throws -> [JSON] {
        var out: [JSON] = []
        while true {
            let m = try read(timeout: timeout)
            out.append(m)
            if m["type"]?.stringValue == type { return out }
        }
    }

    public func send(_ json: JSON) throws {
        guard let c = connection else { throw FakeDaemonError("send before accept") }
        try c.writeAll(frame(json.bytes))
    }

    public func close() {
        connection?.close()
        connection = nil
    }

    /// Runs `script` on a thread of its own and returns (or throws) what it did.
    public func run<T: Sendable>(_ script: @escaping @Sendable (FakeDaemon) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (k: CheckedContinuation<T, any Error>) in
            let thread = Thread {
                do { k.resume(returning: try script(self)) } catch { k.resume(throwing: error) }
            }
            thread.start()
        }
    }
}
