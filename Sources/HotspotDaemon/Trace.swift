import HotspotCore
import HotspotProtocol
import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// The trace file (docs/TRACE.md): one JSON object per line, append-only. `DaemonCore` numbers the records
/// (`seq`, `t_ns`, `kind`) and sends them to subscribers; this writes them to the file and, with `echo`, stderr.
///
/// The file is rotated: a record that would take it past `maximumBytes` goes to a new file, the old ones
/// shifting to `PATH.1` ... `PATH.<keep>` (the oldest dropped), so a trace never takes more than about
/// `(keep + 1) * maximumBytes` (docs/RELIABILITY.md). A new file starts with a `traceRotated` record carrying
/// the seq and t_ns of the last record before it, so each file replays on its own.
public final class TraceWriter: @unchecked Sendable {  // @unchecked: used from one thread, its Daemon's loop thread (Daemon.swift)
    /// Defaults: 8 MiB per file, 3 rotated files kept.
    public static let defaultMaximumBytes = 8 << 20
    public static let defaultKeep = 3

    private var file: AppendFile?
    public let path: String?
    public var echo: Bool = false
    public let maximumBytes: Int
    public let keep: Int
    /// Bytes in the current file.
    public var size: Int { file?.size ?? 0 }
    /// Rotations since this writer opened the file.
    public private(set) var rotations = 0
    /// Records not written since this writer opened the file (a full disk, an I/O error).
    public private(set) var recordsLost = 0
    /// The loss being counted: writes fail since `firstSeq` (nil: the last write succeeded).
    private var loss: TraceLoss?
    private var lastSeq: JSON = .null
    private var lastTime: JSON = .null

    public init(path: String?, maximumBytes: Int = TraceWriter.defaultMaximumBytes, keep: Int = TraceWriter.defaultKeep) throws(SystemError) {
        self.path = path
        self.maximumBytes = max(maximumBytes, 1)
        self.keep = max(keep, 1)
        if let path {
            do {
                file = try AppendFile(path: path)
            } catch {
                throw SystemError("open trace file", path, errno: error.errno, detail: error.detail)
            }
        }
    }

    /// Writes one complete record as a line (after rotating, if the line would take the file past the limit):
    /// the whole line or nothing (`AppendFile`). Says whether it was written, and when it is the first written
    /// after a loss, what was lost.
    @discardableResult
    public func write(_ record: JSON) -> TraceWriteOutcome {
        var line = record.bytes
        line.append(0x0A)
        var outcome = TraceWriteOutcome.written
        if let file, let path {
            if file.size > 0 && file.size + line.count > maximumBytes { rotate(path, before: record) }
            do {
                try (self.file ?? file).append(line)
                if let lost = loss {
                    loss = nil
                    outcome = .recovered(lost)
                }
            } catch {
                recordsLost += 1
                let seq = TraceEntry.position(of: record).seq.intValue ?? 0
                if var lost = loss {
                    lost.lastSeq = seq
                    lost.records += 1
                    loss = lost
                    outcome = .failed(error: error.description, first: false)
                } else {
                    loss = TraceLoss(file: path, error: error.description, records: 1, firstSeq: seq, lastSeq: seq)
                    outcome = .failed(error: error.description, first: true)
                }
            }
        }
        (lastSeq, lastTime) = TraceEntry.position(of: record)
        if echo { line.withUnsafeBytes { p in _ = Glibc.write(2, p.baseAddress, p.count) } }
        return outcome
    }

    /// PATH.k -> PATH.k+1 (the oldest dropped), PATH -> PATH.1, a new PATH headed by a `traceRotated` record.
    /// A failure (a full disk) keeps writing to the file open now, and says so on stderr.
    private func rotate(_ path: String, before record: JSON) {
        unlink(path + ".\(keep)")
        for k in stride(from: keep - 1, through: 1, by: -1) {
            rename(path + ".\(k)", path + ".\(k + 1)")
        }
        if rename(path, path + ".1") != 0 {
            logError("hotspotd: \(SystemError.current("rotate trace file", path)); writing on")
            return
        }
        let reopened: AppendFile
        do {
            reopened = try AppendFile(path: path)
        } catch {
            logError("hotspotd: open trace file: \(error); writing on to \(path).1")
            return
        }
        file = reopened
        rotations += 1
        var fields = TraceRecord.traceRotated(.init(previous: path + ".1", maximumBytes: maximumBytes, keep: keep, rotations: rotations)).fields
        fields["kind"] = .string(TraceRecord.TraceRotated.kind)
        fields["seq"] = lastSeq
        fields["t_ns"] = lastTime == .null ? TraceEntry.position(of: record).time : lastTime
        let header: JSON = .object(fields)
        var line = header.bytes
        line.append(0x0A)
        try? reopened.append(line)
    }
}

/// Trace records a writer could not write, one run of failures (docs/RELIABILITY.md, "No silent loss"): the
/// payload of the `traceLoss` record written after it.
public typealias TraceLoss = TraceRecord.TraceLoss

/// What became of one trace record.
public enum TraceWriteOutcome: Sendable, Equatable {
    case written
    /// Written, and the first since `TraceLoss`'s records were lost.
    case recovered(TraceLoss)
    /// Not written at all; `first`: the first failure after a success.
    case failed(error: String, first: Bool)
}

// MARK: trace forms of core values

extension Command {
    var traceRecord: TraceRecord.Command {
        TraceRecord.Command(id: Int(id), commandType: type.description, helper: helper, network: network.map(TraceNetwork.init),
                            networkList: networkList.map { $0.map(TraceNetwork.init) }, deadline_ms: deadline?.milliseconds)
    }
}

extension Rejection {
    var helper: HelperID {
        switch self {
        case .unknownCommand(_, let h), .notYourCommand(_, let h, _), .duplicateResponse(_, let h), .lateResponse(_, let h),
             .withdrawnCommand(_, let h), .duplicateRegistration(let h), .invalidDisplayName(let h, _), .notRegistered(let h):
            h
        }
    }
}

extension AnnotatedNetwork {
    var wire: JSON {
        var o = network.wire.objectValue!
        o["annotation"] = annotation.map(JSON.string) ?? .null
        o["claimedBy"] = claimedBy.map(JSON.string) ?? .null
        o["password"] = password.map(JSON.string) ?? .null
        return .object(o)
    }
}

/// Writes one line to stderr.
public func logError(_ line: String) {
    var b = Array(line.utf8)
    b.append(0x0A)
    b.withUnsafeBytes { p in _ = Glibc.write(2, p.baseAddress, p.count) }
}
