#if canImport(Glibc)
import Glibc
#endif
import CSystemShims

/// IPv4 datagrams on one interface through an AF_PACKET socket (SOCK_DGRAM: the kernel adds and strips the Ethernet
/// header): what a DHCP client needs before its interface has an address. A UDP socket could not do it, as the kernel
/// drops a broadcast reply from a source with no route back under reverse-path filtering, and picks a source address
/// from whatever the interface still holds. This is how busybox udhcpc gets its lease, without its cost: udhcpc opens
/// a packet socket with a protocol and then binds it, and re-registering a running socket waits an RCU grace period
/// (about 10 ms each, three per lease); this one is created without a protocol, so its bind is the first registration.
/// Closing any packet socket waits a grace period too: `close()` belongs after the result is handed on.
public final class IPv4PacketSocket {
    public let interface: String
    public let index: Int32
    /// The interface's Ethernet address (6 bytes).
    public let hardwareAddress: [UInt8]
    private var fd: Int32

    public init(interface: String) throws {
        self.interface = interface
        let index = Int32(bitPattern: if_nametoindex(interface))
        guard index != 0 else { throw SystemError.current("find", "interface \(interface)") }
        self.index = index
        let fd = hsl_packet_ipv4_open(index)
        guard fd >= 0 else { throw SystemError.current("open an IPv4 packet socket on", interface) }
        var address = [UInt8](repeating: 0, count: 6)
        guard hsl_packet_hwaddr(fd, &address) == 0 else {
            let error = SystemError.current("read the hardware address of", interface)
            Glibc.close(fd)
            throw error
        }
        self.fd = fd
        hardwareAddress = address
    }

    deinit { close() }

    /// Closes the socket (once; later calls do nothing). Takes an RCU grace period in the kernel.
    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// One IPv4 datagram (header included) to the Ethernet broadcast address.
    public func sendBroadcast(_ packet: [UInt8]) throws {
        let sent = packet.withUnsafeBytes { hsl_packet_send_broadcast(fd, index, $0.baseAddress, $0.count) }
        guard sent == packet.count else {
            throw sent < 0 ? SystemError.current("send an IPv4 broadcast on", interface)
                : SystemError("send an IPv4 broadcast on", interface, reason: "sent \(sent) of \(packet.count) bytes")
        }
    }

    /// The next IPv4 datagram that arrived on the interface within `timeoutMilliseconds` (the ones this host sent are
    /// skipped), nil when none did.
    public func receive(timeoutMilliseconds: Int32) throws -> [UInt8]? {
        guard try readable(fd, within: max(0, timeoutMilliseconds), "the IPv4 packet socket", of: interface) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 2048)
        var outgoing: Int32 = 0
        let count = buffer.withUnsafeMutableBytes { hsl_packet_receive(fd, $0.baseAddress, $0.count, &outgoing) }
        guard count >= 0 else {
            if errno == EINTR || errno == EAGAIN { return nil }
            throw SystemError.current("receive on the IPv4 packet socket of", interface)
        }
        return outgoing != 0 ? nil : Array(buffer[0..<count])
    }
}

/// Every frame on one interface, as the kernel hands it to a packet socket (SOCK_RAW, ETH_P_ALL) with its receive
/// time: what tcpdump reads, for a capture written in process (`AirCapture`: the air on hwsim0). A receive blocks at
/// most `timeoutMilliseconds` (SO_RCVTIMEO: one system call per frame, no poll before it) and fills the caller's
/// buffer, so a capture allocates nothing per frame.
public final class PacketCaptureSocket: @unchecked Sendable {  // @unchecked: fd is set once; close() only after the reader ended
    public let interface: String
    /// The interface's ARPHRD_ type (/sys/class/net/IF/type): 803 radiotap (hwsim0), 1 Ethernet, 772 loopback.
    public let hardwareType: Int
    private var fd: Int32

    /// One frame's facts; its bytes are in the buffer given to `receive`.
    public struct Frame: Sendable {
        /// The bytes stored (at most the buffer's size).
        public var count: Int
        /// Its length on the wire.
        public var wireLength: Int
        public var seconds: Int
        public var nanoseconds: Int
    }

    public init(interface: String, timeoutMilliseconds: Int = 100) throws {
        self.interface = interface
        let index = Int32(bitPattern: if_nametoindex(interface))
        guard index != 0 else { throw SystemError.current("find", "interface \(interface)") }
        guard let type = readSmallFile("/sys/class/net/\(interface)/type").flatMap({ Int($0.filter { !$0.isWhitespace }) }) else {
            throw SystemError("read the link type of", interface, reason: "/sys/class/net/\(interface)/type is missing or not a number")
        }
        hardwareType = type
        let fd = hsl_packet_capture_open(index)
        guard fd >= 0 else { throw SystemError.current("open a capture socket on", interface) }
        var timeout = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        guard setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
            let error = SystemError.current("set the receive timeout of the capture socket of", interface)
            Glibc.close(fd)
            throw error
        }
        // A receive queue of 4 MiB, as tcpdump's default buffer (2 MiB of frames, the kernel doubling it), so a burst
        // waits for the capture's thread instead of being dropped; root may exceed rmem_max (SO_RCVBUFFORCE), others
        // get what rmem_max allows.
        var size = Int32(Self.receiveBufferBytes)
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        self.fd = fd
    }

    /// The receive queue asked for (`SO_RCVBUFFORCE`).
    public static let receiveBufferBytes = 4 << 20

    deinit { close() }

    /// Closes the socket (once). Takes an RCU grace period in the kernel.
    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// The next frame into `buffer` (at most its size of it), nil when none came within the socket's timeout, or
    /// (`waiting: false`) when none is queued now.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, waiting: Bool = true) throws -> Frame? {
        var wire = 0, seconds: Int64 = 0, nanoseconds = 0
        let count = hsl_packet_capture_receive(fd, buffer.baseAddress, buffer.count, &wire, &seconds, &nanoseconds, waiting ? 0 : 1)
        guard count >= 0 else {
            if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { return nil }
            throw SystemError.current("receive on the capture socket of", interface)
        }
        return Frame(count: count, wireLength: wire, seconds: Int(seconds), nanoseconds: nanoseconds)
    }
}
