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

    /// The role's last launch before `entry` in its run, when nothing after it (a start answer, an exit, another
    /// launch) ended it before `entry`: a provider still launching.
    func unstartedLaunch(before entry: TraceEntry, role: String) -> TraceEntry? {
        guard let records = runs.first(where: { $0.records.contains(entry) })?.records,
              let at = records.firstIndex(of: entry),
              let launch = records[..<at].lastIndex(where: { $0.record.providerLaunched?.role == role }) else { return nil }
        let ended = records[(launch + 1)..<at].contains {
            $0.record.provider?.role == role && ["providerStarted", "providerExited", "providerLaunched"].contains($0.kind)
        }
        return ended ? nil : records[launch]
    }

    /// `start-stop` over one run: every launch answered start (true) before the process ended; every stop answered
    /// (`stopped`) before its connection ended and followed by exit status 0 (a kill ends it by signal 9); no exit without
    /// a stop. Judged by the records hotspotd wrote when it gave up, never by the judge's own clock (how far a record
    /// is from the trace's end): hotspotd gives up on a start when a command held for the launch goes unanswered by its
    /// deadline (`irregular` noAnswer) or its idle timer stops the provider, and on a stop by closing the connection
    /// (its 5 s stop grace), then killing the process (its 2 s kill grace), as iOS's own deadlines would. What was
    /// still owed when hotspotd stopped (its `stop` record) or the trace ended is not judged: hotspotd had not given up.
    func lifecycle(_ run: CertificationRun, _ launches: Int, _ stops: Int, _ bad: [String]) -> (Int, Int, [String]) {
        var (launches, stops, bad) = (launches, stops, bad)
        let trace = records(run)
        /// The first record after `i` that is of one of `kinds` for `role`, or the end of the role's helper-socket
        /// connection `connection`, or a command of the role unanswered by its deadline (with `noAnswer`), or
        /// hotspotd's `stop`; nil at the trace's end.
        func next(_ i: Int, role: String, _ kinds: Set<String>, connection: Int? = nil, noAnswer: Bool = false) -> TraceEntry? {
            trace[(i + 1)...].first { entry in
                if entry.record.stop != nil || (kinds.contains(entry.kind) && entry.record.provider?.role == role) { return true }
                if let connection, let d = entry.record.disconnect, d.socket == "helper", d.peer.connection == connection { return true }
                if noAnswer, let x = entry.record.irregular, x.irregularity == "noAnswer", Self.role(handling: x.commandType ?? "") == role { return true }
                return false
            }
        }
        /// The connection of the process the role's last launch before `i` started: its registration after that launch.
        func connection(before i: Int, role: String) -> Int? {
            let launch = trace[..<i].lastIndex { $0.record.providerLaunched?.role == role } ?? -1
            return trace[(launch + 1)..<i].last { $0.record.providerRegistered?.role == role }?.record.providerRegistered?.peer.connection
        }
        var stopping: Set<String> = []
        var down = false
        for (i, r) in trace.enumerated() {
            let role = r.record.provider?.role ?? ""
            switch r.record {
            case .stop:
                // hotspotd stopped: its providers' connections close with it; nothing after is the run's until it starts.
                down = true
                stopping = []
            case .start:
                down = false
            case _ where down:
                break
            case .providerLaunched:
                launches += 1
                stopping.remove(role)
                switch next(i, role: role, ["providerStarted", "providerExited", "providerLaunched", "providerStopped"], noAnswer: true) {
                case let n? where n.record.providerStarted != nil:
                    if n.record.providerStarted?.ok != true { bad += [evidence(run, r), evidence(run, n) + " (start() returned false)"] }
                case let n? where n.record.providerStopped != nil:
                    bad += [evidence(run, r), evidence(run, n) + " (never answered start: hotspotd stopped it)"]
                case let n? where n.record.irregular != nil:
                    bad += [evidence(run, r), evidence(run, n) + " (never answered start: the command held for it went unanswered by its deadline)"]
                case let n? where n.record.stop == nil:
                    bad += [evidence(run, r), evidence(run, n) + " (ended before answering start)"]
                default:
                    break  // still launching when hotspotd stopped or the trace ended
                }
            case .providerStopped:
                stops += 1
                stopping.insert(role)
                let after = next(i, role: role, ["providerStoppedAck", "providerExited", "providerKilled", "providerLaunched"],
                                 connection: connection(before: i, role: role))
                guard let ack = after, ack.record.providerStoppedAck != nil else {
                    if let after, after.record.stop == nil { bad += [evidence(run, r), evidence(run, after) + " (no stopped answer first)"] }
                    continue
                }
                // Judged by the exit status, not by a kill record: hotspotd records `providerKilled` when its kill grace
                // (2 s) ends before it has reaped the process, which a starved hotspotd or reaper makes happen to a
                // provider that had already exited 0; a provider really killed exits by signal 9. No exit before
                // hotspotd stopped is not judged: its status is not known.
                if let exit = next(i, role: role, ["providerExited", "providerLaunched"]), exit.record.stop == nil {
                    if exit.record.providerExited == nil || exit.record.providerExited?.status != 0 {
                        bad += [evidence(run, ack), evidence(run, exit) + " (expected exit status 0 after stop)"]
                    }
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
