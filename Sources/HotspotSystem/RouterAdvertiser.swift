#if canImport(Glibc)
import Glibc
#endif

/// An ICMPv6 Router Advertisement (RFC 4861 4.2) with the options a hotspot sends: Prefix Information for SLAAC
/// (RFC 4862), RDNSS (RFC 8106), and the Captive-Portal API URI (RFC 8910 option 37). Pure: `bytes` is what goes
/// on the wire after the IPv6 header (the kernel fills the checksum of a raw ICMPv6 socket).
public struct RouterAdvertisement: Sendable, Equatable {
    /// The on-link prefix (16 bytes) and its length; autonomous (SLAAC) and on-link flags set.
    public var prefix: [UInt8]
    public var prefixLength: UInt8
    /// M: addresses from DHCPv6 too. O: other configuration (DNS, option 103) from DHCPv6.
    public var managed: Bool
    public var other: Bool
    public var routerLifetime: UInt16
    public var validLifetime: UInt32
    public var preferredLifetime: UInt32
    /// Recursive DNS servers (16 bytes each).
    public var dnsServers: [[UInt8]]
    public var dnsLifetime: UInt32
    /// RFC 8910's URI of the captive-portal API; nil: no option 37.
    public var captivePortal: String?

    public init(prefix: [UInt8], prefixLength: UInt8, managed: Bool = true, other: Bool = true, routerLifetime: UInt16 = 1800,
                validLifetime: UInt32 = 86400, preferredLifetime: UInt32 = 14400, dnsServers: [[UInt8]] = [],
                dnsLifetime: UInt32 = 1800, captivePortal: String? = nil) {
        self.prefix = prefix
        self.prefixLength = prefixLength
        self.managed = managed
        self.other = other
        self.routerLifetime = routerLifetime
        self.validLifetime = validLifetime
        self.preferredLifetime = preferredLifetime
        self.dnsServers = dnsServers
        self.dnsLifetime = dnsLifetime
        self.captivePortal = captivePortal
    }

    public static let type: UInt8 = 134
    public static let solicitationType: UInt8 = 133
    public static let captivePortalOption: UInt8 = 37

    static func be<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }

    public var bytes: [UInt8] {
        let flags: UInt8 = (managed ? 0x80 : 0) | (other ? 0x40 : 0)
        // type, code, checksum (kernel), cur hop limit 64, flags, router lifetime, reachable time, retrans timer.
        var out: [UInt8] = [Self.type, 0, 0, 0, 64, flags] + Self.be(routerLifetime) + Self.be(UInt32(0)) + Self.be(UInt32(0))
        // Prefix Information: type 3, length 4 (32 bytes), L and A flags.
        out += [3, 4, prefixLength, 0xC0] + Self.be(validLifetime) + Self.be(preferredLifetime) + Self.be(UInt32(0)) + prefix
        if !dnsServers.isEmpty {
            out += [25, UInt8(1 + 2 * dnsServers.count), 0, 0] + Self.be(dnsLifetime) + dnsServers.flatMap { $0 }
        }
        if let captivePortal {
            // The URI, NUL-padded to a multiple of 8 bytes with the 2-byte header (RFC 8910 2.3).
            var uri = Array(captivePortal.utf8)
            while (uri.count + 2) % 8 != 0 { uri.append(0) }
            out += [Self.captivePortalOption, UInt8((uri.count + 2) / 8)] + uri
        }
        return out
    }
}

extension RouterAdvertisement {
    /// What a station takes from a Router Advertisement it received (RFC 4861 4.2): the router lifetime, the RDNSS
    /// servers (RFC 8106, option 25) and RFC 8910's captive-portal API URI (option 37). Pure.
    public struct Received: Sendable, Equatable {
        public var routerLifetime: UInt16
        /// The servers' addresses in their text form (`2001:db8::1`).
        public var dnsServers: [String]
        public var captivePortal: String?

        public init(routerLifetime: UInt16, dnsServers: [String] = [], captivePortal: String? = nil) {
            self.routerLifetime = routerLifetime
            self.dnsServers = dnsServers
            self.captivePortal = captivePortal
        }

        /// `bytes`: the ICMPv6 message (after the IPv6 header). nil when it is not a Router Advertisement or an
        /// option's length runs past the end (RFC 4861 4.6: a zero length is invalid, the message is dropped).
        public static func parse(_ bytes: [UInt8]) -> Received? {
            guard bytes.count >= 16, bytes[0] == RouterAdvertisement.type, bytes[1] == 0 else { return nil }
            var result = Received(routerLifetime: UInt16(bytes[6]) << 8 | UInt16(bytes[7]))
            var offset = 16
            while offset + 2 <= bytes.count {
                let type = bytes[offset]
                let length = Int(bytes[offset + 1]) * 8
                guard length > 0, offset + length <= bytes.count else { return nil }
                let body = Array(bytes[(offset + 2)..<(offset + length)])
                switch type {
                case 25 where body.count >= 6 + 16:
                    var at = 6
                    while at + 16 <= body.count {
                        result.dnsServers.append(Self.text(Array(body[at..<(at + 16)])))
                        at += 16
                    }
                case RouterAdvertisement.captivePortalOption:
                    var uri = body
                    while uri.last == 0 { uri.removeLast() }
                    if !uri.isEmpty { result.captivePortal = String(decoding: uri, as: UTF8.self) }
                default: break
                }
                offset += length
            }
            return result
        }

        static func text(_ address: [UInt8]) -> String {
            var raw = in6_addr()
            withUnsafeMutableBytes(of: &raw) { p in for i in 0..<16 { p[i] = address[i] } }
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count))
            return String(cString: buffer)
        }
    }
}

/// Receives the Router Advertisements that reach a station's interface, on a raw ICMPv6 socket bound to it (all
/// nodes, ff02::1, is joined by every IPv6 interface). The kernel's SLAAC still configures the address and default
/// route; this only reads what the kernel does not (RDNSS, RFC 8910 option 37).
public final class RouterAdvertisementListener {
    public let interface: String
    let fd: Int32

    /// The socket is set up in a local and stored last: an init that throws after every stored property is set runs
    /// `deinit`, and a close there as well as here would close the number twice (the second time, perhaps, another
    /// thread's new descriptor).
    public init(interface: String) throws {
        self.interface = interface
        let socketFD = socket(AF_INET6, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Int32(IPPROTO_ICMPV6))
        guard socketFD >= 0 else { throw SystemError.current("open a raw ICMPv6 socket", "for router advertisements on \(interface)") }
        let rc = interface.withCString { name in
            setsockopt(socketFD, SOL_SOCKET, SO_BINDTODEVICE, name, socklen_t(strlen(name) + 1))
        }
        guard rc == 0 else {
            let error = SystemError.current("bind the raw ICMPv6 socket to", interface)
            close(socketFD)
            throw error
        }
        fd = socketFD
    }

    deinit { close(fd) }

    /// The next Router Advertisement within `timeoutMilliseconds`, nil when none came (other ICMPv6 messages are
    /// skipped).
    public func receive(timeoutMilliseconds: Int32) throws -> RouterAdvertisement.Received? {
        guard try readable(fd, within: timeoutMilliseconds, "the raw ICMPv6 socket", of: interface) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 2048)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else {
            if count < 0, errno == EINTR || errno == EAGAIN { return nil }
            throw SystemError.current("receive on the raw ICMPv6 socket of", interface)
        }
        return RouterAdvertisement.Received.parse(Array(buffer[0..<count]))
    }
}

/// Sends a `RouterAdvertisement` to all nodes (ff02::1) on one interface, at once, every `interval` and in answer
/// to each Router Solicitation, from a raw ICMPv6 socket (hop limit 255, RFC 4861 6.1.2). The kernel picks the
/// interface's link-local source address.
public final class RouterAdvertiser {
    public let interface: String
    public let advertisement: RouterAdvertisement
    let fd: Int32
    let index: UInt32

    public init(interface: String, advertisement: RouterAdvertisement) throws {
        self.interface = interface
        self.advertisement = advertisement
        index = if_nametoindex(interface)
        guard index != 0 else { throw SystemError.current("find", "interface \(interface)") }
        // In a local, stored last (as `RouterAdvertisementListener.init`: no second close by `deinit`).
        let fd = socket(AF_INET6, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Int32(IPPROTO_ICMPV6))
        guard fd >= 0 else { throw SystemError.current("open a raw ICMPv6 socket", "for \(interface)") }
        var hops: Int32 = 255
        var ifindex = Int32(bitPattern: index)
        var group = ipv6_mreq()
        inet_pton(AF_INET6, "ff02::2", &group.ipv6mr_multiaddr)
        group.ipv6mr_interface = index
        let options: [(String, Int32)] = [
            ("IPV6_MULTICAST_HOPS", setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_MULTICAST_HOPS, &hops, 4)),
            ("IPV6_UNICAST_HOPS", setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_UNICAST_HOPS, &hops, 4)),
            ("IPV6_MULTICAST_IF", setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_MULTICAST_IF, &ifindex, 4)),
            ("IPV6_JOIN_GROUP ff02::2", setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_JOIN_GROUP, &group, socklen_t(MemoryLayout<ipv6_mreq>.size))),
        ]
        for (name, rc) in options where rc != 0 {
            let error = SystemError.current("set \(name) on the raw ICMPv6 socket", "for \(interface)")
            close(fd)
            throw error
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// One advertisement to ff02::1 on the interface.
    public func send() throws {
        var to = sockaddr_in6()
        to.sin6_family = sa_family_t(AF_INET6)
        inet_pton(AF_INET6, "ff02::1", &to.sin6_addr)
        to.sin6_scope_id = index
        let bytes = advertisement.bytes
        let sent = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &to) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
        guard sent == bytes.count else { throw SystemError.current("send a router advertisement", "on \(interface)") }
    }

    /// Advertises until the process ends: at once, then every `interval` seconds and after each solicitation.
    /// Send errors (the link-local address still tentative, the link down) are reported and retried.
    public func run(interval: Double, onFirstSend: () -> Void, report: (String) -> Void) -> Never {
        var announced = false
        while true {
            do {
                try send()
                if !announced {
                    announced = true
                    onFirstSend()
                }
            } catch {
                report("\(error)")
            }
            // Wait for a solicitation or the interval, whichever comes first.
            let deadline = monotonicSeconds() + (announced ? interval : 0.2)
            while true {
                let left = deadline - monotonicSeconds()
                if left <= 0 { break }
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 1500)
                let count = recv(fd, &buffer, buffer.count, 0)
                if count > 0, buffer[0] == RouterAdvertisement.solicitationType { break }
            }
        }
    }

    func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
