// libFuzzer target: HotspotProtocol's JSON parser and writer (ci/fuzz.sh builds it).
//
// Checked beyond "no crash": only `malformedJSON` is thrown; a parsed value written out parses back to the same
// value, and writing is deterministic (the written text of the reparsed value is the same bytes); a value one of the
// message decoders (helper, daemon, control) accepts is encoded by that message back into JSON that decodes to the
// same message.
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
    if let message = try? HelperMessage(json: value) {
        guard (try? HelperMessage(json: message.json)) == message else { fatalError("HelperMessage round trip: \(message.json.text)") }
    }
    if let message = try? DaemonMessage(json: value) {
        guard (try? DaemonMessage(json: message.json)) == message else { fatalError("DaemonMessage round trip: \(message.json.text)") }
    }
    if let request = try? ControlRequest(json: value) {
        guard (try? ControlRequest(json: request.json)) == request else { fatalError("ControlRequest round trip: \(request.json.text)") }
    }
    return 0
}
