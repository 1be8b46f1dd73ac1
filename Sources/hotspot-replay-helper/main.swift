// hotspot-replay-helper: answers hotspotd's commands the way a recorded helper did (`hotspot-lab replay`
// without --helper). For each command type it gives the recorded answers in their order (result, the
// evaluate confidence, the filterScanList claims with their passwords), after the recorded latency; past the
// recording it repeats the last answer of that type, and answers failure to a type never recorded.
//
//   hotspot-replay-helper --trace TRACE.jsonl --identifier ID [--name NAME] [--speed X]
import Dispatch
import Foundation
import HotspotHelper
import HotspotProtocol
import Synchronization

func log(_ s: String) { FileHandle.standardError.write(Data("hotspot-replay-helper: \(s)\n".utf8)) }

var options: [String: String] = [:]
var rest = CommandLine.arguments.dropFirst()[...]
while let flag = rest.popFirst() {
    guard flag.hasPrefix("--"), let value = rest.popFirst() else {
        log("usage: hotspot-replay-helper --trace FILE --identifier ID [--name NAME] [--speed X]")
        exit(64)
    }
    options[String(flag.dropFirst(2))] = value
}
guard let tracePath = options["trace"], let identifier = options["identifier"] else {
    log("usage: hotspot-replay-helper --trace FILE --identifier ID [--name NAME] [--speed X]")
    exit(64)
}
let speed = Double(options["speed"] ?? "1") ?? 1
guard let text = try? String(contentsOfFile: tracePath, encoding: .utf8) else {
    log("read \(tracePath): \(String(cString: strerror(errno)))")
    exit(66)
}

/// The recorded answers of this helper, by command type name, in order.
struct Answer: Sendable { var result: Int; var confidence: Int?; var claims: [(ssid: String, password: String?)]; var latencyMS: Double }
var answers: [String: [Answer]] = [:]
var displayName = options["name"] ?? "Replay"
for line in text.split(separator: "\n") {
    guard let entry = TraceEntry(line: Array(line.utf8)) else { continue }
    if let e = entry.record.event, e.event == "helperRegistered", e.detail?.helper == identifier, options["name"] == nil {
        displayName = e.detail?.displayName ?? displayName
    }
    guard let r = entry.record.response, r.helper == identifier, let type = r.commandType, let result = r.resultCode else { continue }
    let claims = (r.networkList ?? []).compactMap { n in n.ssid.text.map { ($0, n.password) } }
    answers[type, default: []].append(Answer(result: result, confidence: r.network?.confidence, claims: claims,
                                             latencyMS: (r.latency_us ?? 0) / 1000))
}
log("\(identifier) (\"\(displayName)\"): recorded answers " + answers.map { "\($0.key) x\($0.value.count)" }.sorted().joined(separator: ", "))

/// The answers, handed out in order from the helper's queue.
final class Recording: Sendable {
    private let answers: [String: [Answer]]
    private let used = Synchronization.Mutex<[String: Int]>([:])
    let speed: Double
    init(_ answers: [String: [Answer]], speed: Double) {
        self.answers = answers
        self.speed = speed
    }
    func next(_ type: String) -> Answer? {
        used.withLock { used in
            guard let list = answers[type], !list.isEmpty else { return nil }
            let index = min(used[type, default: 0], list.count - 1)
            used[type, default: 0] += 1
            return list[index]
        }
    }
}
let recording = Recording(answers, speed: speed)

/// Answers one command from the recording (off the main actor: the SDK calls it on its queue).
enum Replayer {
    static func answer(_ command: HotspotHelperCommand, from recording: Recording) {
        let type = command.commandType.description
        guard let answer = recording.next(type) else {
            log("no recorded answer to \(type): failure")
            command.createResponse(.failure).deliver()
            return
        }
        usleep(UInt32(min(answer.latencyMS / recording.speed, 60_000) * 1000))
        let response = command.createResponse(HotspotHelperResult(rawValue: answer.result) ?? .failure)
        switch command.commandType {
        case .evaluate:
            if let network = command.network {
                network.setConfidence(HotspotHelperConfidence(rawValue: answer.confidence ?? 0) ?? .none)
                response.setNetwork(network)
            }
        case .filterScanList:
            var claimed: [HotspotNetwork] = []
            for n in command.networkList ?? [] {
                guard let claim = answer.claims.first(where: { $0.ssid == n.ssid }) else { continue }
                if let password = claim.password { n.setPassword(password) }
                claimed.append(n)
            }
            response.setNetworkList(claimed)
        default:
            break
        }
        log("\(type) -> \(response.result)")
        response.deliver()
    }
}

let queue = DispatchQueue(label: "hotspot-replay-helper")
let registered = HotspotHelper.register(options: HotspotHelperOptions(displayName: displayName, identifier: identifier), queue: queue) {
    @Sendable [recording] command in Replayer.answer(command, from: recording)
}
guard registered else {
    log("register: \(HotspotHelper.lastError ?? "?")")
    exit(2)
}
while HotspotHelper.isConnected { usleep(50_000) }
exit(0)
