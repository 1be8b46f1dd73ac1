// libFuzzer target: the scenario parser (LabYAML's checks, every step kind's parser from StepRegistry, the
// scenario's own checks), as `hotspot-lab run` and `check` call it. It reads no other file (the topology named
// is only resolved to a path). Errors are expected; crashes, traps and hangs are not.
// ci/fuzz.sh builds it against LabScenarioModel (and what it depends on: not the lab's services) compiled by SwiftPM
// with -sanitize=fuzzer.
// The bytes go through LabYAML.text as a file's do (issue 27): checked beyond "no crash", an input that is not UTF-8
// is never accepted (it used to become U+FFFD), and one starting with a byte-order mark is accepted exactly when
// the same input without the mark is.
import LabScenarioModel
import LabTopology

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScenarioParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let accepted = parses(bytes)
    if accepted && String(validating: bytes, as: UTF8.self) == nil {
        fatalError("bytes that are not UTF-8 were accepted")
    }
    let mark: [UInt8] = [0xEF, 0xBB, 0xBF]
    if bytes.starts(with: mark), !bytes.dropFirst(3).starts(with: mark), accepted != parses(Array(bytes.dropFirst(3))) {
        fatalError("a byte-order mark changed whether the input is accepted")
    }
    return 0
}

func parses(_ bytes: [UInt8]) -> Bool {
    let file = "fuzz/scenario.yaml"
    do {
        let text = try LabYAML.text(bytes, file: file)
        _ = try ScenarioParser.parse(text, file: file)
        return true
    } catch {
        return false
    }
}
