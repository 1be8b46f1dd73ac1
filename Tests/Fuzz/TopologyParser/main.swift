// libFuzzer target: the topology parser (LabYAML's size, anchor and depth checks, Yams, the reader and the
// validator), as `hotspot-lab up` and `run` call it. Errors are expected; crashes, traps and hangs are not.
// ci/fuzz.sh builds it against LabKit compiled by SwiftPM with -sanitize=fuzzer.
import LabKit

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTopologyParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? TopologyParser.parse(text, file: "fuzz/topology.yaml")
    return 0
}
