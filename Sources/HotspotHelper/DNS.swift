#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem

/// The DNS messages a helper needs: one A or AAAA query, its answer's addresses (RFC 1035, RFC 3596).
public enum HotspotDNS {
    public static let typeA: UInt16 = 1
    public static let typeCNAME: UInt16 = 5
    public static let typeAAAA: UInt16 = 28
    public static let classIN: UInt16 = 1

    /// A standard query (recursion desired) for the A (or `type`: AAAA) records of `name`.
    public static func query(id: UInt16, name: String, type: UInt16 = typeA) throws(HotspotTrafficError) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        bytes += try encodeName(name)
        bytes += [UInt8(type >> 8), UInt8(type & 0xff), UInt8(classIN >> 8), UInt8(classIN & 0xff)]
        return bytes
    }

    static func encodeName(_ name: String) throws(HotspotTrafficError) -> [UInt8] {
        var trimmed = Substring(name)
        if trimmed.hasSuffix(".") { trimmed = trimmed.dropLast() }
        guard !trimmed.isEmpty, trimmed.utf8.count <= 253 else {
            throw HotspotTrafficError("resolve", "\"\(name)\"", detail: "not a host name (1 to 253 bytes)")
        }
        var out: [UInt8] = []
        for label in trimmed.split(separator: ".", omittingEmptySubsequences: false) {
            let b = Array(label.utf8)
            guard (1...63).contains(b.count) else {
                throw HotspotTrafficError("resolve", "\"\(name)\"", detail: "a label must be 1 to 63 bytes")
            }
            out.append(UInt8(b.count))
            out += b
        }
        out.append(0)
        return out
    }

    /// The IPv4 addresses answering the A query `id` for `name` (following CNAMEs in the answer), in order.
    /// Throws for a message that is not the answer (wrong id, not a response), an error code (NXDOMAIN...),
    /// a truncated or malformed message, or no A record.
    public static func addresses(inResponse bytes: [UInt8], id: UInt16, name: String, type wantedType: UInt16 = typeA)
        throws(HotspotTrafficError) -> [String]
    {
        let malformed = { (what: String) in HotspotTrafficError("resolve", name, detail: "malformed DNS answer: \(what)") }
        guard bytes.count >= 12 else { throw malformed("\(bytes.count) bytes, shorter than a header") }
        func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
        guard u16(0) == id else { throw malformed("id \(u16(0)), expected \(id)") }
        let flags = u16(2)
        guard flags & 0x8000 != 0 else { throw malformed("not a response") }
        guard flags & 0x0200 == 0 else { throw HotspotTrafficError("resolve", name, detail: "the DNS answer was truncated") }
        let rcode = flags & 0x000f
        guard rcode == 0 else {
            let names: [UInt16: String] = [1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN (no such name)", 4: "NOTIMP", 5: "REFUSED"]
            throw HotspotTrafficError("resolve", name, detail: "DNS error \(names[rcode] ?? "rcode \(rcode)")")
        }
        let questions = Int(u16(4))
        let answers = Int(u16(6))
        var offset = 12
        for _ in 0..<questions {
            (_, offset) = try readName(bytes, at: offset, malformed)
            offset += 4
            guard offset <= bytes.count else { throw malformed("question runs past the end") }
        }
        var wanted = lowercased(name.hasSuffix(".") ? String(name.dropLast()) : name)
        var chained: [String] = []
        var any: [String] = []
        for _ in 0..<answers {
            let owner: String
            (owner, offset) = try readName(bytes, at: offset, malformed)
            guard offset + 10 <= bytes.count else { throw malformed("record header runs past the end") }
            let type = u16(offset)
            let klass = u16(offset + 2)
            let length = Int(u16(offset + 8))
            let data = offset + 10
            guard data + length <= bytes.count else { throw malformed("record data runs past the end") }
            if klass == classIN, type == wantedType, type == typeA ? length == 4 : length == 16 {
                let text = type == typeA ? "\(bytes[data]).\(bytes[data + 1]).\(bytes[data + 2]).\(bytes[data + 3])"
                    : ipv6Text(Array(bytes[data..<(data + 16)]))
                any.append(text)
                if lowercased(owner) == wanted { chained.append(text) }
            } else if klass == classIN, type == typeCNAME, lowercased(owner) == wanted {
                wanted = lowercased(try readName(bytes, at: data, malformed).0)
            }
            offset = data + length
        }
        let found = chained.isEmpty ? any : chained
        guard !found.isEmpty else {
            throw HotspotTrafficError("resolve", name, detail: "no \(wantedType == typeA ? "A" : "AAAA") record in the DNS answer")
        }
        return found
    }

    /// Reads a (possibly compressed) name; returns it and the offset after it in the record.
    static func readName(_ bytes: [UInt8], at start: Int, _ malformed: (String) -> HotspotTrafficError)
        throws(HotspotTrafficError) -> (String, Int)
    {
        var labels: [String] = []
        var offset = start
        var end: Int?
        var jumps = 0
        while true {
            guard offset < bytes.count else { throw malformed("name runs past the end") }
            let length = Int(bytes[offset])
            if length == 0 {
                return (labels.joined(separator: "."), end ?? offset + 1)
            }
            if length & 0xc0 == 0xc0 {
                guard offset + 1 < bytes.count else { throw malformed("compression pointer runs past the end") }
                jumps += 1
                guard jumps <= 32 else { throw malformed("compression pointer loop") }
                if end == nil { end = offset + 2 }
                offset = (length & 0x3f) << 8 | Int(bytes[offset + 1])
                continue
            }
            guard length <= 63, offset + 1 + length <= bytes.count else { throw malformed("label runs past the end") }
            labels.append(String(decoding: bytes[(offset + 1)...(offset + length)], as: UTF8.self))
            offset += 1 + length
        }
    }

    static func ipv6Text(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func lowercased(_ s: String) -> String {
        String(decoding: s.utf8.map { (0x41...0x5a).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }
}

/// Resolves host names with an A query over UDP (and, when the station has a global IPv6 address, an AAAA query
/// first: AI_ADDRCONFIG, as getaddrinfo on iOS), on a socket marked like the command's other traffic, to the
/// nameservers of `$HOTSPOT_RESOLV_CONF` (else /etc/resolv.conf; IPv4 or IPv6). Literals skip DNS. IPv6 addresses
/// come first (Apple's preference for IPv6); a failed AAAA query falls back to the A answer and its errors.
public struct HotspotResolver: Sendable {
    public var nameservers: [String]
    public var port: UInt16
    /// SO_MARK for the query socket (nil: unmarked).
    public var mark: UInt32?

    public init(nameservers: [String], port: UInt16 = 53, mark: UInt32? = nil) {
        self.nameservers = nameservers
        self.port = port
        self.mark = mark
    }

    /// The nameservers the station gave this helper (`HotspotHelperEnvironment.nameservers()`).
    public static func fromEnvironment(mark: UInt32? = nil) -> HotspotResolver {
        HotspotResolver(nameservers: HotspotHelperEnvironment.nameservers(), mark: mark)
    }

    /// The first IPv4 address of `host`.
    public func resolve(_ host: String, timeout: Duration = .seconds(5)) throws(HotspotTrafficError) -> String {
        try resolve(host, deadline: TrafficDeadline(timeout))
    }

    /// Every IPv4 address of `host`, in the server's order.
    public func resolveAll(_ host: String, timeout: Duration = .seconds(5)) throws(HotspotTrafficError) -> [String] {
        try resolveAll(host, deadline: TrafficDeadline(timeout))
    }

    func resolve(_ host: String, deadline: TrafficDeadline) throws(HotspotTrafficError) -> String {
        try resolveAll(host, deadline: deadline)[0]
    }

    func resolveAll(_ host: String, deadline: TrafficDeadline) throws(HotspotTrafficError) -> [String] {
        if let literal = parseIPv4(host) { return [ipv4Text(literal)] }
        if let literal = IPLiteral.ipv6(host) { return [literal] }
        var ipv6: [String] = []
        if hasGlobalIPv6() { ipv6 = (try? resolveAll(host, type: HotspotDNS.typeAAAA, deadline: deadline)) ?? [] }
        do {
            return ipv6 + (try resolveAll(host, type: HotspotDNS.typeA, deadline: deadline))
        } catch {
            if !ipv6.isEmpty { return ipv6 }
            throw error
        }
    }

    /// Whether this host has a global IPv6 address (AI_ADDRCONFIG: only then are AAAA records asked for).
    var hasGlobalIPv6: @Sendable () -> Bool = HotspotResolver.systemHasGlobalIPv6

    /// A global IPv6 address the kernel can use as a source: not tentative (duplicate address detection still
    /// running) nor failed DAD. /proc/net/if_inet6 has the flags (getifaddrs has not); during the second or so of DAD
    /// after SLAAC a tentative address would make AAAA records be asked for, and the kernel would then connect from
    /// the link-local address, which no router forwards: an IPv6 connect that hangs where IPv4 works. Only where
    /// that file cannot be read, getifaddrs (any global address).
    static func systemHasGlobalIPv6() -> Bool {
        // The calling thread's namespace (a thread may have entered another one: the lab's requests from a station,
        // `StationTraffic`); /proc/net is the process's main thread's.
        for path in ["/proc/thread-self/net/if_inet6", "/proc/net/if_inet6"] {
            if let table = readSmallFile(path) { return usableGlobalIPv6(ifInet6: table) }
        }
        return anyGlobalIPv6()
    }

    /// /proc/net/if_inet6's lines (`ADDRESS IFINDEX PREFIXLEN SCOPE FLAGS NAME`, hex): a global-scope (00) address
    /// without IFA_F_TENTATIVE (0x40) or IFA_F_DADFAILED (0x08).
    static func usableGlobalIPv6(ifInet6 table: String) -> Bool {
        table.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, let scope = UInt8(fields[3], radix: 16), let flags = UInt32(fields[4], radix: 16) else { return false }
            return scope == 0 && flags & 0x48 == 0
        }
    }

    static func anyGlobalIPv6() -> Bool {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return false }
        defer { freeifaddrs(list) }
        var entry = list
        while let current = entry {
            if let address = current.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET6) {
                let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) } }
                // Not ::1, not link-local fe80::/10.
                if !(bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80), bytes != Array(repeating: 0, count: 15) + [1] { return true }
            }
            entry = current.pointee.ifa_next
        }
        return false
    }

    func resolveAll(_ host: String, type: UInt16, deadline: TrafficDeadline) throws(HotspotTrafficError) -> [String] {
        guard !nameservers.isEmpty else {
            throw HotspotTrafficError("resolve", host, detail: "no nameserver (\(HotspotHelperEnvironment.resolvConfPath) names none)")
        }
        // Two rounds over the servers; each try gets an equal share of what is left (at most 2 s).
        var lastError: HotspotTrafficError?
        let tries = nameservers.count * 2
        for attempt in 0..<tries {
            let left = deadline.remaining
            if left <= .zero { break }
            let share = min(left / (tries - attempt), .seconds(2))
            let server = nameservers[attempt % nameservers.count]
            do {
                return try ask(server, host, TrafficDeadline(max(share, min(left, .milliseconds(200)))), type: type)
            } catch {
                // An error answer from the server is final; silence or refusal tries the next.
                if error.errno == 0, error.detail?.hasPrefix("DNS error NXDOMAIN") == true { throw error }
                lastError = error
            }
        }
        throw lastError ?? deadline.timedOut("resolve", host)
    }

    func ask(_ server: String, _ host: String, _ deadline: TrafficDeadline, type: UInt16 = HotspotDNS.typeA)
        throws(HotspotTrafficError) -> [String]
    {
        let via = "\(host) via \(server):\(port)"
        guard let address = IPLiteral(server) else {
            throw HotspotTrafficError("resolve", via, detail: "the nameserver is not an IPv4 or IPv6 address")
        }
        let id = UInt16.random(in: 0...UInt16.max)
        let query = try HotspotDNS.query(id: id, name: host, type: type)
        let fd = socket(address.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw HotspotTrafficError("create a UDP socket to resolve", via, errno: Errno.current) }
        defer { close(fd) }
        if let mark { CommandTrafficMark.apply(mark, to: fd) }
        let rc = address.withSocketAddress(port: port) { connect(fd, $0, $1) }
        guard rc == 0 else { throw HotspotTrafficError("resolve", via, errno: Errno.current) }
        let sent = query.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == query.count else { throw HotspotTrafficError("resolve", via, errno: sent < 0 ? Errno.current : EMSGSIZE) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            guard deadline.wait(fd, Int16(POLLIN)) else { throw deadline.timedOut("resolve", via) }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                let code = Errno.current
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                throw HotspotTrafficError("resolve", via, errno: code)
            }
            let answer = Array(buffer[0..<n])
            // A stray datagram with another id is not our answer: keep waiting.
            if n >= 2, UInt16(answer[0]) << 8 | UInt16(answer[1]) != id { continue }
            return try HotspotDNS.addresses(inResponse: answer, id: id, name: host, type: type)
        }
    }
}
