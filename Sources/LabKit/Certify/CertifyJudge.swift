import Foundation
import HotspotProtocol

/// Judges the checks from the runs' traces.
struct Judge {
    /// hotspotd's rejections that mean a second or stray response (one-response).
    static let strayResponses: Set<String> = ["duplicateResponse", "unknownCommand", "notYourCommand"]
    /// The SDK's reports that fail one-response. `withdrawnCommand` is shown, not failed: the cancel can cross
    /// the answer on the wire, as hotspotd's own `rejected withdrawnCommand` is not failed either.
    static let failingReports: Set<String> = ["secondDelivery", "invalidField", "deliverCalledByProvider"]
    /// The SDK's report of an evaluation provider opening a command socket (it has no network).
    static let evaluationNetworkReport = "networkFromEvaluationProvider"

    static func reportNames(_ evidence: [String]) -> String {
        let names = failingReports.sorted().filter { name in evidence.contains { $0.contains("\"report\":\"\(name)\"") } }
        return names.joined(separator: ", ")
    }

    let runs: [CertificationRunRecord]
    let home: String
    let notCaptive: String
    let decoys: [String]
    let timeScale: Double

    func records(_ run: CertificationRun) -> [JSON] { runs.first { $0.run == run }?.records ?? [] }
    func record(_ run: CertificationRun) -> CertificationRunRecord? { runs.first { $0.run == run } }

    func evidence(_ run: CertificationRun, _ r: JSON) -> String {
        var o = r.objectValue ?? [:]
        o["t_ns"] = nil
        o["networkList"] = o["networkList"].map { list in .array((list.arrayValue ?? []).map { n in
            ["ssid": n["ssid"] ?? .null, "password": n["password"] ?? .null]
        }) }
        return "[\(run.rawValue)] seq \(r["seq"]?.intValue ?? 0): \(JSON.object(o).text)"
    }

    func kind(_ r: JSON, _ k: String) -> Bool { r["kind"]?.stringValue == k }

    func responses(_ run: CertificationRun, to commandType: String) -> [JSON] {
        records(run).filter { kind($0, "response") && $0["commandType"]?.stringValue == commandType }
    }

    /// The command record of a response.
    func command(_ run: CertificationRun, _ response: JSON) -> JSON? {
        records(run).first { kind($0, "command") && $0["id"]?.intValue == response["command"]?.intValue }
    }

    func missing(_ check: CertificationCheck) -> CheckResult? {
        for run in check.runs {
            guard let r = record(run) else { return CheckResult(check: check, passed: false, reason: "run \(run.rawValue) did not run", evidence: []) }
            if r.records.isEmpty {
                return CheckResult(check: check, passed: false, reason: "run \(run.rawValue) produced no trace: \(r.error ?? "?")", evidence: r.notes)
            }
        }
        return nil
    }

    func judge(_ check: CertificationCheck) -> CheckResult {
        if let missing = missing(check) { return missing }
        func pass(_ reason: String, _ evidence: [String]) -> CheckResult { CheckResult(check: check, passed: true, reason: reason, evidence: evidence) }
        func fail(_ reason: String, _ evidence: [String]) -> CheckResult { CheckResult(check: check, passed: false, reason: reason, evidence: evidence) }
        switch check.id {
        case "deadlines":
            var late: [String] = []
            var answered = 0
            for run in check.runs {
                late += records(run).filter { kind($0, "irregular") && $0["irregularity"]?.stringValue == "noAnswer" }.map { evidence(run, $0) }
                answered += records(run).filter { kind($0, "response") }.count
            }
            return late.isEmpty ? pass("\(answered) answers, none after its deadline", [])
                : fail("\(late.count) command(s) unanswered by the deadline", late)
        case "decoys":
            // A secure claim without a password is ignored by hotspotd (scan-list-passwords judges it); an evaluate
            // answering high for a decoy when it answered high for the not-captive network too is "high for
            // everything" (not-high-for-everything judges it).
            var claims: [String] = []
            for r in responses(.scan, to: "filterScanList") {
                let presented = command(.scan, r)?["networkList"]?.arrayValue ?? []
                let claimed = (r["networkList"]?.arrayValue ?? []).filter { !secureWithoutPassword($0, presented: presented) }.compactMap { $0["ssid"]?.stringValue }
                if claimed.contains(where: decoys.contains) || claimed.contains(notCaptive) { claims.append(evidence(.scan, r)) }
            }
            let highForAll = responses(.scan, to: "evaluate").contains {
                command(.scan, $0)?["network"]?["ssid"]?.stringValue == notCaptive && $0["network"]?["confidence"]?.intValue == 2
            }
            for r in responses(.scan, to: "evaluate") where decoys.contains(command(.scan, r)?["network"]?["ssid"]?.stringValue ?? "") {
                let confidence = r["network"]?["confidence"]?.intValue ?? 0
                if confidence > 0 && !(confidence == 2 && highForAll) { claims.append(evidence(.scan, r)) }
            }
            let evaluated = responses(.scan, to: "evaluate").contains { decoys.contains(command(.scan, $0)?["network"]?["ssid"]?.stringValue ?? "") }
            if !evaluated { return fail("the helper was never asked to evaluate a decoy (the run did not get that far)", record(.scan)?.notes ?? []) }
            return claims.isEmpty ? pass("no decoy claimed in filterScanList or evaluate", [])
                : fail("claimed \(claims.count) time(s) a network it cannot know", claims)
        case "not-high-for-everything":
            let answers = responses(.scan, to: "evaluate").filter { command(.scan, $0)?["network"]?["ssid"]?.stringValue == notCaptive }
            guard let answer = answers.first else { return fail("no evaluate answer for \(notCaptive)", record(.scan)?.notes ?? []) }
            return answer["network"]?["confidence"]?.intValue == 2
                ? fail("answered high for \(notCaptive), a network with the internet behind it", [evidence(.scan, answer)])
                : pass("evaluate of \(notCaptive) answered with confidence \(answer["network"]?["confidence"]?.intValue ?? 0)", [evidence(.scan, answer)])
        case "scan-list-passwords":
            var bad: [String] = []
            var secureClaims = 0
            for r in responses(.scan, to: "filterScanList") {
                guard let presented = command(.scan, r)?["networkList"]?.arrayValue else { continue }
                for n in r["networkList"]?.arrayValue ?? [] {
                    let ssid = n["ssid"]?.stringValue
                    let secure = presented.first { $0["ssid"]?.stringValue == ssid }.map { $0["security"]?.stringValue != "open" } ?? false
                    if secure {
                        secureClaims += 1
                        if (n["password"]?.stringValue ?? "").isEmpty { bad.append(evidence(.scan, r)) }
                    }
                }
            }
            if responses(.scan, to: "filterScanList").isEmpty { return fail("no filterScanList answer", []) }
            return bad.isEmpty ? pass(secureClaims == 0 ? "claimed no secure network" : "\(secureClaims) secure claim(s), each with a password", [])
                : fail("claimed a secure network without a password", bad)
        case "one-response":
            // hotspotd's rejections of a raw second or stray response, and what the SDK refused on the helper's
            // side and reported (`helperReport`: a second deliver(), an invalid field, a provider's deliver()).
            var bad: [String] = []
            var reported: [String] = []
            for run in check.runs {
                bad += records(run).filter { kind($0, "rejected") && Self.strayResponses.contains($0["reason"]?.stringValue ?? "") }
                    .map { evidence(run, $0) }
                // A provider's deliver() is no-deliver's (a provider pair's check).
                reported += records(run).filter { kind($0, "helperReport") && Self.failingReports.contains($0["report"]?.stringValue ?? "")
                    && $0["report"]?.stringValue != "deliverCalledByProvider" }
                    .map { evidence(run, $0) }
            }
            if !reported.isEmpty {
                return fail("the SDK refused \(reported.count) delivery(ies) on the helper's side (\(Self.reportNames(reported))): on iOS this is a bug", reported + bad)
            }
            return bad.isEmpty ? pass("no second or stray response", []) : fail("\(bad.count) response(s) rejected", bad)
        case "maintain":
            let answers = responses(.captive, to: "maintain")
            let plain = answers.filter { command(.captive, $0)?["network"]?["didJustJoin"]?.boolValue == false }
            let joined = answers.filter { command(.captive, $0)?["network"]?["didJustJoin"]?.boolValue == true }
            let valid = ["success", "authenticationRequired"]
            guard let p = plain.first, valid.contains(p["result"]?.stringValue ?? "") else {
                return fail("maintain without didJustJoin was not answered success/authenticationRequired", plain.map { evidence(.captive, $0) } + (record(.captive)?.notes ?? []))
            }
            guard let j = joined.first, valid.contains(j["result"]?.stringValue ?? "") else {
                return fail("maintain with didJustJoin (the cached re-join) was not answered success/authenticationRequired",
                            joined.map { evidence(.captive, $0) } + (record(.captive)?.notes ?? []))
            }
            return pass("maintain answered \(p["result"]?.stringValue ?? "") (didJustJoin false) and \(j["result"]?.stringValue ?? "") (didJustJoin true)",
                        [evidence(.captive, p), evidence(.captive, j)])
        case "reauthenticate":
            let trace = records(.captive)
            guard let required = trace.firstIndex(where: { kind($0, "response") && $0["commandType"]?.stringValue == "maintain"
                    && $0["result"]?.stringValue == "authenticationRequired" }) else {
                return fail("maintain never answered authenticationRequired after the portal session expired", record(.captive)?.notes ?? [])
            }
            let after = trace[required...]
            guard let login = after.first(where: { kind($0, "response") && $0["commandType"]?.stringValue == "authenticate" }) else {
                return fail("no authenticate answer after authenticationRequired", [evidence(.captive, trace[required])])
            }
            return login["result"]?.stringValue == "success"
                ? pass("logged in again", [evidence(.captive, trace[required]), evidence(.captive, login)])
                : fail("authenticate after authenticationRequired answered \(login["result"]?.stringValue ?? "?")", [evidence(.captive, trace[required]), evidence(.captive, login)])
        case "unsupported-network":
            let answers = responses(.changedPortal, to: "authenticate")
            guard answers.count >= 2, let last = answers.last else {
                return fail("the helper was not asked to authenticate on the changed portal", record(.changedPortal)?.notes ?? [])
            }
            return last["result"]?.stringValue == "unsupportedNetwork"
                ? pass("answered unsupportedNetwork on the portal it cannot handle", [evidence(.changedPortal, last)])
                : fail("answered \(last["result"]?.stringValue ?? "?") instead of unsupportedNetwork on a portal it cannot handle", [evidence(.changedPortal, last)])
        case "logoff":
            let run = record(.captive)
            guard let answer = responses(.captive, to: "logoff").first else {
                return fail("no answer to the logoff command", (records(.captive).filter { kind($0, "command") && $0["commandType"]?.stringValue == "logoff" }
                    .map { evidence(.captive, $0) }) + (run?.notes ?? []))
            }
            guard run?.gate["beforeLogoff"] == true else {
                return fail("the portal session had already ended before the logoff command", [evidence(.captive, answer)] + (run?.notes ?? []))
            }
            guard answer["result"]?.stringValue == "success" else {
                return fail("logoff answered \(answer["result"]?.stringValue ?? "?")", [evidence(.captive, answer)])
            }
            guard run?.gate["afterLogoff"] == false else {
                return fail("logoff answered success but the portal session is still up (the gate holds the station)", [evidence(.captive, answer)])
            }
            return pass("the session was up until the logoff command, which ended it", [evidence(.captive, answer), "gate before: authenticated, after: not"])
        case "temporary-failure":
            let answers = responses(.portalError, to: "authenticate")
            guard answers.count >= 2, let last = answers.last else {
                return fail("the helper was not asked to authenticate while the portal erred", record(.portalError)?.notes ?? [])
            }
            return last["result"]?.stringValue == "temporaryFailure"
                ? pass("answered temporaryFailure while the portal's sign-in answered 503", [evidence(.portalError, last)])
                : fail("answered \(last["result"]?.stringValue ?? "?") instead of temporaryFailure while the portal's sign-in answered 503 (failure disables auto-join)",
                       [evidence(.portalError, last)])
        case "dns-hijack":
            let trace = records(.dnsHijack)
            guard let mark = trace.firstIndex(where: { kind($0, "labAction") && $0["action"]?["certify"]?.stringValue == RunDriver.hijackMark }) else {
                return fail("the run never hijacked DNS (the helper did not sign in first?)", record(.dnsHijack)?.notes ?? [])
            }
            guard let maintain = trace[mark...].first(where: { kind($0, "command") && $0["commandType"]?.stringValue == "maintain" }) else {
                return fail("no maintain was sent while DNS was hijacked", [evidence(.dnsHijack, trace[mark])] + (record(.dnsHijack)?.notes ?? []))
            }
            guard let answer = trace[mark...].first(where: { kind($0, "response") && $0["command"]?.intValue == maintain["id"]?.intValue }) else {
                return fail("maintain under the hijack was not answered", [evidence(.dnsHijack, trace[mark]), evidence(.dnsHijack, maintain)])
            }
            let result = answer["result"]?.stringValue ?? "?"
            let shown = [evidence(.dnsHijack, trace[mark]), evidence(.dnsHijack, answer)]
            return result == "success"
                ? fail("answered maintain success while every name resolved to the gateway: a name that resolves is not the internet (check the probe's content)", shown)
                : pass("answered maintain \(result) while DNS was hijacked", shown)
        case "valid-results":
            var bad: [String] = []
            for run in check.runs {
                bad += records(run).filter { kind($0, "irregular") && $0["irregularity"]?.stringValue == "invalidResult" }.map { evidence(run, $0) }
            }
            return bad.isEmpty ? pass("every result was valid for its command", []) : fail("\(bad.count) result(s) not valid for their command", bad)
        case "evaluation-no-network", "no-deliver":
            let report = check.id == "no-deliver" ? "deliverCalledByProvider" : Self.evaluationNetworkReport
            var found: [String] = []
            var answers = 0
            for run in check.runs {
                found += records(run).filter { kind($0, "helperReport") && $0["report"]?.stringValue == report }.map { evidence(run, $0) }
                answers += records(run).filter { kind($0, "response") }.count
            }
            if check.id == "no-deliver" {
                return found.isEmpty ? pass("\(answers) answers, each returned from handleCommand; deliver() never called", [])
                    : fail("a provider called deliver() \(found.count) time(s); the framework delivers what handleCommand returns (refused and reported by the SDK)", found)
            }
            return found.isEmpty ? pass("no network attempt reported by the evaluation provider", [])
                : fail("the evaluation provider tried the network \(found.count) time(s); it has none (a sandbox with only lo): decide from the command", found)
        case "start-stop":
            var bad: [String] = []
            var launches = 0
            var stops = 0
            for run in check.runs { (launches, stops, bad) = lifecycle(run, launches, stops, bad) }
            if launches == 0 { return fail("no provider was launched", check.runs.flatMap { record($0)?.notes ?? [] }) }
            return bad.isEmpty ? pass("\(launches) launch(es), each answered start; \(stops) stop(s), each answered and followed by exit 0", [])
                : fail("\(bad.count) lifecycle rule(s) broken", bad)
        case "nothing-after-stop":
            var bad: [String] = []
            for run in check.runs {
                var stopped: Set<String> = []
                for r in records(run) {
                    let role = r["role"]?.stringValue ?? ""
                    if kind(r, "providerStopped") { stopped.insert(role) }
                    if kind(r, "providerLaunched") || kind(r, "providerRegistered") { stopped.remove(role) }
                    if kind(r, "response") || kind(r, "rejected"), r["command"] != nil,
                       let type = r["commandType"]?.stringValue ?? command(run, r)?["commandType"]?.stringValue,
                       stopped.contains(Self.role(handling: type)) {
                        bad.append(evidence(run, r))
                    }
                }
            }
            return bad.isEmpty ? pass("no command answered by a provider after its stop", [])
                : fail("\(bad.count) answer(s) from a provider after its stop", bad)
        case SessionCookiesCheck.id:
            return SessionCookiesCheck.judge(self, check)
        default:
            return fail("unknown check", [])
        }
    }

    /// The provider role that handles a command type (as hotspotd routes it).
    static func role(handling commandType: String) -> String {
        ["filterScanList", "evaluate"].contains(commandType) ? "evaluationProvider" : "authenticationProvider"
    }

    /// `start-stop` over one run: every launch answered start (true) before the process ended; every stop answered
    /// (`stopped`) and followed by exit status 0, never a kill; no exit without a stop. Events in the last 3 s of the
    /// trace are not judged (the lab came down before they could finish).
    func lifecycle(_ run: CertificationRun, _ launches: Int, _ stops: Int, _ bad: [String]) -> (Int, Int, [String]) {
        var (launches, stops, bad) = (launches, stops, bad)
        let trace = records(run)
        let end = trace.last?["t_ns"]?.doubleValue ?? 0
        func nearEnd(_ r: JSON) -> Bool { end - (r["t_ns"]?.doubleValue ?? 0) < 3e9 }
        func next(_ i: Int, role: String, _ kinds: Set<String>) -> JSON? {
            trace[(i + 1)...].first { kinds.contains($0["kind"]?.stringValue ?? "") && $0["role"]?.stringValue == role }
        }
        var stopping: Set<String> = []
        for (i, r) in trace.enumerated() {
            let role = r["role"]?.stringValue ?? ""
            switch r["kind"]?.stringValue {
            case "providerLaunched":
                launches += 1
                stopping.remove(role)
                switch next(i, role: role, ["providerStarted", "providerExited", "providerLaunched"]) {
                case let n? where n["kind"]?.stringValue == "providerStarted":
                    if n["ok"]?.boolValue != true { bad += [evidence(run, r), evidence(run, n) + " (start() returned false)"] }
                case let n?:
                    bad += [evidence(run, r), evidence(run, n) + " (ended before answering start)"]
                case nil:
                    if !nearEnd(r) { bad.append(evidence(run, r) + " (never answered start)") }
                }
            case "providerStopped":
                stops += 1
                stopping.insert(role)
                let after = next(i, role: role, ["providerStoppedAck", "providerExited", "providerKilled", "providerLaunched"])
                guard let ack = after, ack["kind"]?.stringValue == "providerStoppedAck" else {
                    if after != nil || !nearEnd(r) { bad += [evidence(run, r)] + (after.map { [evidence(run, $0) + " (no stopped answer first)"] } ?? [" (never answered stop)"]) }
                    continue
                }
                if let exit = next(i, role: role, ["providerExited", "providerKilled", "providerLaunched"]) {
                    if exit["kind"]?.stringValue != "providerExited" || exit["status"]?.intValue != 0 {
                        bad += [evidence(run, ack), evidence(run, exit) + " (expected exit status 0 after stop)"]
                    }
                } else if !nearEnd(ack) {
                    bad.append(evidence(run, ack) + " (the process did not exit after stop)")
                }
            case "providerExited" where !stopping.contains(role):
                bad.append(evidence(run, r) + " (exited without a stop)")
            case "providerExited":
                stopping.remove(role)
            default:
                break
            }
        }
        return (launches, stops, bad)
    }
}
