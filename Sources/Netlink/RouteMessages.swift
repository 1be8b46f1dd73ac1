#if canImport(Glibc)
import Glibc
#endif

/// rtnetlink numbers (linux/rtnetlink.h, if_link.h, if_addr.h, fib_rules.h, veth.h).
public enum RTM {
    public static let newLink: UInt16 = 16, deleteLink: UInt16 = 17, getLink: UInt16 = 18
    public static let newAddress: UInt16 = 20, deleteAddress: UInt16 = 21, getAddress: UInt16 = 22
    public static let newRoute: UInt16 = 24, deleteRoute: UInt16 = 25, getRoute: UInt16 = 26
    public static let newRule: UInt16 = 32, deleteRule: UInt16 = 33, getRule: UInt16 = 34
    public static let newNeighbour: UInt16 = 28, getNeighbour: UInt16 = 30
}

enum NDA {
    static let destination: UInt16 = 1, linkLayerAddress: UInt16 = 2
    /// NUD_INCOMPLETE and NUD_FAILED: no usable link-layer address.
    static let unusableStates: UInt16 = 0x01 | 0x20
}

enum IFLA {
    static let address: UInt16 = 1, ifname: UInt16 = 3, mtu: UInt16 = 4, master: UInt16 = 10
    static let linkinfo: UInt16 = 18, netNsFD: UInt16 = 28
    static let infoKind: UInt16 = 1, infoData: UInt16 = 2
    static let vethInfoPeer: UInt16 = 1
}

enum IFA {
    static let address: UInt16 = 1, local: UInt16 = 2, broadcast: UInt16 = 4, flags: UInt16 = 8
    static let noDAD: UInt32 = 0x02
}

enum RTA {
    static let dst: UInt16 = 1, src: UInt16 = 2, oif: UInt16 = 4, gateway: UInt16 = 5, priority: UInt16 = 6
    static let prefsrc: UInt16 = 7, table: UInt16 = 15
}

enum FRA {
    static let dst: UInt16 = 1, src: UInt16 = 2, iifname: UInt16 = 3, priority: UInt16 = 6, fwmark: UInt16 = 10
    static let table: UInt16 = 15, fwmask: UInt16 = 16, oifname: UInt16 = 17
    static let actionToTable: UInt8 = 1
}

/// Interface flag IFF_UP.
public let interfaceUp: UInt32 = 0x1

/// A route. `destination` nil means the default route of `family`.
public struct Route: Sendable, Equatable {
    public enum Kind: UInt8, Sendable { case unicast = 1, blackhole = 6, unreachable = 7, prohibit = 8 }

    public var destination: IPPrefix?
    public var gateway: IPAddress?
    /// Output interface index.
    public var outputInterface: Int32?
    /// Preferred source address.
    public var source: IPAddress?
    /// Routing table (254 = main).
    public var table: UInt32
    public var metric: UInt32?
    public var kind: Kind
    /// True for IPv6 when `destination` and `gateway` are nil.
    public var ipv6: Bool

    public init(
        destination: IPPrefix? = nil, gateway: IPAddress? = nil, outputInterface: Int32? = nil,
        source: IPAddress? = nil, table: UInt32 = 254, metric: UInt32? = nil, kind: Kind = .unicast, ipv6: Bool = false
    ) {
        self.destination = destination
        self.gateway = gateway
        self.outputInterface = outputInterface
        self.source = source
        self.table = table
        self.metric = metric
        self.kind = kind
        self.ipv6 = ipv6 || destination?.address.isIPv6 == true || gateway?.isIPv6 == true
    }

    var family: UInt8 { ipv6 ? UInt8(AF_INET6) : UInt8(AF_INET) }

    public var description: String {
        var parts = [destination.map { "\($0)" } ?? "default"]
        if let gateway { parts.append("via \(gateway)") }
        if let outputInterface { parts.append("dev #\(outputInterface)") }
        parts.append("table \(table)")
        return parts.joined(separator: " ")
    }
}

/// A policy-routing rule: match (fwmark/mask, source, destination, input/output interface), then look up
/// `table`.
public struct RoutingRule: Sendable, Equatable {
    public var priority: UInt32?
    public var fwmark: UInt32?
    public var fwmask: UInt32?
    public var source: IPPrefix?
    public var destination: IPPrefix?
    public var inputInterface: String?
    public var outputInterface: String?
    public var table: UInt32
    public var ipv6: Bool

    public init(
        priority: UInt32? = nil, fwmark: UInt32? = nil, fwmask: UInt32? = nil, source: IPPrefix? = nil,
        destination: IPPrefix? = nil, inputInterface: String? = nil, outputInterface: String? = nil,
        table: UInt32, ipv6: Bool = false
    ) {
        self.priority = priority
        self.fwmark = fwmark
        self.fwmask = fwmask
        self.source = source
        self.destination = destination
        self.inputInterface = inputInterface
        self.outputInterface = outputInterface
        self.table = table
        self.ipv6 = ipv6 || source?.address.isIPv6 == true || destination?.address.isIPv6 == true
    }

    public var description: String {
        var parts: [String] = []
        if let priority { parts.append("pref \(priority)") }
        if let fwmark { parts.append("fwmark 0x\(String(fwmark, radix: 16))" + (fwmask.map { "/0x\(String($0, radix: 16))" } ?? "")) }
        if let source { parts.append("from \(source)") }
        if let destination { parts.append("to \(destination)") }
        if let inputInterface { parts.append("iif \(inputInterface)") }
        if let outputInterface { parts.append("oif \(outputInterface)") }
        parts.append("lookup \(table)")
        return parts.joined(separator: " ")
    }
}

/// Pure encoders for rtnetlink requests (no socket, no system state): what `RouteNetlink` sends.
public enum RouteMessages {
    static let create = NL.request | NL.create | NL.excl

    /// ifinfomsg: family, pad, type, index, flags, change.
    static func ifinfo(index: Int32 = 0, flags: UInt32 = 0, change: UInt32 = 0) -> [UInt8] {
        [UInt8(AF_UNSPEC), 0, 0, 0] + le(index) + le(flags) + le(change)
    }

    /// Creates a veth pair `name` <-> `peer`. The link `name` lands in the socket's namespace, or in
    /// `namespaceFD` if given; the peer lands in `peerNamespaceFD` if given (created there directly).
    /// (Creating it up does not work: the kernel opens the peer before pairing it, ENOTCONN.)
    public static func newVeth(_ name: String, peer: String, namespaceFD: Int32? = nil, peerNamespaceFD: Int32? = nil) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.newLink, flags: create)
        builder.putFixed(ifinfo())
        builder.put(IFLA.ifname, string: name)
        if let namespaceFD { builder.put(IFLA.netNsFD, u32: UInt32(bitPattern: namespaceFD)) }
        builder.nest(IFLA.linkinfo) {
            builder.put(IFLA.infoKind, string: "veth")
            builder.nest(IFLA.infoData) {
                builder.nest(IFLA.vethInfoPeer) {
                    builder.putFixed(ifinfo())
                    builder.put(IFLA.ifname, string: peer)
                    if let peerNamespaceFD { builder.put(IFLA.netNsFD, u32: UInt32(bitPattern: peerNamespaceFD)) }
                }
            }
        }
        return builder.finish()
    }

    /// Creates a bridge.
    public static func newBridge(_ name: String) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.newLink, flags: create)
        builder.putFixed(ifinfo())
        builder.put(IFLA.ifname, string: name)
        builder.nest(IFLA.linkinfo) { builder.put(IFLA.infoKind, string: "bridge") }
        return builder.finish()
    }

    /// Deletes a link by name (a veth's peer goes with it).
    public static func deleteLink(_ name: String) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.deleteLink, flags: NL.request)
        builder.putFixed(ifinfo())
        builder.put(IFLA.ifname, string: name)
        return builder.finish()
    }

    /// Changes an existing link found by name: up/down, MTU, MAC, bridge master (0 = none), namespace.
    public static func setLink(
        _ name: String, up: Bool? = nil, mtu: UInt32? = nil, mac: MACAddress? = nil, master: Int32? = nil,
        namespaceFD: Int32? = nil
    ) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.newLink, flags: NL.request)
        builder.putFixed(ifinfo(flags: up == true ? interfaceUp : 0, change: up == nil ? 0 : interfaceUp))
        builder.put(IFLA.ifname, string: name)
        if let mtu { builder.put(IFLA.mtu, u32: mtu) }
        if let mac { builder.put(IFLA.address, bytes: mac.bytes) }
        if let master { builder.put(IFLA.master, u32: UInt32(bitPattern: master)) }
        if let namespaceFD { builder.put(IFLA.netNsFD, u32: UInt32(bitPattern: namespaceFD)) }
        return builder.finish()
    }

    /// Asks for one link by name.
    public static func getLink(_ name: String) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.getLink, flags: NL.request)
        builder.putFixed(ifinfo())
        builder.put(IFLA.ifname, string: name)
        return builder.finish()
    }

    /// Dumps all links.
    public static func dumpLinks() -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.getLink, flags: NL.request | NL.dump)
        builder.putFixed(ifinfo())
        return builder.finish()
    }

    /// ifaddrmsg: family, prefixlen, flags, scope, index.
    static func ifaddr(_ prefix: IPPrefix, index: Int32, flags: UInt8 = 0) -> [UInt8] {
        [prefix.address.family, prefix.length, flags, 0] + le(UInt32(bitPattern: index))
    }

    /// Adds an address to link `index`. IPv6 addresses skip duplicate address detection (`noDAD`) so
    /// they are usable at once.
    public static func newAddress(_ prefix: IPPrefix, index: Int32, noDAD: Bool = true) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.newAddress, flags: create)
        let flags: UInt8 = prefix.address.isIPv6 && noDAD ? UInt8(IFA.noDAD) : 0
        builder.putFixed(ifaddr(prefix, index: index, flags: flags))
        builder.put(IFA.local, bytes: prefix.address.bytes)
        builder.put(IFA.address, bytes: prefix.address.bytes)
        return builder.finish()
    }

    public static func deleteAddress(_ prefix: IPPrefix, index: Int32) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.deleteAddress, flags: NL.request)
        builder.putFixed(ifaddr(prefix, index: index))
        builder.put(IFA.local, bytes: prefix.address.bytes)
        builder.put(IFA.address, bytes: prefix.address.bytes)
        return builder.finish()
    }

    /// Dumps addresses of one family (AF_UNSPEC: all).
    public static func dumpAddresses(family: UInt8 = UInt8(AF_UNSPEC)) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.getAddress, flags: NL.request | NL.dump)
        builder.putFixed([family, 0, 0, 0, 0, 0, 0, 0])
        return builder.finish()
    }

    /// rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
    static func rtmsg(_ route: Route) -> [UInt8] {
        let scope: UInt8 = (route.gateway == nil && route.kind == .unicast && route.outputInterface != nil) ? 253 : 0
        let table: UInt8 = route.table < 256 ? UInt8(route.table) : 252
        return [route.family, route.destination?.length ?? 0, 0, 0, table, 4 /* RTPROT_STATIC */, scope, route.kind.rawValue]
            + le(UInt32(0))
    }

    static func routeBody(_ builder: MessageBuilder, _ route: Route) {
        builder.putFixed(rtmsg(route))
        builder.put(RTA.table, u32: route.table)
        if let destination = route.destination { builder.put(RTA.dst, bytes: destination.network.bytes) }
        if let gateway = route.gateway { builder.put(RTA.gateway, bytes: gateway.bytes) }
        if let source = route.source { builder.put(RTA.prefsrc, bytes: source.bytes) }
        if let oif = route.outputInterface { builder.put(RTA.oif, u32: UInt32(bitPattern: oif)) }
        if let metric = route.metric { builder.put(RTA.priority, u32: metric) }
    }

    public static func newRoute(_ route: Route) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.newRoute, flags: create)
        routeBody(builder, route)
        return builder.finish()
    }

    public static func deleteRoute(_ route: Route) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.deleteRoute, flags: NL.request)
        routeBody(builder, route)
        return builder.finish()
    }

    /// fib_rule_hdr: family, dst_len, src_len, tos, table, res1, res2, action, flags.
    static func ruleBody(_ builder: MessageBuilder, _ rule: RoutingRule) {
        let family = rule.ipv6 ? UInt8(AF_INET6) : UInt8(AF_INET)
        let table: UInt8 = rule.table < 256 ? UInt8(rule.table) : 252
        builder.putFixed([family, rule.destination?.length ?? 0, rule.source?.length ?? 0, 0, table, 0, 0, FRA.actionToTable]
            + le(UInt32(0)))
        builder.put(FRA.table, u32: rule.table)
        if let priority = rule.priority { builder.put(FRA.priority, u32: priority) }
        if let fwmark = rule.fwmark { builder.put(FRA.fwmark, u32: fwmark) }
        if let fwmask = rule.fwmask { builder.put(FRA.fwmask, u32: fwmask) }
        if let source = rule.source { builder.put(FRA.src, bytes: source.network.bytes) }
        if let destination = rule.destination { builder.put(FRA.dst, bytes: destination.network.bytes) }
        if let iif = rule.inputInterface { builder.put(FRA.iifname, string: iif) }
        if let oif = rule.outputInterface { builder.put(FRA.oifname, string: oif) }
    }

    public static func newRule(_ rule: RoutingRule) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.newRule, flags: create)
        ruleBody(builder, rule)
        return builder.finish()
    }

    public static func deleteRule(_ rule: RoutingRule) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.deleteRule, flags: NL.request)
        ruleBody(builder, rule)
        return builder.finish()
    }

    /// Dumps the routes of one family.
    public static func dumpRoutes(ipv6: Bool) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.getRoute, flags: NL.request | NL.dump)
        builder.putFixed([ipv6 ? UInt8(AF_INET6) : UInt8(AF_INET), 0, 0, 0, 0, 0, 0, 0] + le(UInt32(0)))
        return builder.finish()
    }

    /// Dumps the neighbour tables (ARP and NDP) of every link; `family` AF_UNSPEC for both.
    public static func dumpNeighbours(family: UInt8 = UInt8(AF_UNSPEC)) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.getNeighbour, flags: NL.request | NL.dump)
        // ndmsg: family, pad1, pad2 (2), ifindex (4), state (2), flags, type.
        builder.putFixed([family, 0, 0, 0] + le(UInt32(0)) + [0, 0, 0, 0])
        return builder.finish()
    }

    /// Dumps the rules of one family.
    public static func dumpRules(ipv6: Bool = false) -> NetlinkMessage {
        let builder = MessageBuilder(type: RTM.getRule, flags: NL.request | NL.dump)
        builder.putFixed([ipv6 ? UInt8(AF_INET6) : UInt8(AF_INET), 0, 0, 0, 0, 0, 0, 0] + le(UInt32(0)))
        return builder.finish()
    }
}
