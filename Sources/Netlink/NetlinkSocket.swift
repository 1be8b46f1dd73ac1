#if canImport(Glibc)
import Glibc
#endif
import CLibMNL
import CNetlinkShim
import HotspotSystem

/// The kernel refused a netlink request: `code` is the (positive) errno from NLMSG_ERROR.
public struct NetlinkKernelError: Error, Sendable, Equatable {
    public var code: Int32
    /// The kernel's extended-ack text (NLMSGERR_ATTR_MSG), e.g. `Nexthop has invalid gateway`.
    public var message: String?
    public init(code: Int32, message: String? = nil) {
        self.code = code
        self.message = message
    }

    /// Parses an NLMSG_ERROR payload: `nlmsgerr` (error + the request's header, capped or not) followed,
    /// when `flags` has NLM_F_ACK_TLVS, by attributes.
    static func parse(payload: [UInt8], flags: UInt16) -> (code: Int32, message: String?) {
        guard payload.count >= 4 else { return (-EPROTO, nil) }
        let code: Int32 = readLE(payload, at: 0)
        guard flags & 0x200 != 0, payload.count >= 20 else { return (code, nil) }  // NLM_F_ACK_TLVS
        let requestLength = Int(readLE(payload, at: 4) as UInt32)
        let offset = 4 + (flags & 0x100 != 0 ? 16 : (requestLength + 3) & ~3)  // NLM_F_CAPPED
        guard offset <= payload.count else { return (code, nil) }
        let message = NetlinkAttributes(payload, offset: offset).string(1)  // NLMSGERR_ATTR_MSG
        return (code, message?.isEmpty == true ? nil : message)
    }
}

/// A netlink socket that sends one request and collects its replies. The real implementation is
/// `MNLSocket` (libmnl); tests may substitute a recorder.
public protocol NetlinkSocket: AnyObject, Sendable {
    /// Sends `message` (sequence number filled in here), waits for its acknowledgement or the end of the
    /// dump and returns the data messages. Throws `NetlinkKernelError` when the kernel answers an errno,
    /// `SystemError` when the socket itself fails.
    func request(_ message: NetlinkMessage) throws -> [NetlinkReply]

    /// Sends `messages` in one datagram (an nfnetlink batch: begin, changes, end), sequence numbers filled in
    /// here, and waits until every message flagged `NL.ack` is acknowledged. Throws `NetlinkKernelError` for
    /// the first message the kernel refuses (it then applies none of the batch).
    func requestBatch(_ messages: [NetlinkMessage]) throws
}

/// rtnetlink (or any netlink protocol) through libmnl. The socket stays in the network namespace it was
/// opened in, whatever thread later uses it. Thread-safe: one request at a time.
public final class MNLSocket: NetlinkSocket, @unchecked Sendable {  // @unchecked: the libmnl socket, `sequence` and the buffer are used only with `lock` held
    private let socket: OpaquePointer
    private let lock = Mutex()
    private var sequence: UInt32
    private var receiveBuffer = [UInt8](repeating: 0, count: 1 << 16)
    public let portID: UInt32

    /// Opens and binds a socket of the given netlink protocol (0 = NETLINK_ROUTE) in the calling
    /// thread's network namespace.
    public init(netlinkProtocol: Int32 = 0) throws {
        guard let socket = mnl_socket_open2(netlinkProtocol, Int32(SOCK_CLOEXEC.rawValue)) else {
            throw SystemError.current("open netlink socket", "protocol \(netlinkProtocol)")
        }
        if mnl_socket_bind(socket, 0, pid_t(bitPattern: hsl_mnl_socket_autopid())) < 0 {
            let error = SystemError.current("bind netlink socket", "protocol \(netlinkProtocol)")
            mnl_socket_close(socket)
            throw error
        }
        var one: Int32 = 1
        // Extended acks carry the kernel's reason text; capped acks do not echo our request back.
        _ = mnl_socket_setsockopt(socket, 11 /* NETLINK_EXT_ACK */, &one, 4)
        _ = mnl_socket_setsockopt(socket, 10 /* NETLINK_CAP_ACK */, &one, 4)
        self.socket = socket
        portID = mnl_socket_get_portid(socket)
        sequence = UInt32(truncatingIfNeeded: time(nil))
    }

    private var closed = false

    deinit { if !closed { mnl_socket_close(socket) } }

    /// Closes the socket now (a namespace with no mount, process, or open socket left is destroyed).
    public func close() {
        lock.withLock {
            if !closed { mnl_socket_close(socket) }
            closed = true
        }
    }

    public var fileDescriptor: Int32 { lock.withLock { closed ? -1 : mnl_socket_get_fd(socket) } }

    public func request(_ message: NetlinkMessage) throws -> [NetlinkReply] {
        try lock.withLock {
            if closed { throw SystemError("send netlink request", "type \(message.type)", errno: EBADF) }
            sequence &+= 1
            var outgoing = message
            outgoing.sequence = sequence
            let isDump = outgoing.flags & NL.dump == NL.dump && outgoing.bytes.count >= 6
            if !isDump { outgoing.flags |= NL.ack }
            let sent = outgoing.bytes.withUnsafeBytes { mnl_socket_sendto(socket, $0.baseAddress, $0.count) }
            if sent < 0 { throw SystemError.current("send netlink request", "type \(message.type)") }

            var replies: [NetlinkReply] = []
            while true {
                let count = receiveBuffer.withUnsafeMutableBytes { mnl_socket_recvfrom(socket, $0.baseAddress, $0.count) }
                if count < 0 {
                    if Errno.current == EINTR { continue }
                    throw SystemError.current("receive netlink reply", "type \(message.type)")
                }
                for reply in splitMessages(Array(receiveBuffer[0..<count])) where reply.sequence == sequence {
                    switch reply.type {
                    case NL.error:
                        let (code, text) = NetlinkKernelError.parse(payload: reply.payload, flags: reply.flags)
                        if code == 0 { return replies }
                        throw NetlinkKernelError(code: -code, message: text)
                    case NL.done:
                        return replies
                    case NL.noop:
                        continue
                    default:
                        replies.append(reply)
                        if !isDump && reply.flags & NL.multi == 0 && outgoing.flags & NL.ack == 0 { return replies }
                    }
                }
            }
        }
    }

    public func requestBatch(_ messages: [NetlinkMessage]) throws {
        try lock.withLock {
            if closed { throw SystemError("send netlink batch", "\(messages.count) messages", errno: EBADF) }
            var bytes: [UInt8] = []
            var awaited = Set<UInt32>()
            var sent = Set<UInt32>()
            for message in messages {
                sequence &+= 1
                var outgoing = message
                outgoing.sequence = sequence
                sent.insert(sequence)
                if outgoing.flags & NL.ack != 0 { awaited.insert(sequence) }
                bytes += outgoing.bytes
                while bytes.count % 4 != 0 { bytes.append(0) }
            }
            let count = bytes.withUnsafeBytes { mnl_socket_sendto(socket, $0.baseAddress, $0.count) }
            if count < 0 { throw SystemError.current("send netlink batch", "\(messages.count) messages") }
            while !awaited.isEmpty {
                let count = receiveBuffer.withUnsafeMutableBytes { mnl_socket_recvfrom(socket, $0.baseAddress, $0.count) }
                if count < 0 {
                    if Errno.current == EINTR { continue }
                    throw SystemError.current("receive netlink batch reply", "\(messages.count) messages")
                }
                for reply in splitMessages(Array(receiveBuffer[0..<count])) where sent.contains(reply.sequence) && reply.type == NL.error {
                    let (code, text) = NetlinkKernelError.parse(payload: reply.payload, flags: reply.flags)
                    if code != 0 { throw NetlinkKernelError(code: -code, message: text) }
                    awaited.remove(reply.sequence)
                }
            }
        }
    }
}

/// Runs a netlink request and turns a kernel refusal into `SystemError` naming the operation and object.
func perform<T>(_ operation: String, _ object: String, _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as NetlinkKernelError {
        throw SystemError(operation, object, errno: error.code, detail: error.message)
    } catch let error as SystemError {
        throw SystemError(operation, object, errno: error.errno, detail: error.errno == 0 ? error.description : nil)
    }
}
