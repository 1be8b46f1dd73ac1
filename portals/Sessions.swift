import Foundation

/// Logged-in clients of one portal, kept in step with the gate (whose set elements time out by themselves).
public actor PortalSessions: PortalContext {
    public nonisolated let portalURL: String
    public nonisolated let sessionSeconds: Int
    let gate: any PortalGate
    let neighbours: any NeighbourLookup
    let now: @Sendable () -> Double
    var sessions: [String: (mac: String, expires: Double)] = [:]

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
        do {
            try await gate.allow(mac: mac, ip: clientIP, seconds: sessionSeconds)
        } catch {
            logLine("login \(clientIP): \(error)")
            throw error
        }
        sessions[clientIP] = (mac, now() + Double(sessionSeconds))
        logLine("login \(clientIP) \(mac) for \(sessionSeconds) s")
    }

    public func logoff(clientIP: String) async throws {
        guard let session = sessions.removeValue(forKey: clientIP) else { return }
        if session.expires <= now() { return } // the gate already forgot it
        do {
            try await gate.revoke(mac: session.mac, ip: clientIP)
        } catch {
            logLine("logoff \(clientIP): \(error)")
            throw error
        }
    }

    public nonisolated func clientMAC(clientIP: String) async -> String? { neighbours.mac(for: clientIP) }

    public func secondsRemaining(clientIP: String) async -> Int? {
        guard let session = sessions[clientIP] else { return nil }
        let left = session.expires - now()
        if left <= 0 {
            sessions[clientIP] = nil
            return nil
        }
        return Int(left.rounded(.up))
    }
}

/// One line to stdout, unbuffered, with a UTC timestamp.
public func logLine(_ text: String) {
    let stamp = ISO8601DateFormatter().string(from: Date())
    FileHandle.standardOutput.write(Data("\(stamp) \(text)\n".utf8))
}
