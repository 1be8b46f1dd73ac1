import Glibc
import HotspotSystem
import Netlink
import Testing

/// A `NetlinkSocket` that records requests and answers from a script: the socket seam lets the
/// operations be tested without root.
final class RecordingSocket: NetlinkSocket, @unchecked Sendable {
    var sent: [NetlinkMessage] = []
    var answer: (NetlinkMessage) throws -> [NetlinkReply]

    init(answer: @escaping (NetlinkMessage) throws -> [NetlinkReply]) { self.answer = answer }

    func request(_ message: NetlinkMessage) throws -> [NetlinkReply] {
        sent.append(message)
        return try answer(message)
    }

    func requestBatch(_ messages: [NetlinkMessage]) throws {
        sent += messages
        for message in messages where message.flags & NL.ack != 0 { _ = try answer(message) }
    }
}

/// An RTM_NEWLINK reply for link `index` named `name`.
func linkReply(index: Int32, name: String) -> NetlinkReply {
    var payload: [UInt8] = [0, 0, 1, 0]
    withUnsafeBytes(of: index.littleEndian) { payload += $0 }
    payload += [0x41, 0x10, 0, 0, 0, 0, 0, 0]  // flags (up, running...), change
    let nameBytes = Array(name.utf8) + [0]
    let length = UInt16(4 + nameBytes.count)
    withUnsafeBytes(of: length.littleEndian) { payload += $0 }
    payload += [3, 0] + nameBytes
    while payload.count % 4 != 0 { payload.append(0) }
    return NetlinkReply(type: RTM.newLink, flags: 0, sequence: 1, payload: payload)
}

@Suite("rtnetlink operations over a recorded socket (no root)")
struct RecordingSocketTests {
    @Test func addAddressLooksUpTheIndexThenSendsIt() throws {
        let socket = RecordingSocket { message in
            message.type == RTM.getLink ? [linkReply(index: 42, name: "hsl0001x0")] : []
        }
        try RouteNetlink(socket: socket).addAddress(IPPrefix("198.51.100.7/24")!, to: "hsl0001x0")
        #expect(socket.sent.map(\.type) == [RTM.getLink, RTM.newAddress])
        #expect(socket.sent[0] == RouteMessages.getLink("hsl0001x0"))
        #expect(socket.sent[1] == RouteMessages.newAddress(IPPrefix("198.51.100.7/24")!, index: 42))
    }

    @Test func kernelRefusalBecomesANamedError() {
        let socket = RecordingSocket { _ in throw NetlinkKernelError(code: EEXIST) }
        do {
            try RouteNetlink(socket: socket).createVeth("lab7-ap0", peer: "lab7-sta0")
            Issue.record("no error")
        } catch {
            #expect("\(error)" == "create veth lab7-ap0 <-> lab7-sta0: File exists (EEXIST)")
        }
    }

    @Test func missingLinkIsENODEV() {
        let socket = RecordingSocket { _ in [] }
        #expect(throws: SystemError("get link", "nope0", errno: ENODEV)) { try RouteNetlink(socket: socket).link("nope0") }
    }

    @Test func linkReplyIsParsed() throws {
        let socket = RecordingSocket { _ in [linkReply(index: 7, name: "hsl0001y0")] }
        let link = try RouteNetlink(socket: socket).link("hsl0001y0")
        #expect(link.index == 7)
        #expect(link.name == "hsl0001y0")
        #expect(link.isUp)
    }
}
