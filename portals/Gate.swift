import Foundation

/// Lets clients through the hotspot's captive gate. The real one drives nftables: an IPv4 address is let through
/// with its MAC (`ether_addr . ipv4_addr`) and the MAC's IPv6 traffic with it; an IPv6 address lets the MAC's IPv6
/// traffic through (a station has several IPv6 addresses and changes them: SLAAC, privacy, DHCPv6).
public protocol PortalGate: Sendable {
    func allow(mac: String, ip: String, seconds: Int) async throws
    func revoke(mac: String, ip: String) async throws
}

/// Finds a client's MAC address from its IP (the neighbour table of the portal's namespace), and the other
/// addresses (either family) the same MAC uses, so that a sign-in releases the client on both families.
public protocol NeighbourLookup: Sendable {
    func mac(for ip: String) -> String?
    /// Every address (IPv4 and IPv6) the neighbour table knows for `mac`.
    func addresses(of mac: String) -> [String]
}

extension NeighbourLookup {
    /// A table that knows only the address a request came from.
    public func addresses(of mac: String) -> [String] { [] }
}

public struct GateError: Error, CustomStringConvertible {
    public var operation: String
    public var object: String
    public var cause: String
    public var description: String { "\(operation) \(object): \(cause)" }

    public init(operation: String, object: String, cause: String) {
        self.operation = operation
        self.object = object
        self.cause = cause
    }
}

/// Which nftables set is the gate (`inet hotspot authenticated` by default). hotspot-portal changes it over
/// nfnetlink from its own process, which runs in the hotspot namespace (`NetlinkGate`).
public struct GateTable: Sendable, Equatable {
    public var family: String
    public var table: String
    public var set: String

    public init(family: String = "inet", table: String = "hotspot", set: String = "authenticated") {
        self.family = family
        self.table = table
        self.set = set
    }

    /// Parses `inet/hotspot/authenticated`.
    public init(spec: String) throws {
        let parts = spec.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts.contains(where: \.isEmpty) else {
            throw GateError(operation: "parse", object: "gate table `\(spec)`", cause: "expected FAMILY/TABLE/SET such as inet/hotspot/authenticated")
        }
        self.init(family: parts[0], table: parts[1], set: parts[2])
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

    public func addresses(of mac: String) -> [String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 4, fields[2] != "0x0", fields[3].lowercased() == mac.lowercased() else { return nil }
            return String(fields[0])
        }
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
