// libFuzzer target: HotspotProtocol's FrameDecoder and the message decoders behind it (ci/fuzz.sh builds it).
//
// The input's first byte chooses how the rest is split into appends (1 to 256 bytes at a time); the second's low
// nibble a maximum frame length (small limits reach `frameTooLarge` often), its high nibble 15 repeats the rest 40
// times (so the decoder's buffer passes 64 KiB and compacts, which inputs of libFuzzer's default size never reach). Every complete frame is parsed as JSON and
// decoded as each message kind. Checked beyond "no crash": the frames taken out, each with its 4-byte prefix,
// are exactly a prefix of the input; nothing more is returned after `frameTooLarge`; what stays buffered is the rest.
import HotspotProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrameDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard input.count >= 2 else { return 0 }
    let chunk = Int(input[0]) + 1
    let limits = [maximumFrameLength, 0, 1, 16, 255, 4096]
    let limit = limits[Int(input[1] & 0x0F) % limits.count]
    let repeats = input[1] >> 4 == 0x0F ? 40 : 1
    let stream = Array([[UInt8]](repeating: Array(input[2...]), count: repeats).joined())

    var decoder = FrameDecoder(maximumLength: limit)
    var consumed = 0  // bytes of `stream` returned as frames, prefixes included
    var failed = false
    var offset = 0
    outer: while offset < stream.count {
        let end = min(offset + chunk, stream.count)
        decoder.append(stream[offset..<end])
        offset = end
        while true {
            let next: [UInt8]?
            do {
                next = try decoder.nextFrame()
            } catch {
                guard error.code == .frameTooLarge else { fatalError("nextFrame threw \(error.code), expected only frameTooLarge") }
                failed = true
                break outer
            }
            guard let payload = next else { break }
            guard payload.count <= limit else { fatalError("a frame of \(payload.count) bytes passed the limit \(limit)") }
            let expected = frame(payload)
            guard consumed + expected.count <= stream.count,
                  Array(stream[consumed..<(consumed + expected.count)]) == expected
            else { fatalError("frame at offset \(consumed) does not match the input") }
            consumed += expected.count
            decode(payload)
        }
    }
    if !failed {
        guard decoder.bufferedCount == stream.count - consumed else {
            fatalError("bufferedCount \(decoder.bufferedCount), expected \(stream.count - consumed)")
        }
        let rest = Array(stream[consumed...])
        if rest.count >= 4 {
            // A complete frame would have been returned and an over-limit length would have thrown.
            let length = Int(rest[0]) << 24 | Int(rest[1]) << 16 | Int(rest[2]) << 8 | Int(rest[3])
            guard length <= limit, rest.count < 4 + length else {
                fatalError("\(rest.count) bytes left buffered, next length \(length), limit \(limit)")
            }
        }
    }
    return 0
}

/// Every decoder a frame meets in hotspotd, the SDK and the control client; errors are expected, crashes are not.
func decode(_ payload: [UInt8]) {
    guard let json = try? JSON.parse(payload) else { return }
    if let message = try? HelperMessage(json: json) { _ = message.json }
    if let message = try? DaemonMessage(json: json) { _ = message.json }
    if let request = try? ControlRequest(json: json) { _ = request.json }
}
