#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HotspotProtocol
import HotspotSystem
import Testing

struct FakeDaemonError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// hotspotd's side of one socket, scripted by a test: listens on a fresh path, accepts one connection and reads
/// and writes frames with deadlines. The script runs on its own thread (`run`), so the provider under test has
/// the cooperative pool to itself.
final class FakeDaemon: @unchecked Sendable {
    nonisolated(unsafe) static var counter = 0
    let path: String
    let directory: String
    let listener: UnixSocket
    private(set) var connection: UnixSocket?
    private var decoder = FrameDecoder()
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    init(_ name: String, file: String = "helper.sock") throws {
        FakeDaemon.counter += 1
        directory = "/tmp/hsl-providers-\(getpid())-\(FakeDaemon.counter)-\(name)"
        path = directory + "/" + file
        listener = try UnixSocket.listen(path: path)
    }

    deinit {
        connection?.close()
        listener.close()
        unlink(path)
        rmdir(directory)
    }

    func accept(timeout: Duration = .seconds(60)) throws {
        let end = SystemMonotonicClock.read() + timeout
        while connection == nil {
            let left = end - SystemMonotonicClock.read()
            guard left > .zero else { throw FakeDaemonError("no connection to \(path) within \(timeout)") }
            if listener.waitReadable(timeout: left), let c = try listener.accept() { connection = c }
        }
    }

    /// The next frame as JSON; throws on timeout or end of file.
    func read(timeout: Duration = .seconds(10)) throws -> JSON {
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
    func read(until type: String, timeout: Duration = .seconds(10)) throws -> [JSON] {
        var out: [JSON] = []
        while true {
            let m = try read(timeout: timeout)
            out.append(m)
            if m["type"]?.stringValue == type { return out }
        }
    }

    func send(_ json: JSON) throws {
        guard let c = connection else { throw FakeDaemonError("send before accept") }
        try c.writeAll(frame(json.bytes))
    }

    func close() {
        connection?.close()
        connection = nil
    }

    /// Runs `script` on a thread of its own and returns (or throws) what it did.
    func run<T: Sendable>(_ script: @escaping @Sendable (FakeDaemon) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (k: CheckedContinuation<T, any Error>) in
            let thread = Thread {
                do { k.resume(returning: try script(self)) } catch { k.resume(throwing: error) }
            }
            thread.start()
        }
    }
}

/// A command frame as hotspotd sends it.
func commandJSON(id: Int, type: Int, ssid: String = "Cafe", list: [String]? = nil, deadlineMs: Double? = 5000) -> JSON {
    func network(_ ssid: String) -> JSON { ["ssid": .string(ssid), "bssid": "02:00:00:00:01:00", "security": "open"] }
    var o: [String: JSON] = ["type": "command", "id": .number(Double(id)), "commandType": .number(Double(type)), "helper": "app"]
    if let list { o["networkList"] = .array(list.map(network)) } else { o["network"] = network(ssid) }
    if let deadlineMs { o["deadline_ms"] = .number(deadlineMs) }
    return .object(o)
}
