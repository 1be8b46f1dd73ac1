// Framing of the helper and control protocols (docs/PROTOCOL.md):
// every message is one frame = a 4-byte big-endian unsigned length followed by that many bytes of
// UTF-8 JSON (one object). A frame longer than `maximumFrameLength` is a protocol error.

/// The version of the protocol spoken by this build. A helper states the version it speaks in `register`.
public let protocolVersion = 1

/// The largest frame payload accepted (bytes, excluding the 4-byte length prefix).
public let maximumFrameLength = 65_536

/// Prefixes `payload` with its 4-byte big-endian length.
public func frame(_ payload: [UInt8]) -> [UInt8] {
    var out = [UInt8]()
    out.reserveCapacity(payload.count + 4)
    let n = UInt32(payload.count)
    out.append(UInt8(truncatingIfNeeded: n >> 24))
    out.append(UInt8(truncatingIfNeeded: n >> 16))
    out.append(UInt8(truncatingIfNeeded: n >> 8))
    out.append(UInt8(truncatingIfNeeded: n))
    out.append(contentsOf: payload)
    return out
}

/// A streaming frame decoder: feed it whatever bytes arrived (any split), take complete frames out.
///
/// A length above `maximumFrameLength` makes `nextFrame()` throw `ProtocolError(.frameTooLarge)`;
/// after that the stream cannot be resynchronised and the connection should be closed.
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    public let maximumLength: Int

    public init(maximumLength: Int = maximumFrameLength) {
        self.maximumLength = maximumLength
        buffer.reserveCapacity(4096)
    }

    /// Bytes received but not yet returned as a frame (a partial frame).
    public var bufferedCount: Int { buffer.count - start }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 65_536 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ pointer: UnsafeRawBufferPointer) {
        append(pointer.bindMemory(to: UInt8.self))
    }

    /// The next complete frame's payload, or nil when more bytes are needed.
    public mutating func nextFrame() throws(ProtocolError) -> [UInt8]? {
        let available = buffer.count - start
        guard available >= 4 else { return nil }
        let length = Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8
            | Int(buffer[start + 3])
        guard length <= maximumLength else {
            throw ProtocolError(
                .frameTooLarge, "frame of \(length) bytes exceeds the limit of \(maximumLength) bytes")
        }
        guard available >= 4 + length else { return nil }
        let payload = Array(buffer[(start + 4)..<(start + 4 + length)])
        start += 4 + length
        return payload
    }
}
