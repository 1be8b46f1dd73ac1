// hotspot-test-provider: one executable for both provider roles (the role hotspotd gives in
// $HOTSPOT_PROVIDER_ROLE), its behaviour scripted by arguments, for the provider scenarios and certify's
// provider checks. docs/PROVIDERS.md.
//
//   --evaluate high|low|none|crash          (evaluation) the confidence evaluate claims with, or exit(9)
//   --try-network URL                       (evaluation) GET URL through the command first (no network: fails, reported)
//   --authenticate|--maintain|--present-ui|--logoff RESULT|crash   (authentication) the result, or exit(9)
//   --delay-ms N                            wait before answering (crash: before crashing)
//   --start ok|fail                         what start() returns
//   --deliver yes                           also call deliver() on the response (the SDK refuses and reports it)
import Dispatch
import HotspotHelper
#if canImport(Glibc)
import Glibc
#endif

func logLine(_ s: String) {
    var b = Array(("hotspot-test-provider: " + s).utf8)
    b.append(0x0A)
    b.withUnsafeBytes { p in _ = write(2, p.baseAddress, p.count) }
}

/// The `--option VALUE` pairs, read once at start and never changed (so shared without a lock).
let settings: [String: String] = {
    var settings: [String: String] = [:]
    var iterator = CommandLine.arguments.dropFirst().makeIterator()
    while let a = iterator.next() {
        guard a.hasPrefix("--"), let v = iterator.next() else {
            logLine("expected --option VALUE pairs, got \"\(a)\"")
            exit(64)
        }
        settings[String(a.dropFirst(2))] = v
    }
    return settings
}()

func setting(_ name: String, _ fallback: String) -> String { settings[name] ?? fallback }

func result(_ name: String) -> HotspotHelperResult {
    switch name {
    case "success": .success
    case "failure": .failure
    case "uiRequired": .uiRequired
    case "authenticationRequired": .authenticationRequired
    case "unsupportedNetwork": .unsupportedNetwork
    case "temporaryFailure": .temporaryFailure
    default: .commandNotRecognized
    }
}

func pause() async {
    let ms = Int(setting("delay-ms", "0")) ?? 0
    if ms > 0 { try? await Task.sleep(for: .milliseconds(ms)) }
}

/// With --deliver yes, the provider also calls deliver() itself (a legacy habit): the SDK must refuse it.
func delivering(_ response: HotspotHelperResponse) -> HotspotHelperResponse {
    if setting("deliver", "no") == "yes" { logLine("deliver() returned \(response.deliver())") }
    return response
}

final class TestEvaluation: HotspotEvaluationProvider {
    init() {}
    func start() async -> Bool { setting("start", "ok") == "ok" }
    func stop(reason: HotspotProviderStopReason) async { logLine("evaluation stopped (\(reason.name))") }
    func handleCommand(_ command: HotspotHelperCommand) async -> HotspotHelperResponse {
        if let url = settings["try-network"] {
            let outcome: String = await HotspotHelper.blocking {
                do { return "answered \(try command.http(.get(url)).status)" } catch { return "failed: \(error)" }
            }
            logLine("evaluation: GET \(url) for \(command.commandType): \(outcome)")
        }
        switch command.commandType {
        case .filterScanList:
            let response = command.createResponse(.success)
            response.setNetworkList([])
            return response
        case .evaluate:
            await pause()
            let evaluate = setting("evaluate", "high")
            if evaluate == "crash" { exit(9) }
            guard let network = command.network else { return command.createResponse(.success) }
            network.setConfidence(evaluate == "high" ? .high : evaluate == "low" ? .low : .none)
            let response = command.createResponse(.success)
            response.setNetwork(network)
            return delivering(response)
        default:
            return command.createResponse(.commandNotRecognized)
        }
    }
}

final class TestAuthentication: HotspotAuthenticationProvider {
    init() {}
    func start() async -> Bool { setting("start", "ok") == "ok" }
    func stop(reason: HotspotProviderStopReason) async { logLine("authentication stopped (\(reason.name))") }
    func handleCommand(_ command: HotspotHelperCommand) async -> HotspotHelperResponse {
        let key: String
        switch command.commandType {
        case .authenticate: key = "authenticate"
        case .maintain: key = "maintain"
        case .presentUI: key = "present-ui"
        case .logoff: key = "logoff"
        default: return command.createResponse(.commandNotRecognized)
        }
        await pause()
        let action = setting(key, "success")
        if action == "crash" {
            logLine("\(key): crashing as told (exit 9)")
            exit(9)
        }
        let r = result(action)
        if r == .uiRequired { HotspotHelper.postNotification(title: "Test", body: "Tap to sign in") }
        return delivering(command.createResponse(r))
    }
}

let options = HotspotProviderOptions.fromEnvironment()
let exitStatus: HotspotProviderExit
if case .success(let o) = options, o.role == .authenticationProvider {
    exitStatus = await HotspotProviderRuntime.run(TestAuthentication.self, options: options)
} else {
    exitStatus = await HotspotProviderRuntime.run(TestEvaluation.self, options: options)
}
exit(exitStatus.exitCode)
