#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem

/// nf_tables constants (linux/netfilter/nfnetlink.h, nf_tables.h; stable kernel ABI).
public enum NFT {
    /// NETLINK_NETFILTER, the netlink protocol of nfnetlink.
    public static let netlinkProtocol: Int32 = 12
    /// NFNL_SUBSYS_NFTABLES; a message type is `subsystem << 8 | message`.
    static let subsystem: UInt16 = 10
    static let batchBegin: UInt16 = 0x10  // NFNL_MSG_BATCH_BEGIN
    static let batchEnd: UInt16 = 0x11    // NFNL_MSG_BATCH_END
    public static let newSetElement: UInt16 = subsystem << 8 | 12  // NFT_MSG_NEWSETELEM
    public static let deleteSetElement: UInt16 = subsystem << 8 | 14  // NFT_MSG_DELSETELEM
    public static let getSetElement: UInt16 = subsystem << 8 | 13  // NFT_MSG_GETSETELEM

    // NFTA_SET_ELEM_LIST_*
    static let listTable: UInt16 = 1
    static let listSet: UInt16 = 2
    static let listElements: UInt16 = 3
    // NFTA_LIST_ELEM, NFTA_SET_ELEM_KEY, NFTA_SET_ELEM_TIMEOUT, NFTA_DATA_VALUE
    static let listElement: UInt16 = 1
    static let elementKey: UInt16 = 1
    static let elementTimeout: UInt16 = 4
    static let dataValue: UInt16 = 1

    /// NFPROTO_* of a table family as `nft` spells it.
    public static func family(_ name: String) -> UInt8? {
        ["inet": 1, "ip": 2, "arp": 3, "netdev": 5, "bridge": 7, "ip6": 10][name]
    }
}

/// One element of a set: the key's bytes as nf_tables lays out a concatenation (each field padded to 4 bytes).
public struct NFTSetElement: Sendable, Equatable, CustomStringConvertible {
    public var key: [UInt8]
    /// The element's own timeout; nil: the set's default.
    public var timeoutMilliseconds: UInt64?
    public var description: String

    public init(key: [UInt8], timeoutMilliseconds: UInt64? = nil, description: String) {
        self.key = key
        self.timeoutMilliseconds = timeoutMilliseconds
        self.description = description
    }

    /// An `ether_addr . ipv4_addr` element: the MAC (6 bytes, padded to 8), then the IPv4 address.
    public static func macIPv4(_ mac: MACAddress, _ ip: IPAddress, timeoutMilliseconds: UInt64? = nil) -> NFTSetElement? {
        guard !ip.isIPv6 else { return nil }
        return NFTSetElement(key: mac.bytes + [0, 0] + ip.bytes, timeoutMilliseconds: timeoutMilliseconds,
                             description: "\(mac) . \(ip)")
    }

    /// An `ether_addr` element (a set of one field: the MAC's 6 bytes, no padding).
    public static func mac(_ mac: MACAddress, timeoutMilliseconds: UInt64? = nil) -> NFTSetElement {
        NFTSetElement(key: mac.bytes, timeoutMilliseconds: timeoutMilliseconds, description: "\(mac)")
    }
}

/// nf_tables requests, as `nft` sends them: every change is a batch (begin, the change, end).
public enum NFTMessages {
    /// nfgenmsg: family, version 0, res_id (big endian).
    static func nfgen(family: UInt8, resourceID: UInt16 = 0) -> [UInt8] {
        [family, 0, UInt8(resourceID >> 8), UInt8(resourceID & 0xff)]
    }

    static func batchMarker(_ type: UInt16) -> NetlinkMessage {
        let builder = MessageBuilder(type: type, flags: NL.request)
        builder.putFixed(nfgen(family: 0, resourceID: NFT.subsystem))
        return builder.finish()
    }

    /// NFT_MSG_NEWSETELEM (`add element`: no error when the element exists, NLM_F_CREATE without EXCL) or
    /// NFT_MSG_DELSETELEM for one element, acknowledged.
    public static func setElement(_ type: UInt16, family: UInt8, table: String, set: String, element: NFTSetElement) -> NetlinkMessage {
        let flags = NL.request | NL.ack | (type == NFT.newSetElement ? NL.create : 0)
        let builder = MessageBuilder(type: type, flags: flags)
        builder.putFixed(nfgen(family: family))
        builder.put(NFT.listTable, string: table)
        builder.put(NFT.listSet, string: set)
        builder.nest(NFT.listElements) {
            builder.nest(NFT.listElement) {
                builder.nest(NFT.elementKey) { builder.put(NFT.dataValue, bytes: element.key) }
                if let timeout = element.timeoutMilliseconds {
                    builder.put(NFT.elementTimeout, bytes: withUnsafeBytes(of: timeout.bigEndian) { Array($0) })
                }
            }
        }
        return builder.finish()
    }

    /// NFT_MSG_GETSETELEM as a dump of one set's elements (`nft list set` without the process; no batch: a read).
    public static func getSetElements(family: UInt8, table: String, set: String) -> NetlinkMessage {
        let builder = MessageBuilder(type: NFT.getSetElement, flags: NL.request | NL.dump)
        builder.putFixed(nfgen(family: family))
        builder.put(NFT.listTable, string: table)
        builder.put(NFT.listSet, string: set)
        return builder.finish()
    }

    /// The keys (NFTA_DATA_VALUE bytes) of the elements in a GETSETELEM dump's replies, in the kernel's order.
    /// Each reply is an NFT_MSG_NEWSETELEM: nfgenmsg, then NFTA_SET_ELEM_LIST_ELEMENTS { NFTA_LIST_ELEM { NFTA_SET_ELEM_KEY
    /// { NFTA_DATA_VALUE } ... } ... }. The kernel leaves expired elements out of a dump. Other replies are skipped.
    public static func elementKeys(in replies: [NetlinkReply]) -> [[UInt8]] {
        replies.filter { $0.type == NFT.newSetElement && $0.payload.count >= 4 }.flatMap { reply -> [[UInt8]] in
            guard let list = NetlinkAttributes(reply.payload, offset: 4).nested(NFT.listElements) else { return [] }
            return list.values.filter { $0.type == NFT.listElement }.compactMap { element in
                NetlinkAttributes(element.value).nested(NFT.elementKey)?[NFT.dataValue]
            }
        }
    }

    /// The batch around `message`: BATCH_BEGIN, the message, BATCH_END (nftables answers changes only in batches).
    public static func batch(_ message: NetlinkMessage) -> [NetlinkMessage] {
        [batchMarker(NFT.batchBegin), message, batchMarker(NFT.batchEnd)]
    }
}

/// Adds, removes and lists elements of one nftables set over nfnetlink, in the calling thread's network namespace:
/// what `nft add element` / `nft delete element` / `nft list set` do, without starting a process.
public struct NFTSet: Sendable {
    public let socket: any NetlinkSocket
    public let family: String
    public let table: String
    public let set: String
    private let familyNumber: UInt8

    /// Errors name `family table set` and the kernel's reason; an unknown family is refused here.
    public init(socket: any NetlinkSocket, family: String, table: String, set: String) throws {
        guard let number = NFT.family(family) else {
            throw SystemError("open nftables set", "\(family) \(table) \(set)", errno: EAFNOSUPPORT,
                              detail: "family `\(family)` is not one of inet, ip, ip6, arp, bridge, netdev")
        }
        self.socket = socket
        self.family = family
        self.table = table
        self.set = set
        familyNumber = number
    }

    /// A NETLINK_NETFILTER socket in the calling thread's namespace.
    public init(family: String, table: String, set: String) throws {
        try self.init(socket: try MNLSocket(netlinkProtocol: NFT.netlinkProtocol), family: family, table: table, set: set)
    }

    public func add(_ element: NFTSetElement) throws {
        try change(NFT.newSetElement, element, operation: "add element")
    }

    /// Throws ENOENT when the set has no such element.
    public func delete(_ element: NFTSetElement) throws {
        try change(NFT.deleteSetElement, element, operation: "delete element")
    }

    /// The keys of the set's elements (an `ether_addr . ipv4_addr` key: the MAC, 2 bytes of padding, the address), read
    /// with one GETSETELEM dump. Throws ENOENT when there is no such table or set.
    public func elementKeys() throws -> [[UInt8]] {
        let request = NFTMessages.getSetElements(family: familyNumber, table: table, set: set)
        return try perform("list elements", "\(family) \(table) \(set)") {
            NFTMessages.elementKeys(in: try socket.request(request))
        }
    }

    private func change(_ type: UInt16, _ element: NFTSetElement, operation: String) throws {
        let message = NFTMessages.setElement(type, family: familyNumber, table: table, set: set, element: element)
        try perform(operation, "\(family) \(table) \(set) { \(element) }") {
            try socket.requestBatch(NFTMessages.batch(message))
        }
    }
}
