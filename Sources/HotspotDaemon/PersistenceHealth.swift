import HotspotCore
import HotspotProtocol

/// Failed writes of the trace file and the state file, as `status.persistence` shows them (docs/RELIABILITY.md,
/// "No silent loss"). Times are the trace's monotonic `t_ns`.
struct PersistenceHealth {
    /// Since when trace records are lost (nil: the last write succeeded), and why.
    var traceFailingSince: Duration?
    var traceError: String?
    /// Trace records not written since hotspotd started.
    var traceRecordsLost = 0
    /// Since when state writes fail (nil: the last one succeeded), and why.
    var stateFailingSince: Duration?
    var stateError: String?
    /// State writes that failed since hotspotd started.
    var stateFailedWrites = 0

    func json(traceFile: String?, stateFile: String) -> JSON {
        func ns(_ d: Duration?) -> JSON {
            guard let d else { return .null }
            let c = d.components
            return .number(Double(c.seconds) * 1e9 + Double(c.attoseconds / 1_000_000_000))
        }
        return .object([
            "trace": .object([
                "file": traceFile.map(JSON.string) ?? .null, "failingSince_ns": ns(traceFailingSince),
                "error": traceError.map(JSON.string) ?? .null, "recordsLost": .number(Double(traceRecordsLost)),
            ]),
            "state": .object([
                "file": .string(stateFile), "failingSince_ns": ns(stateFailingSince),
                "error": stateError.map(JSON.string) ?? .null, "failedWrites": .number(Double(stateFailedWrites)),
            ]),
        ])
    }
}

extension DaemonCore {
    /// The shell could not write a trace record (`TraceWriter`: nothing of it is in the file). Counted; the
    /// first of a run of failures is said once on stderr. No record is written about it now: it would be lost too.
    public func traceWriteFailed(error: String, first: Bool) -> [DaemonAction] {
        persistence.traceRecordsLost += 1
        if first || persistence.traceFailingSince == nil {
            persistence.traceFailingSince = clock.now()
            persistence.traceError = error
            emit(.log("hotspotd: \(error); trace records are dropped whole until a write succeeds again (status: persistence.trace)"))
        }
        return take()
    }

    /// A trace record was written after `loss`: said on stderr and in the trace (`traceLoss`).
    public func traceWriteRecovered(_ loss: TraceLoss) -> [DaemonAction] {
        persistence.traceFailingSince = nil
        persistence.traceError = nil
        emit(.log("hotspotd: trace file \(loss.file) is written again; \(loss.records) records were lost (seq \(loss.firstSeq) to \(loss.lastSeq)): \(loss.error)"))
        record(.traceLoss(loss))
        return take()
    }

    /// Writes the persisted state if it changed: a `persist` record, or on failure an `error` record, counted in
    /// `status.persistence.state` (said on stderr at the first failure of a run and when writes succeed again).
    func savePersistentState() {
        guard persistDirty else { return }
        persistDirty = false
        do {
            try store.save(persistentState)
            if persistence.stateFailingSince != nil {
                persistence.stateFailingSince = nil
                persistence.stateError = nil
                emit(.log("hotspotd: state file \(options.stateFile) is written again"))
            }
            record(.persist(.init(file: options.stateFile, state: persistentState.json)))
        } catch {
            stateWriteFailed("\(error)")
            record(.error(.init(message: "\(error)")))
        }
    }

    func stateWriteFailed(_ error: String) {
        persistence.stateFailedWrites += 1
        persistence.stateError = error
        if persistence.stateFailingSince == nil {
            persistence.stateFailingSince = clock.now()
            emit(.log("hotspotd: \(error); the state is kept in memory until a write succeeds (status: persistence.state)"))
        }
    }
}
