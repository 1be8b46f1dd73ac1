// hotspot-certify-fixture: a deliberately broken helper for testing `hotspot-lab certify`.
//
//   hotspot-certify-fixture --break MODE -- HELPER-COMMAND [ARG...]
//
// It runs a real helper (normally the reference portal helper) and sits between it and hotspotd, relaying
// protocol frames and breaking exactly one rule (MODE), so each certification check can be shown to fail
// for the right reason. Modes: never-maintain, claim-everything, claim-decoys, no-passwords, high-everything,
// double, sdk-double, fail-just-joined, no-reauth, fail-unsupported, logoff-keeps-session, never-probe,
// sign-out-after-login, temporary-as-failure, invalid-result, trust-dns, drop-cookies, ipv4-literal, none (docs/CERTIFY.md
// has the table).
import Foundation
import HotspotHelper
import HotspotProtocol
import HotspotSystem
import ReferenceHelperSupport

let modes = ["never-maintain", "claim-everything", "claim-decoys", "no-passwords", "high-everything", "double", "sdk-double",
             "fail-just-joined", "no-reauth", "fail-unsupported", "logoff-keeps-session", "never-probe", "sign-out-after-login",
             "temporary-as-failure", "invalid-result", "trust-dns", "drop-cookies", "ipv4-literal", "none"]

func log(_ s: String) { FileHandle.standardError.write(Data("hotspot-certify-fixture: \(s)\n".utf8)) }

var arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 4, arguments[0] == "--break", modes.contains(arguments[1]), arguments[2] == "--" else {
    log("usage: hotspot-certify-fixture --break MODE -- HELPER-COMMAND [ARG...]; modes: \(modes.joined(separator: ", "))")
    exit(64)
}
let mode = arguments[1]
let helperCommand = Array(arguments[3...])
guard let daemonPath = ProcessInfo.processInfo.environment["HOTSPOT_HELPER_SOCKET"] else {
    log("HOTSPOT_HELPER_SOCKET is not set")
    exit(64)
}

// The helper connects to us; we connect to hotspotd on its behalf.
let relayDir = "/tmp/hsl-fixture-\(getpid())"
let relayPath = relayDir + "/relay.sock"
let listener: UnixSocket
do {
    listener = try UnixSocket.listen(path: relayPath)
} catch {
    log("listen on \(relayPath): \(error)")
    exit(1)
}
var environment = ProcessInfo.processInfo.environment
environment["HOTSPOT_HELPER_SOCKET"] = relayPath
let executable = helperCommand[0].contains("/") ? helperCommand[0]
    : ((try? BuildProducts.locate(helperCommand[0])) ?? helperCommand[0])
let child: ChildProcess
do {
    child = try ChildProcess.spawn(ProcessConfiguration(executable, Array(helperCommand.dropFirst()), environment: environment))
} catch {
    log("start \(helperCommand.joined(separator: " ")): \(error)")
    exit(1)
}
log("mode \(mode); helper pid \(child.pid)")
@MainActor func finish(_ code: Int32) -> Never {
    _ = try? child.terminate(grace: .seconds(1))
    unlink(relayPath)
    rmdir(relayDir)
    exit(code)
}
guard listener.waitReadable(timeout: .seconds(30)), let helper = try? listener.accept() else {
    log("the helper did not connect")
    finish(1)
}
let daemon: UnixSocket
do {
    daemon = try UnixSocket.connect(path: daemonPath)
} catch {
    log("connect to hotspotd at \(daemonPath): \(error)")
    finish(1)
}

/// Commands seen from hotspotd, by id.
var commands: [Int: JSON] = [:]
var authenticateAnswers = 0

@MainActor func send(_ socket: UnixSocket, _ json: JSON) {
    do { try socket.writeAll(frame(json.bytes)) } catch { log("write: \(error)"); finish(1) }
}

func replaced(_ json: JSON, _ key: String, _ value: JSON) -> JSON {
    var o = json.objectValue ?? [:]
    o[key] = value
    return .object(o)
}

/// sign-out-after-login: the logoff command to hand the helper after its login, and the login's success answer,
/// held until the helper has answered that logoff (signed out).
var pendingFakeLogoff: JSON?
var fakeLogoffs = 0
var heldLoginAnswers: [Int: JSON] = [:]

/// A helper's message on its way to hotspotd: returns what to send instead (empty: drop).
@MainActor func fromHelper(_ message: JSON) -> [JSON] {
    guard message["type"]?.stringValue == "response", let id = message["command"]?.intValue, let command = commands[id] else { return [message] }
    if id > 1_000_000 {
        guard let held = heldLoginAnswers.removeValue(forKey: id) else {
            log("the helper answered the fake logoff \(id): not relayed")
            return []
        }
        log("the helper answered the fake logoff \(id) (signed out): not relayed; now relaying its login's success")
        return [held]
    }
    let type = command["commandType"]?.intValue ?? 0   // 1 filterScanList 2 evaluate 3 authenticate 5 maintain
    let result = message["result"]?.intValue ?? 0
    var out = message
    switch mode {
    case "never-maintain" where type == 5:
        log("dropping the answer to maintain \(id)")
        return []
    case "claim-everything" where type == 1:
        let all = (command["networkList"]?.arrayValue ?? []).map { n -> JSON in
            var o = n.objectValue ?? [:]
            o["password"] = nil
            return .object(o)
        }
        out = replaced(message, "networkList", .array(all))
    case "claim-decoys" where type == 1:
        // Every listed network, with a guessed password for the secure ones: the decoys are claimed for real.
        let all = (command["networkList"]?.arrayValue ?? []).map { n -> JSON in
            var o = n.objectValue ?? [:]
            if n["security"]?.stringValue != "open" { o["password"] = "guessed" }
            return .object(o)
        }
        out = replaced(message, "networkList", .array(all))
    case "no-passwords" where type == 1:
        // What the helper claims, plus every secure network, without passwords (hotspotd ignores those claims).
        var list = message["networkList"]?.arrayValue ?? []
        for n in command["networkList"]?.arrayValue ?? [] where n["security"]?.stringValue != "open" {
            var o = n.objectValue ?? [:]
            o["password"] = nil
            list.append(.object(o))
        }
        out = replaced(message, "networkList", .array(list))
    case "sdk-double":
        // As the SDK does when a handler calls deliver() twice: the response once, then the refusal reported.
        return [message, ["type": "report", "kind": "secondDelivery", "command": .number(Double(id)),
                          "message": .string("deliver() called a second time for command \(id): ignored")]]
    case "sign-out-after-login" where type == 3 && result == 0:
        // The helper is told to log off (a command hotspotd never sent), so it signs out of the portal right after
        // signing in, as a helper whose authenticate handler calls its logout after its login does; its success
        // answer goes on only once it has signed out. (Relaying the answer first made the sign-out race the lab's
        // gate reading after Authenticated: on a loaded machine the reading could come first, every time, and the
        // verdict changed with the load; CI run 35.)
        fakeLogoffs += 1
        let fake = 1_000_000 + fakeLogoffs
        pendingFakeLogoff = ["type": "command", "id": .number(Double(fake)), "commandType": 6, "commandName": "logoff",
                             "helper": command["helper"] ?? "", "network": command["network"] ?? .null]
        commands[fake] = pendingFakeLogoff
        heldLoginAnswers[fake] = message
        log("signing out right after the login of command \(id) (fake logoff \(fake)); its answer waits for that")
        return []
    case "high-everything" where type == 2:
        var network = command["network"]?.objectValue ?? [:]
        network["confidence"] = 2
        out = replaced(message, "network", .object(network))
    case "double":
        return [message, message]
    case "fail-just-joined" where type == 5 && command["network"]?["didJustJoin"]?.boolValue == true:
        out = replaced(message, "result", 1)
    case "no-reauth" where type == 3:
        authenticateAnswers += 1
        if authenticateAnswers > 1 { out = replaced(message, "result", 1) }
    case "fail-unsupported" where result == 5:
        out = replaced(message, "result", 1)
    case "temporary-as-failure" where result == 6:
        out = replaced(message, "result", 1)
    case "invalid-result" where type == 5 && result == 0:
        out = replaced(message, "result", 2)
    default:
        break
    }
    if out != message { log("rewrote the answer to command \(id): \(out.text)") }
    return [out]
}

/// hotspotd's message on its way to the helper: returns what to forward (empty: answered here).
@MainActor func fromDaemon(_ message: JSON) -> [JSON] {
    if message["type"]?.stringValue == "command", let id = message["id"]?.intValue {
        commands[id] = message
        // trust-dns: maintain is answered from DNS alone, as a helper that trusts DNS does: the probe's name
        // resolves, so the internet must be there (success); it does not, so failure.
        if mode == "trust-dns", message["commandType"]?.intValue == 5 {
            let host = URL(string: HotspotHelperEnvironment.probeURL)?.host ?? "captive.apple.com"
            let result: Int
            do {
                // 8 s, as the reference helper allows (PortalHelperOptions.httpTimeout): a tighter bound made a defect depend on load.
                let address = try HotspotResolver.fromEnvironment(mark: HotspotHelper.commandTrafficMark).resolve(host, timeout: .seconds(8))
                log("maintain \(id): \(host) resolves to \(address): answering success without looking further")
                result = 0
            } catch {
                log("maintain \(id): \(error): answering failure")
                result = 1
            }
            send(daemon, ["type": "response", "command": .number(Double(id)), "result": .number(Double(result))])
            return []
        }
        // never-probe: maintain answered from memory (success) without asking the helper, as a helper that
        // never probes does: it keeps answering success after the portal session ended.
        if mode == "never-probe", message["commandType"]?.intValue == 5 {
            log("maintain \(id): answering success from memory")
            send(daemon, ["type": "response", "command": .number(Double(id)), "result": 0])
            return []
        }
        // drop-cookies: authenticate answered here, signing in as the reference portal helper does, with an HTTP
        // client that keeps no cookies (a vendor's HTTP stack without a cookie store).
        if mode == "drop-cookies", message["commandType"]?.intValue == 3 {
            let (result, why) = signInWithoutCookies()
            log("authenticate \(id) without cookies: result \(result): \(why)")
            send(daemon, ["type": "response", "command": .number(Double(id)), "result": .number(Double(result))])
            return []
        }
        // ipv4-literal: the helper's sign-in starts at the portal's IPv4 address written into its code
        // (`hardCodedPortal`), as a helper that never learnt IPv6 does. Reachable (an IPv4 network): the helper signs
        // in as usual. Not (an IPv6-only network: no IPv4 route, and NAT64 stays closed until the sign-in): failure.
        if mode == "ipv4-literal", message["commandType"]?.intValue == 3 {
            let client = HotspotHTTPClient(mark: HotspotHelper.commandTrafficMark, timeout: .seconds(8))
            do {
                let page = try client.get(hardCodedPortal)
                log("authenticate \(id): the portal at its hard-coded IPv4 address \(hardCodedPortal) answered \(page.status): signing in")
            } catch {
                log("authenticate \(id): the portal at its hard-coded IPv4 address \(hardCodedPortal): \(error): answering failure")
                send(daemon, ["type": "response", "command": .number(Double(id)), "result": 1])
                return []
            }
        }
        if mode == "logoff-keeps-session", message["commandType"]?.intValue == 6 {
            log("answering logoff \(id) myself without ending the portal session")
            send(daemon, ["type": "response", "command": .number(Double(id)), "result": 0])
            return []
        }
    }
    return [message]
}

/// ipv4-literal: the café portal's address as a helper that hard-codes it has it (topologies/certify.yaml, v6-only.yaml).
let hardCodedPortal = "http://198.51.100.1:8080/"

/// The helper's `--account USER:PASSWORD`.
let account: (String, String)? = {
    guard let flag = helperCommand.firstIndex(of: "--account"), flag + 1 < helperCommand.count,
          let colon = helperCommand[flag + 1].firstIndex(of: ":") else { return nil }
    let text = helperCommand[flag + 1]
    return (String(text[..<colon]), String(text[text.index(after: colon)...]))
}()

/// The reference portal helper's form sign-in (probe, the portal page, POST the account, probe again) over
/// `HotspotHTTPClient` alone: no cookie jar, so a cookie the page sets is not sent back. Returns the result's wire
/// value (0 success, 1 failure, 5 unsupportedNetwork, 6 temporaryFailure) and why.
@MainActor func signInWithoutCookies() -> (Int, String) {
    let client = HotspotHTTPClient(mark: HotspotHelper.commandTrafficMark, timeout: .seconds(8))
    let http: HTTPSend = { (request) throws(HotspotTrafficError) -> HotspotHTTPResponse in try client.send(request) }
    do {
        let discovery = try PortalDiscovery<HTMLForm>.discover(http, recognize: { HTMLScan.forms(in: $0).first { $0.passwordField != nil } },
                                                               notAPage: "not a form-login page", notOnPage: "has no password form")
        switch discovery {
        case .online: return (0, "the probe already succeeds")
        case .unknown(let why): return (5, why)
        case .page(let form, let url):
            guard let account, let password = form.passwordField,
                  let user = form.typedFields.first(where: { $0.type != "password" && !$0.name.isEmpty }),
                  let action = url.resolving(form.action) else { return (1, "no account or no usable form at \(url)") }
            let response = try http(.postForm(action.description, fields: form.defaultSubmission + [(user.name, account.0), (password.name, account.1)]))
            switch response.status {
            case 200...399: break
            case 400...499: return (1, "the sign-in at \(action) was refused (\(response.status))")
            default: return (6, "the sign-in at \(action) answered \(response.status)")
            }
            if case .online = try ProbeResult.probe(http) { return (0, "signed in at \(action)") }
            return (6, "the portal accepted, but the probe is still captive")
        }
    } catch {
        return (6, "\(error)")
    }
}

// Relay until either side closes.
var decoders = [FrameDecoder(maximumLength: 16 << 20), FrameDecoder(maximumLength: 16 << 20)]
var buffer = [UInt8](repeating: 0, count: 65_536)
while true {
    var fds = [pollfd(fd: helper.fd, events: Int16(POLLIN), revents: 0), pollfd(fd: daemon.fd, events: Int16(POLLIN), revents: 0)]
    if poll(&fds, 2, 500) < 0 { if errno == EINTR { continue }; break }
    if let status = try? child.poll() { log("the helper exited (\(status))"); finish(0) }
    for (index, pfd) in fds.enumerated() where pfd.revents != 0 {
        let source = index == 0 ? helper : daemon
        let outcome = (try? buffer.withUnsafeMutableBytes { try source.read(into: $0) }) ?? .endOfFile
        switch outcome {
        case .bytes(let n): decoders[index].append(buffer[0..<n])
        case .wouldBlock: continue
        case .endOfFile:
            log(index == 0 ? "the helper closed its connection" : "hotspotd closed the connection")
            finish(0)
        }
        while let payload = try? decoders[index].nextFrame(), let json = try? JSON.parse(payload) {
            if index == 0 { for m in fromHelper(json) { send(daemon, m) } } else { for m in fromDaemon(json) { send(helper, m) } }
            if let fake = pendingFakeLogoff {
                pendingFakeLogoff = nil
                send(helper, fake)
            }
        }
    }
}
finish(0)
