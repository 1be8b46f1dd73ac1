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

    func records(_ run: CertificationRun) -> [TraceEntry] { runs.first { $0.run == run }?.records ?? [] }
    func record(_ run: CertificationRun) -> CertificationRunRecord? { runs.first { $0.run == run } }

    /// A record as evidence: `[run] seq N: {...}` (`TraceEntry.evidenceText`).
    func evidence(_ run: CertificationRun, _ r: TraceEntry) -> String {
        "[\(run.rawValue)] seq \(r.seq): \(r.evidenceText)"
    }

    func responses(_ run: CertificationRun, to commandType: String) -> [Traced<TraceRecord.Response>] {
        records(run).of(\.response).filter { $0.commandType == commandType }
    }

    /// The command record of a response.
    func command(_ run: CertificationRun, _ response: TraceRecord.Response) -> Traced<TraceRecord.Command>? {
        records(run).of(\.command).first { $0.id == response.command }
    }

    /// The notes of a run (what the driver saw), for a failure's evidence.
    func notes(_ run: CertificationRun) -> [String] { record(run)?.notes ?? [] }

    func missing(_ check: CertificationCheck) -> CheckResult? {
        for run in check.runs {
            guard let r = record(run) else { return CheckResult(check: check, passed: false, reason: "run \(run.rawValue) did not run", evidence: []) }
            if r.records.isEmpty {
                return CheckResult(check: check, passed: false, reason: "run \(run.rawValue) produced no trace: \(r.error ?? "?")", evidence: r.notes)
            }
        }
        return nil
    }

    func pass(_ check: any CertifyCheck, _ reason: String, _ evidence: [String]) -> CheckResult {
        CheckResult(check: check.descriptor, passed: true, reason: reason, evidence: evidence)
    }

    func fail(_ check: any CertifyCheck, _ reason: String, _ evidence: [String]) -> CheckResult {
        CheckResult(check: check.descriptor, passed: false, reason: reason, evidence: evidence)
    }

    /// The check's own rule (its file's `judge`), after the runs it reads are there.
    func judge(_ check: CertificationCheck) -> CheckResult {
        if let missing = missing(check) { return missing }
        guard let c = CertifyChecks.named(check.id) else { return CheckResult(check: check, passed: false, reason: "unknown check", evidence: []) }
        return c.judge(self)
    }

    /// The provider role that handles a command type (as hotspotd routes it).
    static func role(handling commandType: String) -> String {
        ["filterScanList", "evaluate"].contains(commandType) ? "evaluationProvider" : "authenticationProvider"
    }

    /// `start-stop` over one run: every launch answered start (true) before the process ended; every stop answered
    /// (`stopped`) and followed by exit status 0 (a kill ends it by signal 9); no exit without a stop. Events in the last 3 s of the
    /// trace are not judged (the lab came down before they could finish).
    func lifecycle(_ run: CertificationRun, _ launches: Int, _ stops: Int, _ bad: [String]) -> (Int, Int, [String]) {
        var (launches, stops, bad) = (launches, stops, bad)
        let trace = records(run)
        let end = trace.last?.time ?? 0
        func nearEnd(_ r: TraceEntry) -> Bool { end - (r.time ?? 0) < 3e9 }
        func next(_ i: Int, role: String, _ kinds: Set<String>) -> TraceEntry? {
            trace[(i + 1)...].first { kinds.contains($0.kind) && $0.record.provider?.role == role }
        }
        var stopping: Set<String> = []
        for (i, r) in trace.enumerated() {
            let role = r.record.provider?.role ?? ""
            switch r.record {
            case .providerLaunched:
                launches += 1
                stopping.remove(role)
                switch next(i, role: role, ["providerStarted", "providerExited", "providerLaunched"]) {
                case let n? where n.record.providerStarted != nil:
                    if n.record.providerStarted?.ok != true { bad += [evidence(run, r), evidence(run, n) + " (start() returned false)"] }
                case let n?:
                    bad += [evidence(run, r), evidence(run, n) + " (ended before answering start)"]
                case nil:
                    if !nearEnd(r) { bad.append(evidence(run, r) + " (never answered start)") }
                }
            case .providerStopped:
                stops += 1
                stopping.insert(role)
                let after = next(i, role: role, ["providerStoppedAck", "providerExited", "providerKilled", "providerLaunched"])
                guard let ack = after, ack.record.providerStoppedAck != nil else {
                    if after != nil || !nearEnd(r) { bad += [evidence(run, r)] + (after.map { [evidence(run, $0) + " (no stopped answer first)"] } ?? [" (never answered stop)"]) }
                    continue
                }
                // Judged by the exit status, not by a kill record: hotspotd records `providerKilled` when its kill grace
                // (2 s) ends before it has reaped the process, which a starved hotspotd or reaper makes happen to a
                // provider that had already exited 0; a provider really killed exits by signal 9.
                if let exit = next(i, role: role, ["providerExited", "providerLaunched"]) {
                    if exit.record.providerExited == nil || exit.record.providerExited?.status != 0 {
                        bad += [evidence(run, ack), evidence(run, exit) + " (expected exit status 0 after stop)"]
                    }
                } else if !nearEnd(ack) {
                    bad.append(evidence(run, ack) + " (the process did not exit after stop)")
                }
            case .providerExited where !stopping.contains(role):
                bad.append(evidence(run, r) + " (exited without a stop)")
            case .providerExited:
                stopping.remove(role)
            default:
                break
            }
        }
        return (launches, stops, bad)
    }
}
