import Glibc
import HotspotSystem
import Netlink
import Testing
import TestSupport

/// nf_tables set-element requests: golden bytes checked field by field against linux/netfilter/nf_tables.h and
/// nfnetlink.h, and against `nft --debug=mnl add element inet hotspot authenticated
/// '{ 02:00:00:00:01:00 . 192.0.2.10 timeout 300s }'` (which also sends a set id, and the timeout before the key).
@Suite("nftables set elements over nfnetlink (golden bytes, recorded socket)")
struct NFTablesMessageTests {
    static let element = NFTSetElement.macIPv4(MACAddress("02:00:00:00:01:00")!, IPAddress("192.0.2.10")!, timeoutMilliseconds: 300_000)!

    @Test func addElementGolden() {
        let message = NFTMessages.setElement(NFT.newSetElement, family: NFT.family("inet")!, table: "hotspot", set: "authenticated",
                                             element: Self.element)
        // nlmsghdr: len 92, NFT_MSG_NEWSETELEM (10 << 8 | 12), REQUEST|ACK|CREATE, seq 0, pid 0
        // nfgenmsg: NFPROTO_INET (1), version 0, res_id 0
        // NFTA_SET_ELEM_LIST_TABLE "hotspot", NFTA_SET_ELEM_LIST_SET "authenticated" (padded),
        // NFTA_SET_ELEM_LIST_ELEMENTS(nested){ NFTA_LIST_ELEM(nested){ NFTA_SET_ELEM_KEY(nested){ NFTA_DATA_VALUE
        // 02:00:00:00:01:00 + 2 bytes of padding + 192.0.2.10 }, NFTA_SET_ELEM_TIMEOUT 300000 ms (big endian) } }
        let expected = "5c000000" + "0c0a" + "0504" + "00000000" + "00000000"
            + "01000000"
            + "0c000100" + "686f7473706f7400"
            + "12000200" + "61757468656e74696361746564000000"
            + "28000380" + "24000180"
            + "14000180" + "10000100" + "0200000001000000" + "c000020a"
            + "0c000400" + "00000000000493e0"
        #expect(message.hex == expected)
    }

    @Test func deleteElementHasNoCreateFlagAndNoTimeout() {
        let element = NFTSetElement.macIPv4(MACAddress("02:00:00:00:01:00")!, IPAddress("192.0.2.10")!)!
        let message = NFTMessages.setElement(NFT.deleteSetElement, family: 1, table: "hotspot", set: "authenticated", element: element)
        #expect(message.type == 0x0a0e)
        #expect(message.flags == NL.request | NL.ack)
        let elements: String = "1c000380" + "18000180" + "14000180" + "10000100" + "0200000001000000" + "c000020a"
        #expect(message.hex.hasSuffix(elements))
    }

    @Test func batchIsBeginChangeEnd() {
        let change = NFTMessages.setElement(NFT.newSetElement, family: 1, table: "t", set: "s", element: Self.element)
        let batch = NFTMessages.batch(change)
        // NFNL_MSG_BATCH_BEGIN / END (16, 17), REQUEST; nfgenmsg AF_UNSPEC, res_id NFNL_SUBSYS_NFTABLES (10, big endian)
        #expect(batch.map(\.hex) == ["14000000" + "1000" + "0100" + "0000000000000000" + "0000000a", change.hex,
                                     "14000000" + "1100" + "0100" + "0000000000000000" + "0000000a"])
    }

    @Test func getSetElementsGolden() {
        let message = NFTMessages.getSetElements(family: NFT.family("inet")!, table: "hotspot", set: "authenticated")
        // nlmsghdr: len 52, NFT_MSG_GETSETELEM (10 << 8 | 13), REQUEST|DUMP (0x301), seq 0, pid 0; nfgenmsg NFPROTO_INET;
        // NFTA_SET_ELEM_LIST_TABLE "hotspot", NFTA_SET_ELEM_LIST_SET "authenticated" (padded). `nft --debug=mnl list
        // set inet hotspot authenticated` sends the same 52 bytes but for the two attributes' order (the set's first),
        // after a GETTABLE and a GETSET.
        let expected = "34000000" + "0d0a" + "0103" + "00000000" + "00000000"
            + "01000000"
            + "0c000100" + "686f7473706f7400"
            + "12000200" + "61757468656e74696361746564000000"
        #expect(message.hex == expected)
    }

    /// A dump's replies as the kernel lays them out (nf_tables_fill_setelem): per element a NFTA_LIST_ELEM holding
    /// the key, the timeout and the expiration; the elements may come in more than one message.
    @Test func elementKeysFromADump() {
        func bytes(_ hex: String) -> [UInt8] {
            stride(from: 0, to: hex.count, by: 2).map { i in
                UInt8(hex[hex.index(hex.startIndex, offsetBy: i)..<hex.index(hex.startIndex, offsetBy: i + 2)], radix: 16)!
            }
        }
        func element(_ key: String) -> String {
            // NFTA_LIST_ELEM { NFTA_SET_ELEM_KEY { NFTA_DATA_VALUE key (12 bytes) }, NFTA_SET_ELEM_TIMEOUT 900000 ms,
            // NFTA_SET_ELEM_EXPIRATION 899000 ms }
            "30000180" + "14000180" + "10000100" + key + "0c000400" + "00000000000dbba0" + "0c000500" + "00000000000db7b8"
        }
        let head = "01000000" + "0c000100" + "686f7473706f7400" + "12000200" + "61757468656e74696361746564000000"
        let first = NetlinkReply(type: NFT.newSetElement, flags: NL.multi, sequence: 1,
                                 payload: bytes(head + "64000380" + element("020000000a000000c633640e") + element("020000000b000000c633640f")))
        let second = NetlinkReply(type: NFT.newSetElement, flags: NL.multi, sequence: 1,
                                  payload: bytes(head + "34000380" + element("020000000c000000c6336410")))
        let other = NetlinkReply(type: NFT.newSetElement + 1, flags: NL.multi, sequence: 1, payload: first.payload)
        #expect(NFTMessages.elementKeys(in: [first, other, second]).map { $0.map { hexByte($0) }.joined() }
                == ["020000000a000000c633640e", "020000000b000000c633640f", "020000000c000000c6336410"])
        #expect(NFTMessages.elementKeys(in: []).isEmpty)
    }

    @Test func listRefusalNamesTheSet() throws {
        let socket = RecordingSocket { _ in throw NetlinkKernelError(code: ENOENT) }
        let set = try NFTSet(socket: socket, family: "inet", table: "hotspot", set: "authenticated6")
        #expect(throws: SystemError("list elements", "inet hotspot authenticated6", errno: ENOENT)) { try set.elementKeys() }
        #expect(socket.sent.map(\.type) == [NFT.getSetElement])
    }

    @Test func onlyIPv4ElementsAndKnownFamilies() throws {
        #expect(NFTSetElement.macIPv4(MACAddress("02:00:00:00:01:00")!, IPAddress("2001:db8::1")!) == nil)
        #expect(NFT.family("inet") == 1 && NFT.family("ip6") == 10 && NFT.family("nope") == nil)
        let socket = RecordingSocket { _ in [] }
        do {
            _ = try NFTSet(socket: socket, family: "inte", table: "hotspot", set: "authenticated")
            Issue.record("an unknown family was accepted")
        } catch {
            #expect("\(error)".contains("family `inte`"))
        }
    }

    @Test func refusalNamesTheSetAndElement() throws {
        let socket = RecordingSocket { _ in throw NetlinkKernelError(code: ENOENT) }
        let set = try NFTSet(socket: socket, family: "inet", table: "hotspot", set: "authenticated")
        #expect(throws: SystemError("delete element", "inet hotspot authenticated { 02:00:00:00:01:00 . 192.0.2.10 }", errno: ENOENT)) {
            try set.delete(Self.element)
        }
        #expect(socket.sent.map(\.type) == [0x10, NFT.deleteSetElement, 0x11])
    }
}

@Suite("nftables set elements over nfnetlink (root, host kernel)", .tags(.root), .requiresRoot, .serialized)
struct NFTablesRootTests {
    /// In a fresh namespace: the gate's set as the lab writes it, changed over nfnetlink, read back with `nft`.
    @Test func rootAddDeleteAsNftListsThem() throws {
        let name = testPrefix("nft") + "a"
        let namespace = try NetworkNamespace.create(name)
        defer { try? namespace.delete() }
        let candidates: [String] = ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"]
        let nft = try #require(candidates.first { access($0, X_OK) == 0 })
        func runNft(_ arguments: [String]) throws -> String {
            let result = try ProcessRunner.run(ProcessConfiguration("/usr/bin/ip", ["netns", "exec", name, nft] + arguments))
            guard result.status.succeeded else {
                throw SystemError("run", "nft \(arguments.joined(separator: " "))", reason: "\(result.status): \(result.stderr)")
            }
            return result.stdout
        }
        _ = try runNft(["add table inet hotspot; add set inet hotspot authenticated { type ether_addr . ipv4_addr; flags timeout; timeout 600s; }"])
        let set = try namespace.runInside { try NFTSet(family: "inet", table: "hotspot", set: "authenticated") }
        let element = NFTSetElement.macIPv4(MACAddress("02:00:00:00:01:00")!, IPAddress("192.0.2.10")!, timeoutMilliseconds: 300_000)!
        try set.add(element)
        try set.add(element)  // no EXCL: adding again is not an error
        let listed = try runNft(["list", "set", "inet", "hotspot", "authenticated"])
        #expect(listed.contains("02:00:00:00:01:00 . 192.0.2.10 timeout 5m"), "\(listed)")

        // Read back over nfnetlink too, beside a second element nft added (a dump of more than one).
        _ = try runNft(["add element inet hotspot authenticated { 02:00:00:00:02:00 . 192.0.2.11 }"])
        let keys = try set.elementKeys().map { $0.map { hexByte($0) }.joined() }
        #expect(keys.sorted() == ["0200000001000000c000020a", "0200000002000000c000020b"], "\(keys)")
        _ = try runNft(["flush set inet hotspot authenticated"])
        #expect(try set.elementKeys().isEmpty)
        try set.add(element)

        try set.delete(element)
        #expect(!(try runNft(["list", "set", "inet", "hotspot", "authenticated"])).contains("192.0.2.10"))
        #expect(throws: SystemError("delete element", "inet hotspot authenticated { 02:00:00:00:01:00 . 192.0.2.10 }", errno: ENOENT)) {
            try set.delete(element)
        }
        let missing = try namespace.runInside { try NFTSet(family: "inet", table: "nosuchtable", set: "authenticated") }
        #expect(throws: SystemError.self) { try missing.add(element) }
        #expect(throws: SystemError("list elements", "inet nosuchtable authenticated", errno: ENOENT)) { try missing.elementKeys() }
        do { try missing.add(element) } catch { #expect("\(error)".contains("add element inet nosuchtable authenticated"), "\(error)") }
    }
}
