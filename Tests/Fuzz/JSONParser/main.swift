// libFuzzer target: HotspotProtocol's JSON parser and writer (ci/fuzz.sh builds it).
//
// Checked beyond "no crash": only `malformedJSON` is thrown; a parsed value written out parses back to the same
// value, and writing is deterministic (the written text of the reparsed value is the same bytes); the message
// decoders accept or refuse the value without crashing.
import HotspotProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let value: JSON
    do {
        value = try JSON.parse(input)
    } catch {
        guard error.code == .malformedJSON else { fatalError("JSON.parse threw \(error.code), expected malformedJSON") }
        return 0
    }
    let written = value.bytes
    let reparsed: JSON
    do {
        reparsed = try JSON.parse(written)
    } catch {
        fatalError("the writer's output does not parse (\(error)): \(String(decoding: written, as: UTF8.self))")
    }
    guard reparsed == value else {
        fatalError("round trip changed the value: \(String(decoding: written, as: UTF8.self))")
    }
    guard reparsed.bytes == written else { fatalError("writing is not deterministic: \(String(decoding: written, as: UTF8.self))") }
    if let message = try? HelperMessage(json: value) { _ = message.json }
    if let message = try? DaemonMessage(json: value) { _ = message.json }
    if let request = try? ControlRequest(json: value) { _ = request.json }
    return 0
}
