// hotspot-test-helper: a helper process built on the Swift SDK whose behaviour is scripted by arguments
// (the same arguments as Tests/python-helper/hotspot_helper.py). Used by HotspotDaemonTests and the benchmark.
//
//   --socket PATH --id IDENTIFIER --name DISPLAYNAME
//   --evaluate high|low|none|never|crash
//   --authenticate|--present-ui|--maintain|--logoff  RESULT|never|crash
//   --filter claim|none|never   --delay-ms N   --logoff-after-auth-ms N
//   --deliver-twice yes   (call deliver() a second time on every response: the SDK must refuse it)
import Dispatch
import HotspotHelper
#if canImport(Glibc)
import Glibc
#endif

var args: [String: String] = [:]
var it = CommandLine.arguments.dropFirst().makeIterator()
while let a = it.next() {
    guard a.hasPrefix("--"), let v = it.next() else {
        logLine("hotspot-test-helper: expected --option VALUE pairs, got \"\(a)\"")
        exit(64)
    }
    args[String(a.dropFirst(2))] = v
}

func logLine(_ s: String) {
    var b = Array(s.utf8)
    b.append(0x0A)
    b.withUnsafeBytes { p in _ = write(2, p.baseAddress, p.count) }
}

func result(_ name: String) -> HotspotHelperResult? {
    switch name {
    case "success": .success
    case "failure": .failure
    case "uiRequired": .uiRequired
    case "commandNotRecognized": .commandNotRecognized
    case "authenticationRequired": .authenticationRequired
    case "unsupportedNetwork": .unsupportedNetwork
    case "temporaryFailure": .temporaryFailure
    default: nil
    }
}

let evaluate = args["evaluate"] ?? "high"
let plan: [HotspotHelperCommandType: String] = [
    .authenticate: args["authenticate"] ?? "success", .presentUI: args["present-ui"] ?? "success",
    .maintain: args["maintain"] ?? "success", .logoff: args["logoff"] ?? "success",
]
let filter = args["filter"] ?? "claim"
let delayMs = Int(args["delay-ms"] ?? "0") ?? 0
let logoffAfterAuthMs = Int(args["logoff-after-auth-ms"] ?? "-1") ?? -1
let name = args["name"] ?? "TestHelper"
let deliverTwice = args["deliver-twice"] == "yes"

/// Delivers, and with --deliver-twice delivers again: the second must be refused by the SDK.
func send(_ r: HotspotHelperResponse) {
    r.deliver()
    if deliverTwice {
        let again = r.deliver()
        logLine("hotspot-test-helper: second deliver() returned \(again)")
    }
}

func waitBeforeAnswer() { if delayMs > 0 { usleep(useconds_t(delayMs * 1000)) } }

let queue = DispatchQueue(label: "hotspot-test-helper")
let ok = HotspotHelper.register(
    options: HotspotHelperOptions(displayName: name, identifier: args["id"], socketPath: args["socket"]),
    queue: queue
) { command in
    switch command.commandType {
    case .filterScanList:
        guard filter != "never" else { return }
        var claimed: [HotspotNetwork] = []
        if filter == "claim" {
            for n in command.networkList ?? [] {
                if n.isSecure { n.setPassword("secret") }
                claimed.append(n)
            }
        }
        waitBeforeAnswer()
        let r = command.createResponse(.success)
        r.setNetworkList(claimed)
        send(r)
    case .evaluate:
        if evaluate == "crash" { exit(9) }
        guard evaluate != "never", let network = command.network else { return }
        network.setConfidence(evaluate == "high" ? .high : evaluate == "low" ? .low : .none)
        waitBeforeAnswer()
        let r = command.createResponse(.success)
        r.setNetwork(network)
        send(r)
    default:
        let action = plan[command.commandType] ?? "success"
        if action == "crash" { exit(9) }
        guard action != "never" else { return }
        guard let res = result(action) else {
            logLine("hotspot-test-helper: unknown result \"\(action)\"")
            return
        }
        if command.commandType == .authenticate, res == .uiRequired {
            HotspotHelper.postNotification(title: name, body: "Tap to sign in to \(command.network?.ssid ?? "the network")")
        }
        waitBeforeAnswer()
        send(command.createResponse(res))
        if command.commandType == .authenticate, res == .success, logoffAfterAuthMs >= 0 {
            queue.asyncAfter(deadline: .now() + .milliseconds(logoffAfterAuthMs)) {
                if let current = HotspotHelper.supportedNetworkInterfaces().first {
                    let accepted = HotspotHelper.logoff(current)
                    logLine("hotspot-test-helper: logoff(\(current.ssid)) -> \(accepted)")
                }
            }
        }
    }
}
guard ok else {
    logLine("hotspot-test-helper: register failed: \(HotspotHelper.lastError ?? "?")")
    exit(2)
}
// Exit when the daemon goes away.
while HotspotHelper.isConnected { usleep(20_000) }
exit(0)
