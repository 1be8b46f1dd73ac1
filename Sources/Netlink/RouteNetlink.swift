#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem

/// A link as the kernel reports it.
public struct LinkInfo: Sendable, Equatable {
    public var index: Int32
    public var name: String
    public var flags: UInt32
    public var mtu: UInt32?
    public var mac: MACAddress?
    public var master: Int32?
    public var kind: String?

    public var isUp: Bool { flags & interfaceUp != 0 }
    /// IFF_RUNNING: operationally up. The kernel's link watcher sets it (and tells the link's bridge, which then
    /// forwards through the port) shortly after the carrier comes, not at once.
    public var isRunning: Bool { flags & 0x40 != 0 }

    init?(_ reply: NetlinkReply) {
        guard reply.type == RTM.newLink, reply.payload.count >= 16 else { return nil }
        index = readLE(reply.payload, at: 4)
        flags = readLE(reply.payload, at: 8)
        let attributes = NetlinkAttributes(reply.payload, offset: 16)
        name = attributes.string(IFLA.ifname) ?? ""
        mtu = attributes.u32(IFLA.mtu)
        mac = attributes[IFLA.address].flatMap { MACAddress(bytes: $0) }
        master = attributes.u32(IFLA.master).map { Int32(bitPattern: $0) }
        kind = attributes.nested(IFLA.linkinfo)?.string(IFLA.infoKind)
    }
}

/// An address assigned to a link.
public struct AddressInfo: Sendable, Equatable {
    public var index: Int32
    public var prefix: IPPrefix
    /// IFA_F_* flags (IFA_FLAGS when present, else the header's byte).
    public var flags: UInt32 = 0
    /// RT_SCOPE_*: 0 universe (global), 253 link, 254 host.
    public var scope: UInt8 = 0

    /// IPv6 duplicate address detection has not finished (the address cannot be used yet).
    public var isTentative: Bool { flags & 0x40 != 0 }
    public var isGlobal: Bool { scope == 0 }

    init?(_ reply: NetlinkReply) {
        guard reply.type == RTM.newAddress, reply.payload.count >= 8 else { return nil }
        let length = reply.payload[1]
        index = Int32(bitPattern: readLE(reply.payload, at: 4))
        scope = reply.payload[3]
        let attributes = NetlinkAttributes(reply.payload, offset: 8)
        flags = attributes.u32(IFA.flags) ?? UInt32(reply.payload[2])
        guard let bytes = attributes[IFA.local] ?? attributes[IFA.address], let address = IPAddress(bytes: bytes) else {
            return nil
        }
        prefix = IPPrefix(address, length: length)
    }
}

/// A route of the main table as the kernel reports it (the station's trace: its default routes per family).
public struct RouteInfo: Sendable, Equatable {
    public var ipv6: Bool
    /// nil: a default route.
    public var destination: IPPrefix?
    public var gateway: IPAddress?
    public var outputInterface: Int32?
    public var table: UInt32
    public var kind: UInt8

    public var isDefault: Bool { destination == nil }

    init?(_ reply: NetlinkReply) {
        guard reply.type == RTM.newRoute, reply.payload.count >= 12 else { return nil }
        ipv6 = reply.payload[0] == UInt8(AF_INET6)
        let length = reply.payload[1]
        kind = reply.payload[7]
        let attributes = NetlinkAttributes(reply.payload, offset: 12)
        table = attributes.u32(RTA.table) ?? UInt32(reply.payload[4])
        destination = attributes[RTA.dst].flatMap { IPAddress(bytes: $0) }.map { IPPrefix($0, length: length) }
        if length == 0 { destination = nil }
        gateway = attributes[RTA.gateway].flatMap { IPAddress(bytes: $0) }
        outputInterface = attributes.u32(RTA.oif).map { Int32(bitPattern: $0) }
    }

    public var description: String {
        var parts = [destination.map { "\($0)" } ?? "default"]
        if let gateway { parts.append("via \(gateway)") }
        if let outputInterface { parts.append("dev #\(outputInterface)") }
        return parts.joined(separator: " ")
    }
}

/// A neighbour table entry (ARP for IPv4, NDP for IPv6) with a usable link-layer address.
public struct NeighbourInfo: Sendable, Equatable {
    public var index: Int32
    public var address: IPAddress
    public var mac: MACAddress
    /// NUD_* state bits (REACHABLE 0x02, STALE 0x04, PERMANENT 0x80, ...).
    public var state: UInt16

    init?(_ reply: NetlinkReply) {
        guard reply.type == RTM.newNeighbour, reply.payload.count >= 12 else { return nil }
        index = Int32(bitPattern: readLE(reply.payload, at: 4))
        state = readLE(reply.payload, at: 8)
        guard state & NDA.unusableStates == 0 else { return nil }
        let attributes = NetlinkAttributes(reply.payload, offset: 12)
        guard let destination = attributes[NDA.destination].flatMap({ IPAddress(bytes: $0) }),
              let mac = attributes[NDA.linkLayerAddress].flatMap({ MACAddress(bytes: $0) }),
              mac.bytes != [0, 0, 0, 0, 0, 0] else { return nil }
        address = destination
        self.mac = mac
    }
}

/// rtnetlink operations on one namespace's socket. Every error names the operation, the object and the
/// errno text, e.g. `create veth lab7-ap0 <-> lab7-sta0: File exists (EEXIST)`.
public struct RouteNetlink: Sendable {
    public let socket: any NetlinkSocket

    public init(socket: any NetlinkSocket) { self.socket = socket }

    /// A socket in the calling thread's namespace (the host's root namespace unless on a namespace thread).
    public static func current() throws -> RouteNetlink { RouteNetlink(socket: try MNLSocket()) }

    // MARK: links

    /// Creates a veth pair; the peer is created directly in `peerNamespace` when given.
    public func createVeth(_ name: String, peer: String, peerNamespace: NetworkNamespace? = nil) throws {
        try perform("create veth", "\(name) <-> \(peer)") {
            if let peerNamespace {
                _ = try peerNamespace.withDescriptor { try socket.request(RouteMessages.newVeth(name, peer: peer, peerNamespaceFD: $0)) }
            } else {
                _ = try socket.request(RouteMessages.newVeth(name, peer: peer, peerNamespaceFD: nil))
            }
        }
    }

    public func createBridge(_ name: String) throws {
        try perform("create bridge", name) { _ = try socket.request(RouteMessages.newBridge(name)) }
    }

    public func deleteLink(_ name: String) throws {
        try perform("delete link", name) { _ = try socket.request(RouteMessages.deleteLink(name)) }
    }

    public func setUp(_ name: String, _ up: Bool = true) throws {
        try perform(up ? "set link up" : "set link down", name) {
            _ = try socket.request(RouteMessages.setLink(name, up: up))
        }
    }

    public func setMTU(_ name: String, _ mtu: UInt32) throws {
        try perform("set mtu \(mtu) on", name) { _ = try socket.request(RouteMessages.setLink(name, mtu: mtu)) }
    }

    public func setMAC(_ name: String, _ mac: MACAddress) throws {
        try perform("set mac \(mac) on", name) { _ = try socket.request(RouteMessages.setLink(name, mac: mac)) }
    }

    /// Enslaves `name` to `bridge` (nil: releases it).
    public func setMaster(_ name: String, bridge: String?) throws {
        let master = try bridge.map { try index(of: $0) } ?? 0
        try perform("set master \(bridge ?? "none") of", name) {
            _ = try socket.request(RouteMessages.setLink(name, master: master))
        }
    }

    /// Moves a link into another namespace (it goes down and loses its addresses).
    public func move(_ name: String, to namespace: NetworkNamespace) throws {
        try perform("move link", "\(name) to netns \(namespace.name)") {
            _ = try namespace.withDescriptor { try socket.request(RouteMessages.setLink(name, namespaceFD: $0)) }
        }
    }

    public func link(_ name: String) throws -> LinkInfo {
        try perform("get link", name) {
            guard let info = try socket.request(RouteMessages.getLink(name)).compactMap(LinkInfo.init).first else {
                throw NetlinkKernelError(code: ENODEV)
            }
            return info
        }
    }

    public func index(of name: String) throws -> Int32 { try link(name).index }

    public func links() throws -> [LinkInfo] {
        try perform("list links", "") { try socket.request(RouteMessages.dumpLinks()).compactMap(LinkInfo.init) }
    }

    // MARK: addresses

    public func addAddress(_ prefix: IPPrefix, to name: String) throws {
        let index = try index(of: name)
        try perform("add address \(prefix) to", name) {
            _ = try socket.request(RouteMessages.newAddress(prefix, index: index))
        }
    }

    public func deleteAddress(_ prefix: IPPrefix, from name: String) throws {
        let index = try index(of: name)
        try perform("delete address \(prefix) from", name) {
            _ = try socket.request(RouteMessages.deleteAddress(prefix, index: index))
        }
    }

    public func addresses() throws -> [AddressInfo] {
        try perform("list addresses", "") { try socket.request(RouteMessages.dumpAddresses()).compactMap(AddressInfo.init) }
    }

    /// The routes of one family in every table (the kernel's dump of RTM_GETROUTE).
    public func routes(ipv6: Bool) throws -> [RouteInfo] {
        try perform("list routes", ipv6 ? "IPv6" : "IPv4") {
            try socket.request(RouteMessages.dumpRoutes(ipv6: ipv6)).compactMap(RouteInfo.init)
        }
    }

    /// The neighbour entries (both families) that have a link-layer address.
    public func neighbours() throws -> [NeighbourInfo] {
        try perform("list neighbours", "") { try socket.request(RouteMessages.dumpNeighbours()).compactMap(NeighbourInfo.init) }
    }

    // MARK: routes and rules

    public func addRoute(_ route: Route) throws {
        try perform("add route", route.description) { _ = try socket.request(RouteMessages.newRoute(route)) }
    }

    public func deleteRoute(_ route: Route) throws {
        try perform("delete route", route.description) { _ = try socket.request(RouteMessages.deleteRoute(route)) }
    }

    public func addRule(_ rule: RoutingRule) throws {
        try perform("add rule", rule.description) { _ = try socket.request(RouteMessages.newRule(rule)) }
    }

    public func deleteRule(_ rule: RoutingRule) throws {
        try perform("delete rule", rule.description) { _ = try socket.request(RouteMessages.deleteRule(rule)) }
    }

    /// Number of rules of a family (for tests and doctor).
    public func ruleCount(ipv6: Bool = false) throws -> Int {
        try perform("list rules", "") { try socket.request(RouteMessages.dumpRules(ipv6: ipv6)).count }
    }
}
