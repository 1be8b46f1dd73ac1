import HotspotCore
import HotspotProtocol
import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// The trace file (docs/TRACE.md): one JSON object per line, append-only. `DaemonCore` numbers the records
/// (`seq`, `t_ns`, `kind`) and sends them to subscribers; this writes them to the file and, with `echo`, stderr.
public final class TraceWriter: @unchecked Sendable {
    private let fd: Int32
    public let path: String?
    public var echo: Bool = false

    public init(path: String?) throws(SystemError) {
        self.path = path
        if let path {
            let f = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard f >= 0 else { throw SystemError.current("open trace file", path) }
            fd = f
        } else {
            fd = -1
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Writes one complete record as a line.
    public func write(_ record: JSON) {
        var line = record.bytes
        line.append(0x0A)
        if fd >= 0 {
            line.withUnsafeBytes { p in _ = Glibc.write(fd, p.baseAddress, p.count) }
        }
        if echo { line.withUnsafeBytes { p in _ = Glibc.write(2, p.baseAddress, p.count) } }
    }
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
            ["irregularity": "unlistedNetwork", "command": .number(Double(id)), "ssid": .string(s), "bssid": .string(b),
             "helper": .string(h)]
        case .wrongNetwork(let id, let s, let h):
            ["irregularity": "wrongNetwork", "command": .number(Double(id)), "ssid": .string(s), "helper": .string(h)]
        case .securedWithoutPassword(let id, let s, let b, let h):
            ["irregularity": "securedWithoutPassword", "command": .number(Double(id)), "ssid": .string(s), "bssid": .string(b),
             "helper": .string(h)]
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
