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
public final class TraceWriter: @unchecked Sendable {
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
                let seq = record["seq"]?.intValue ?? 0
                if var lost = loss {
                    lost.lastSeq = seq
                    lost.records += 1
                    loss = lost
                    outcome = .failed(error: error.description, first: false)
                } else {
                    loss = TraceLoss(file: path, error: error.description, firstSeq: seq, lastSeq: seq, records: 1)
                    outcome = .failed(error: error.description, first: true)
                }
            }
        }
        lastSeq = record["seq"] ?? .null
        lastTime = record["t_ns"] ?? .null
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
        let header: JSON = .object([
            "kind": "traceRotated", "seq": lastSeq, "t_ns": lastTime == .null ? (record["t_ns"] ?? .null) : lastTime,
            "previous": .string(path + ".1"), "maximumBytes": .number(Double(maximumBytes)), "keep": .number(Double(keep)),
            "rotations": .number(Double(rotations)),
        ])
        var line = header.bytes
        line.append(0x0A)
        try? reopened.append(line)
    }
}

/// Trace records a writer could not write, one run of failures (docs/RELIABILITY.md, "No silent loss").
public struct TraceLoss: Sendable, Equatable {
    public var file: String
    /// The first failure's error (operation, file, errno text).
    public var error: String
    public var firstSeq: Int
    public var lastSeq: Int
    public var records: Int
}

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
    var traceFields: [String: JSON] {
        var o: [String: JSON] = [
            "id": .number(Double(id)), "commandType": .string(type.description), "helper": .string(helper),
        ]
        if let network { o["network"] = network.wire }
        if let networkList { o["networkList"] = .array(networkList.map(\.wire)) }
        o["deadline_ms"] = deadline.map { .number($0.milliseconds) } ?? .null
        return o
    }
}

extension Rejection {
    var traceFields: [String: JSON] {
        switch self {
        case .unknownCommand(let id, let h): ["reason": "unknownCommand", "command": .number(Double(id)), "helper": .string(h)]
        case .notYourCommand(let id, let h, let to):
            ["reason": "notYourCommand", "command": .number(Double(id)), "helper": .string(h), "sentTo": .string(to)]
        case .duplicateResponse(let id, let h): ["reason": "duplicateResponse", "command": .number(Double(id)), "helper": .string(h)]
        case .lateResponse(let id, let h): ["reason": "lateResponse", "command": .number(Double(id)), "helper": .string(h)]
        case .withdrawnCommand(let id, let h): ["reason": "withdrawnCommand", "command": .number(Double(id)), "helper": .string(h)]
        case .duplicateRegistration(let h): ["reason": "duplicateRegistration", "helper": .string(h)]
        case .invalidDisplayName(let h, let n): ["reason": "invalidDisplayName", "helper": .string(h), "displayName": .string(n)]
        case .notRegistered(let h): ["reason": "notRegistered", "helper": .string(h)]
        }
    }

    var helper: HelperID {
        switch self {
        case .unknownCommand(_, let h), .notYourCommand(_, let h, _), .duplicateResponse(_, let h), .lateResponse(_, let h),
             .withdrawnCommand(_, let h), .duplicateRegistration(let h), .invalidDisplayName(let h, _), .notRegistered(let h):
            h
        }
    }
}

extension Irregularity {
    var traceFields: [String: JSON] {
        switch self {
        case .invalidResult(let id, let t, let r, let h):
            ["irregularity": "invalidResult", "command": .number(Double(id)), "commandType": .string(t.description),
             "result": .string(r.description), "helper": .string(h)]
        case .noAnswer(let id, let t, let h):
            ["irregularity": "noAnswer", "command": .number(Double(id)), "commandType": .string(t.description), "helper": .string(h)]
        case .unlistedNetwork(let id, let s, let b, let h):
            s.wireFields.merging(["irregularity": "unlistedNetwork", "command": .number(Double(id)), "bssid": .string(b),
                                  "helper": .string(h)]) { $1 }
        case .wrongNetwork(let id, let s, let h):
            s.wireFields.merging(["irregularity": "wrongNetwork", "command": .number(Double(id)), "helper": .string(h)]) { $1 }
        case .securedWithoutPassword(let id, let s, let b, let h):
            s.wireFields.merging(["irregularity": "securedWithoutPassword", "command": .number(Double(id)), "bssid": .string(b),
                                  "helper": .string(h)]) { $1 }
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
