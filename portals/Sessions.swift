import Foundation
import Synchronization

/// Logged-in clients of one portal, kept in step with the gate (whose set elements time out by themselves).
public actor PortalSessions: PortalContext {
    public nonisolated let portalURL: String
    public nonisolated let sessionSeconds: Int
    let gate: any PortalGate
    let neighbours: any NeighbourLookup
    let now: @Sendable () -> Double
    /// By MAC: the addresses the client was let through with (either family) and when the session ends. A client
    /// signed in over one family is signed in on the other; it may log off or ask for its time from either.
    var sessions: [String: (addresses: [String], expires: Double)] = [:]

    public init(portalURL: String, sessionSeconds: Int, gate: any PortalGate, neighbours: any NeighbourLookup,
                now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.portalURL = portalURL
        self.sessionSeconds = sessionSeconds
        self.gate = gate
        self.neighbours = neighbours
        self.now = now
    }

    public func login(clientIP: String) async throws {
        guard let mac = neighbours.mac(for: clientIP) else {
            throw GateError(operation: "look up", object: "the MAC address of \(clientIP)", cause: "no entry in the neighbour table")
        }
        // The address it signed in from, then the MAC's other addresses (its IPv4 address when it signed in over IPv6).
        var addresses = [clientIP]
        for address in neighbours.addresses(of: mac) where !addresses.contains(address) { addresses.append(address) }
        do {
            for address in addresses { try await gate.allow(mac: mac, ip: address, seconds: sessionSeconds) }
        } catch {
            logLine("login \(clientIP): \(error)")
            throw error
        }
        sessions[mac] = (addresses, now() + Double(sessionSeconds))
        logLine("login \(clientIP) \(mac) for \(sessionSeconds) s (\(addresses.joined(separator: " ")))")
    }

    /// The MAC of the session `clientIP` belongs to: from the neighbour table, else the session that holds the address.
    func sessionMAC(_ clientIP: String) -> String? {
        if let mac = neighbours.mac(for: clientIP), sessions[mac] != nil { return mac }
        return sessions.first { $0.value.addresses.contains(clientIP) }?.key
    }

    public func logoff(clientIP: String) async throws {
        guard let mac = sessionMAC(clientIP), let session = sessions.removeValue(forKey: mac) else { return }
        if session.expires <= now() { return } // the gate already forgot it
        do {
            for address in session.addresses { try await gate.revoke(mac: mac, ip: address) }
        } catch {
            logLine("logoff \(clientIP): \(error)")
            throw error
        }
    }

    public nonisolated func clientMAC(clientIP: String) async -> String? { neighbours.mac(for: clientIP) }

    public func secondsRemaining(clientIP: String) async -> Int? {
        guard let mac = sessionMAC(clientIP), let session = sessions[mac] else { return nil }
        let left = session.expires - now()
        if left <= 0 {
            sessions[mac] = nil
            return nil
        }
        return Int(left.rounded(.up))
    }
}

/// One line, with a UTC timestamp, to the log of the server answering (`PortalLog.current`, set by `LabHTTPServer` around
/// each handler), else to standard output (a portal process, whose standard output is its log file).
public func logLine(_ text: String) {
    (PortalLog.current ?? PortalLog.standardOutput).line(text)
}

/// Where a server's log lines go, each with a UTC timestamp in one write: the process's standard output (a portal
/// process, whose standard output is its log file) or a file of its own (the lab internet, served in the lab runner's
/// process: `InternetServer.start`).
///
/// The descriptor lives under a lock that each line holds for its one write, and `close()` takes it too: a line
/// that comes after `close()` (a connection's thread that was still ending when its lab went down) is dropped,
/// never written to the descriptor's number, which by then may be another lab's socket or pipe in the same process
/// (a write there would corrupt that stream, or raise SIGPIPE).
public final class PortalLog: Sendable {
    /// The process's standard output.
    public static let standardOutput = PortalLog(descriptor: STDOUT_FILENO)
    /// The log of the server whose handler runs (`LabHTTPServer` binds it around each request): what a portal kind,
    /// its sessions or the internet's responder say with `logLine` goes to their own server's log, also when several
    /// labs' servers share the lab runner's process.
    @TaskLocal public static var current: PortalLog?
    /// The descriptor, -1 once closed.
    let state: Mutex<Int32>

    init(descriptor: Int32) { state = Mutex(descriptor) }

    /// Lines appended to `path`, created (mode 0644) or emptied first. Close it with `close()`.
    public init(file path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw PortalLogError(path: path, cause: String(cString: strerror(errno))) }
        state = Mutex(fd)
    }

    /// Whether `close()` ran (lines are dropped from then on).
    public var isClosed: Bool { state.withLock { $0 < 0 } }

    /// One line, with a UTC timestamp, in one write (O_APPEND: lines of several processes do not interleave;
    /// this process's threads take turns). Dropped after `close()`.
    public func line(_ text: String) {
        let bytes = Array("\(utcTimestamp(Int(time(nil)))) \(text)\n".utf8)
        state.withLock { descriptor in
            guard descriptor >= 0 else { return }
            var written = 0
            while written < bytes.count {
                let n = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, bytes.count - written) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return }
                written += n
            }
        }
    }

    /// Closes a file's log (the standard output's is left open, and its lines go on). Later lines are dropped.
    public func close() {
        state.withLock { descriptor in
            guard descriptor >= 0, descriptor != STDOUT_FILENO else { return }
            Glibc.close(descriptor)
            descriptor = -1
        }
    }
}

/// A log file that could not be opened: its path and the errno text.
public struct PortalLogError: Error, CustomStringConvertible {
    public let path: String
    public let cause: String
    public var description: String { "open the log \(path): \(cause)" }
}

/// `seconds` since the epoch as ISO8601DateFormatter writes it by default (`2026-11-28T12:18:32Z`), from
/// `gmtime_r` alone. A new ISO8601DateFormatter per log line built an ICU date format each time: under the VM's
/// emulation that was most of the lab internet's CPU (bench/README.md, stop 40).
public func utcTimestamp(_ seconds: Int) -> String {
    var t = time_t(seconds)
    var parts = tm()
    guard gmtime_r(&t, &parts) != nil else { return "\(seconds)" }
    func pad(_ value: Int32, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    return pad(parts.tm_year + 1900, 4) + "-" + pad(parts.tm_mon + 1, 2) + "-" + pad(parts.tm_mday, 2) + "T"
        + pad(parts.tm_hour, 2) + ":" + pad(parts.tm_min, 2) + ":" + pad(parts.tm_sec, 2) + "Z"
}
