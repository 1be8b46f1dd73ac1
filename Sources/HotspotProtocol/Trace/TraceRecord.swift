import HotspotCore

/// One record of hotspotd's trace (docs/TRACE.md): the one contract between the daemon, which writes it, and
/// the lab, which reads it (timelines, certify, replay, scenario steps, reports). hotspotd writes `TraceRecord`
/// values; the lab reads `TraceEntry` values; nobody reads a record by its field names outside this folder.
///
/// Each kind is a case with its payload, a `TracePayload` struct (TraceRecordKinds.swift) whose Codable form is
/// the JSON the daemon has always written: the same field names and value types, `null` where it wrote `null`.
/// A record of a kind this build does not know (from a newer hotspotd) reads as `.unknown(kind:fields:)`, and so
/// does a known kind with a field of another type; a missing field reads as its zero (`""`, 0, false, empty), as
/// the string-keyed readers' `?? ""` did.
///
/// To add a kind: copy a payload struct in TraceRecordKinds.swift (its `kind`, its fields, an `example`), add its
/// case here and its line in `payloadTypes`; write it in hotspotd with `record(.yourKind(...))`; describe its
/// fields in docs/TRACE.md (the kinds table there is generated: `TraceDocsTests`).
public enum TraceRecord: Sendable, Hashable {
    case start(Start)
    case stop(Stop)
    case warning(Warning)
    case stateTrimmed(StateTrimmed)
    case traceLoss(TraceLoss)
    case connectionLimit(ConnectionLimit)
    case connect(Connect)
    case disconnect(Disconnect)
    case event(Event)
    case transition(Transition)
    case command(Command)
    case response(Response)
    case cancel(Cancel)
    case rejected(Rejected)
    case irregular(Irregular)
    case protocolError(ProtocolErrorRecord)
    case timer(Timer)
    case maintainTimer(MaintainTimer)
    case network(NetworkAction)
    case hook(Hook)
    case autoJoin(AutoJoin)
    case cache(Cache)
    case traceRotated(TraceRotated)
    case persist(Persist)
    case logoffRequest(LogoffRequest)
    case logoffAnswer(LogoffAnswer)
    case notification(Notification)
    case helperReport(HelperReport)
    case scanList(ScanList)
    case overloaded(Overloaded)
    case error(Error)
    case station(Station)
    case userAction(UserAction)
    case labAction(LabActionRecord)
    case managerSet(ManagerSet)
    case evaluatedSSID(EvaluatedSSID)
    case providerLaunched(ProviderLaunched)
    case providerRegistered(ProviderRegistered)
    case providerStarted(ProviderStarted)
    case providerStopped(ProviderStopped)
    case providerStoppedAck(ProviderStoppedAck)
    case providerKilled(ProviderKilled)
    case providerExited(ProviderExited)
    case providerNoAnswer(ProviderNoAnswer)
    /// A kind this build does not know (or a known kind that does not read): its name and every field as written.
    case unknown(kind: String, fields: [String: JSON])

    /// Every payload type, in the order of docs/TRACE.md; decoding dispatches on their `kind`.
    public static let payloadTypes: [any TracePayload.Type] = [
        Start.self, Stop.self, Warning.self, StateTrimmed.self, TraceLoss.self, ConnectionLimit.self, Connect.self, Disconnect.self, Event.self, Transition.self, Command.self,
        Response.self, Cancel.self, Rejected.self, Irregular.self, ProtocolErrorRecord.self, Timer.self, MaintainTimer.self,
        NetworkAction.self, Hook.self, AutoJoin.self, Cache.self, TraceRotated.self, Persist.self, LogoffRequest.self,
        LogoffAnswer.self, Notification.self, HelperReport.self, ScanList.self, Overloaded.self, Error.self, Station.self,
        UserAction.self, LabActionRecord.self, ManagerSet.self, EvaluatedSSID.self, ProviderLaunched.self,
        ProviderRegistered.self, ProviderStarted.self, ProviderStopped.self, ProviderStoppedAck.self, ProviderKilled.self,
        ProviderExited.self, ProviderNoAnswer.self,
    ]

    private static let byKind: [String: any TracePayload.Type] = Dictionary(uniqueKeysWithValues: payloadTypes.map { ($0.kind, $0) })

    /// The payload of the record (nil: `.unknown`).
    public var payload: (any TracePayload)? {
        switch self {
        case .start(let p): p
        case .stop(let p): p
        case .warning(let p): p
        case .stateTrimmed(let p): p
        case .traceLoss(let p): p
        case .connectionLimit(let p): p
        case .connect(let p): p
        case .disconnect(let p): p
        case .event(let p): p
        case .transition(let p): p
        case .command(let p): p
        case .response(let p): p
        case .cancel(let p): p
        case .rejected(let p): p
        case .irregular(let p): p
        case .protocolError(let p): p
        case .timer(let p): p
        case .maintainTimer(let p): p
        case .network(let p): p
        case .hook(let p): p
        case .autoJoin(let p): p
        case .cache(let p): p
        case .traceRotated(let p): p
        case .persist(let p): p
        case .logoffRequest(let p): p
        case .logoffAnswer(let p): p
        case .notification(let p): p
        case .helperReport(let p): p
        case .scanList(let p): p
        case .overloaded(let p): p
        case .error(let p): p
        case .station(let p): p
        case .userAction(let p): p
        case .labAction(let p): p
        case .managerSet(let p): p
        case .evaluatedSSID(let p): p
        case .providerLaunched(let p): p
        case .providerRegistered(let p): p
        case .providerStarted(let p): p
        case .providerStopped(let p): p
        case .providerStoppedAck(let p): p
        case .providerKilled(let p): p
        case .providerExited(let p): p
        case .providerNoAnswer(let p): p
        case .unknown: nil
        }
    }

    /// The record's `kind`.
    public var kind: String {
        if case .unknown(let kind, _) = self { return kind }
        return type(of: payload!).kind
    }

    /// The record's fields as written (without `kind`, `seq`, `t_ns`).
    public var fields: [String: JSON] {
        if case .unknown(_, let fields) = self { return fields }
        // The payloads encode only strings, numbers, booleans, arrays and objects: it cannot fail.
        return (try? JSONCoding.encode(payload!))?.objectValue ?? [:]
    }

    /// Reads a record from its fields (`kind` among them; `seq` and `t_ns` are ignored here).
    public init(json: JSON) {
        let fields = json.objectValue ?? [:]
        let kind = fields["kind"]?.stringValue ?? ""
        guard let type = Self.byKind[kind], let record = try? type.record(from: json) else {
            var rest = fields
            rest["kind"] = nil
            rest["seq"] = nil
            rest["t_ns"] = nil
            self = .unknown(kind: kind, fields: rest)
            return
        }
        self = record
    }
}

/// The payload of one kind of trace record: its `kind` name, its fields (Codable, in the trace's JSON form), and
/// how it becomes a `TraceRecord`.
public protocol TracePayload: Codable, Sendable, Hashable {
    static var kind: String { get }
    /// A record of this kind with its fields set as hotspotd sets them (golden tests, the docs' table).
    static var example: Self { get }
    var record: TraceRecord { get }
}

extension TracePayload {
    static func record(from json: JSON) throws -> TraceRecord { try JSONCoding.decode(Self.self, from: json).record }

    /// The kind's field names, in declaration order (docs/TRACE.md's generated table).
    public static var fieldNames: [String] {
        JSONCoding.fieldNames(of: Self.self, decoding: (try? JSONCoding.encode(example)) ?? .object([:]))
    }
}

extension TraceRecord {
    /// The generated part of docs/TRACE.md: every kind, its payload type and its fields (`TraceRecordTests`
    /// checks the docs hold it; `HOTSPOT_WRITE_DOCS=1` writes it there).
    public static var kindsTable: String {
        var lines = ["| kind | payload | fields (in order; docs below say what each means) |", "|---|---|---|"]
        for type in payloadTypes {
            let fields = type.fieldNames.map { "`\($0)`" }.joined(separator: ", ")
            lines.append("| `\(type.kind)` | `TraceRecord.\(String(describing: type))` | \(fields.isEmpty ? "(none)" : fields) |")
        }
        return lines.joined(separator: "\n")
    }
}

/// A record as read from a trace: its sequence number, its time, the typed record and the line as written.
public struct TraceEntry: Sendable, Hashable {
    /// `seq`: 1, 2, 3 ... in the order written; 0 when the line had none.
    public var seq: Int
    /// `t_ns`: CLOCK_MONOTONIC in nanoseconds; nil when the line had none.
    public var time: Double?
    public var record: TraceRecord
    /// The line as written (every field, `kind`, `seq` and `t_ns` among them): for evidence, reports and tests.
    /// Read the typed `record`, not this (ci/check-trace-reads.py).
    public var written: JSON

    /// The line has its `kind` (a string), `seq` (an integer) and `t_ns` (a number): a replay stops before one
    /// that lacks them.
    public var isPositioned: Bool { written["kind"]?.stringValue != nil && written["seq"]?.intValue != nil && time != nil }

    public init(json: JSON) {
        self.written = json
        seq = json["seq"]?.intValue ?? 0
        time = json["t_ns"]?.doubleValue
        record = TraceRecord(json: json)
    }

    /// A line of a trace file; nil when it is not a JSON object.
    public init?(line: some Collection<UInt8>) {
        guard let json = try? JSON.parse(Array(line)), json.objectValue != nil else { return nil }
        self.init(json: json)
    }

    public var kind: String { record.kind }

    /// The record as one line of text (keys sorted): the form certify's evidence shows, without `t_ns` (times
    /// differ from run to run) and with each `networkList` entry cut to its `ssid` and `password`.
    public var evidenceText: String {
        var o = written.objectValue ?? [:]
        o["t_ns"] = nil
        o["networkList"] = o["networkList"].map { list in .array((list.arrayValue ?? []).map { n in
            ["ssid": n["ssid"] ?? .null, "password": n["password"] ?? .null]
        }) }
        return JSON.object(o).text
    }
}

extension TraceRecord {
    /// The record as a whole line of the trace (the daemon adds `seq` and `t_ns`).
    public func json(seq: Int, time: Double) -> JSON {
        var o = fields
        o["kind"] = .string(kind)
        o["seq"] = .number(Double(seq))
        o["t_ns"] = .number(time)
        return .object(o)
    }
}

extension TraceEntry {
    /// A written line's `seq` and `t_ns` as they are (null when absent), without reading the rest: the trace
    /// writer heads a rotated file with them.
    public static func position(of line: JSON) -> (seq: JSON, time: JSON) {
        (line["seq"] ?? .null, line["t_ns"] ?? .null)
    }
}
