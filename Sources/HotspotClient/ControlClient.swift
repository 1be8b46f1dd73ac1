#if canImport(Glibc)
import Glibc
#endif
import HotspotCore
import HotspotProtocol
import HotspotSystem

/// A failure talking to hotspotd as a client.
public struct ClientError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A blocking client of hotspotd's control socket (`hotspot-lab ctl`, the lab, tests).
/// Calls from several threads take turns: each holds the reading state for its whole exchange (a request and its
/// reply), so no reply goes to the wrong caller. Each `request` carries a `requestID` of its own, which hotspotd
/// echoes in the reply (docs/PROTOCOL.md, "Request ids"): a reply that comes after its request gave up (a starved
/// hotspotd) is dropped by the next request instead of taken for its answer.
public final class ControlClient: Sendable {
    public let socket: UnixSocket
    /// What reading leaves between calls.
    private struct Reader {
        var decoder = FrameDecoder(maximumLength: 16 << 20)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        /// Trace records that arrived while waiting for a reply.
        var traceBacklog: [JSON] = []
        /// The number in the last `requestID` sent by `request` (`client-N`).
        var lastRequestID = 0
        /// Replies dropped because they answered an earlier request that had given up.
        var staleReplies = 0
    }

    private let reader = Locked(Reader())
    /// Trace records that arrived while waiting for a reply (after `subscribeTrace`).
    public var traceBacklog: [JSON] { reader.withLock { $0.traceBacklog } }
    /// How many late replies (to requests that had given up) were dropped.
    public var staleReplies: Int { reader.withLock { $0.staleReplies } }

    public init(path: String) throws(SystemError) {
        socket = try UnixSocket.connect(path: path)
    }

    /// Connects, retrying until the daemon listens or `timeout` passes.
    public static func connect(path: String, timeout: Duration) throws -> ControlClient {
        let deadline = SystemMonotonicClock.read() + timeout
        while true {
            do {
                return try ControlClient(path: path)
            } catch {
                if SystemMonotonicClock.read() > deadline { throw error }
                usleepDuration(.milliseconds(5))
            }
        }
    }

    public func send(_ json: JSON) throws(SystemError) {
        try reader.withLock { _ in Result { () throws(SystemError) in try socket.writeAll(frame(json.bytes)) } }.get()
    }

    /// The next message, or nil when `timeout` passes first. Throws on end of file or a bad frame.
    public func readMessage(timeout: Duration) throws -> JSON? {
        try reader.withLock { try read(&$0, timeout: timeout) }
    }

    private func read(_ r: inout Reader, timeout: Duration) throws -> JSON? {
        let deadline = SystemMonotonicClock.read() + timeout
        while true {
            if let payload = try r.decoder.nextFrame() { return try JSON.parse(payload) }
            let left = deadline - SystemMonotonicClock.read()
            if left <= .zero { return nil }
            guard socket.waitReadable(timeout: left) else { continue }
            let outcome = try r.buffer.withUnsafeMutableBytes { p in try socket.read(into: p) }
            switch outcome {
            case .bytes(let n): r.decoder.append(r.buffer[0..<n])
            case .wouldBlock: continue
            case .endOfFile: throw ClientError("hotspotd closed the control connection \(socket.path)")
            }
        }
    }

    /// Sends a request and returns its reply (trace records arriving meanwhile go to `traceBacklog`). The request
    /// carries a fresh `requestID` (`client-N`); a reply with another one or none (a late reply to a request that gave
    /// up, or to a caller's own `send`) is dropped, and so is an `error` that names another.
    @discardableResult
    public func request(_ request: ControlRequest, timeout: Duration = .seconds(10)) throws -> JSON {
        try reader.withLock { reader in
            reader.lastRequestID += 1
            // A string of the client's own, so it cannot meet the integers a caller of `send` may use.
            let id = JSON.string("client-\(reader.lastRequestID)")
            guard case .object(var object) = request.json else { preconditionFailure("a control request is a JSON object") }
            object["requestID"] = id
            try socket.writeAll(frame(JSON.object(object).bytes))
            let deadline = SystemMonotonicClock.read() + timeout
            while true {
                let left = deadline - SystemMonotonicClock.read()
                guard left > .zero, let m = try read(&reader, timeout: left) else {
                    throw ClientError("no reply from hotspotd to \(request.json["type"]?.stringValue ?? "?") (requestID \(id.text)) within \(timeout)")
                }
                if m["type"]?.stringValue == "trace", let r = m["record"] {
                    reader.traceBacklog.append(r)
                    continue
                }
                // hotspotd echoes the id in every reply to a request that had one; an `error` without one is for a frame it
                // could not read (ours: nothing else is in flight here); anything else is an earlier request's.
                let isError = m["type"]?.stringValue == "error"
                guard m["requestID"] == id || (m["requestID"] == nil && isError) else {
                    reader.staleReplies += 1
                    continue
                }
                if isError {
                    throw ClientError("hotspotd: \(m["code"]?.stringValue ?? "?"): \(m["message"]?.stringValue ?? "")")
                }
                // The reply as the caller's request would have had it: the id is the client's own.
                guard case .object(var reply) = m else { return m }
                reply["requestID"] = nil
                return .object(reply)
            }
        }
    }

    public func status() throws -> JSON { try request(.status) }

    /// Polls `status` until `predicate` holds; throws with the last status when `timeout` passes.
    @discardableResult
    public func waitForStatus(timeout: Duration = .seconds(10), _ what: String = "condition", _ predicate: (JSON) -> Bool) throws -> JSON {
        let deadline = SystemMonotonicClock.read() + timeout
        while true {
            let s = try status()
            if predicate(s) { return s }
            if SystemMonotonicClock.read() > deadline {
                throw ClientError("timed out after \(timeout) waiting for \(what); last status: \(s.text)")
            }
            usleepDuration(.milliseconds(2))
        }
    }

    /// The next trace record (after `subscribeTrace`), nil when `timeout` passes first.
    public func nextTraceRecord(timeout: Duration) throws -> JSON? {
        try reader.withLock { reader in
            if !reader.traceBacklog.isEmpty { return reader.traceBacklog.removeFirst() }
            let deadline = SystemMonotonicClock.read() + timeout
            while true {
                let left = deadline - SystemMonotonicClock.read()
                guard left > .zero, let m = try read(&reader, timeout: left) else { return nil }
                if m["type"]?.stringValue == "trace", let r = m["record"] { return r }
            }
        }
    }

    /// Takes the trace records received so far (after `subscribeTrace`), reading what is waiting.
    public func drainTrace(wait: Duration = .zero) throws -> [JSON] {
        try reader.withLock { reader in
            while let m = try read(&reader, timeout: wait) {
                if m["type"]?.stringValue == "trace", let r = m["record"] { reader.traceBacklog.append(r) }
            }
            let out = reader.traceBacklog
            reader.traceBacklog.removeAll()
            return out
        }
    }
}

func usleepDuration(_ d: Duration) {
    var ts = timespec(tv_sec: Int(d.components.seconds), tv_nsec: Int(d.components.attoseconds / 1_000_000_000))
    _ = nanosleep(&ts, nil)
}
