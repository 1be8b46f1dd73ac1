// libFuzzer target: the scenario parser (LabYAML's checks, every step kind's parser from StepRegistry, the
// scenario's own checks), as `hotspot-lab run` and `check` call it. It reads no other file (the topology named
// is only resolved to a path). Errors are expected; crashes, traps and hangs are not.
// ci/fuzz.sh builds it against LabKit compiled by SwiftPM with -sanitize=fuzzer.
import LabKit

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScenarioParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? ScenarioParser.parse(text, file: "fuzz/scenario.yaml")
    return 0
}
