import Foundation

/// Lets clients through the hotspot's captive gate. The real one drives nftables.
public protocol PortalGate: Sendable {
    func allow(mac: String, ip: String, seconds: Int) async throws
    func revoke(mac: String, ip: String) async throws
}

/// Finds a client's MAC address from its IP (the neighbour table of the portal's namespace).
public protocol NeighbourLookup: Sendable {
    func mac(for ip: String) -> String?
}

public struct GateError: Error, CustomStringConvertible {
    public var operation: String
    public var object: String
    public var cause: String
    public var description: String { "\(operation) \(object): \(cause)" }
}

/// The gate's nftables set (`inet hotspot authenticated` by default), changed with the `nft` command
/// run from the portal's process (which runs in the hotspot namespace).
public struct NFTGate: PortalGate {
    public var family: String
    public var table: String
    public var set: String
    public var nft: String

    public init(family: String = "inet", table: String = "hotspot", set: String = "authenticated", nft: String = "/usr/sbin/nft") {
        self.family = family
        self.table = table
        self.set = set
        self.nft = nft
    }

    /// Parses `inet/hotspot/authenticated`.
    public init(spec: String) throws {
        let parts = spec.split(separator: "/").map(String.init)
        guard parts.count == 3 else {
            throw GateError(operation: "parse", object: "gate table `\(spec)`", cause: "expected FAMILY/TABLE/SET such as inet/hotspot/authenticated")
        }
        self.init(family: parts[0], table: parts[1], set: parts[2])
    }

    public func allow(mac: String, ip: String, seconds: Int) async throws {
        // Replace any old element so the timeout restarts.
        _ = try? run(["delete", "element", family, table, set, "{ \(mac) . \(ip) }"])
        try run(["add", "element", family, table, set, "{ \(mac) . \(ip) timeout \(seconds)s }"])
    }

    /// Removing an element the set already timed out is not an error (the gate forgot the client).
    public func revoke(mac: String, ip: String) async throws {
        do {
            try run(["delete", "element", family, table, set, "{ \(mac) . \(ip) }"])
        } catch let error as GateError where error.cause.contains("No such file or directory") {
            return
        }
    }

    @discardableResult
    func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nft)
        process.arguments = arguments
        let errPipe = Pipe()
        process.standardError = errPipe
        process.standardOutput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw GateError(operation: "run", object: "\(nft) \(arguments.joined(separator: " "))", cause: "\(error)")
        }
        let err = errPipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: err, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
            throw GateError(operation: "nft \(arguments[0]) element", object: "\(family) \(table) \(set) { \(arguments.last ?? "") }",
                            cause: "exit status \(process.terminationStatus): \(text)")
        }
        return ""
    }
}

/// Reads `/proc/net/arp` (the reader's network namespace).
public struct ProcNeighbourTable: NeighbourLookup {
    public var path: String
    public init(path: String = "/proc/net/arp") { self.path = path }

    public func mac(for ip: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return Self.parse(text, ip: ip)
    }

    /// `IP address HW type Flags HW address Mask Device` lines; incomplete entries (flags 0x0) are skipped.
    public static func parse(_ text: String, ip: String) -> String? {
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 4, fields[0] == ip, fields[2] != "0x0", fields[3] != "00:00:00:00:00:00" else { continue }
            return String(fields[3]).lowercased()
        }
        return nil
    }
}
