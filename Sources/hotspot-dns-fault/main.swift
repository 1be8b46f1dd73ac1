// hotspot-dns-fault: the lab's broken DNS server (docs/REPLAY.md, the `dns: servfail` fault). It answers every
// query on UDP with one error code (SERVFAIL by default), echoing the question, as an upstream resolver that
// has failed makes a café's DNS do. dnsmasq keeps serving DHCP (its DNS is off, --port=0) while this runs.
//
//   hotspot-dns-fault --listen IPV4[:PORT] [--rcode servfail|refused|nxdomain|notimp] [--log FILE] [--ready-file FILE]
//
// Each query is logged as `query[TYPE] NAME from IP: RCODE`. SIGTERM ends it.
#if canImport(Glibc)
import Glibc
#endif

func writeLine(_ fd: Int32, _ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

func fail(_ message: String, code: Int32 = 64) -> Never {
    writeLine(2, "hotspot-dns-fault: \(message)")
    exit(code)
}

let usage = "usage: hotspot-dns-fault --listen IPV4[:PORT] [--rcode servfail|refused|nxdomain|notimp] [--log FILE] [--ready-file FILE]"
let rcodes: [String: UInt16] = ["servfail": 2, "nxdomain": 3, "notimp": 4, "refused": 5]

var listen: String?
var rcodeName = "servfail"
var logPath: String?
var readyFile: String?
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let option = arguments.removeFirst()
    guard ["--listen", "--rcode", "--log", "--ready-file"].contains(option) else { fail("unknown argument `\(option)`; \(usage)") }
    guard !arguments.isEmpty else { fail("\(option) needs a value; \(usage)") }
    let value = arguments.removeFirst()
    switch option {
    case "--listen": listen = value
    case "--rcode": rcodeName = value
    case "--log": logPath = value
    default: readyFile = value
    }
}
guard let listen else { fail("--listen is required; \(usage)") }
guard let rcode = rcodes[rcodeName] else { fail("--rcode: unknown `\(rcodeName)`; expected one of \(rcodes.keys.sorted().joined(separator: ", "))") }
let parts = listen.split(separator: ":", omittingEmptySubsequences: false)
guard (1...2).contains(parts.count), let port = parts.count == 2 ? UInt16(parts[1]) : 53 else {
    fail("--listen: expected IPV4[:PORT], found `\(listen)`")
}
var address = in_addr()
guard inet_pton(AF_INET, String(parts[0]), &address) == 1 else { fail("--listen: `\(parts[0])` is not an IPv4 address") }

let logFD: Int32 = {
    guard let logPath else { return 1 }
    let fd = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    guard fd >= 0 else { fail("open the log \(logPath): \(String(cString: strerror(errno)))", code: 1) }
    return fd
}()
@MainActor func note(_ line: String) { writeLine(logFD, line) }

let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
guard fd >= 0 else { fail("create a UDP socket: \(String(cString: strerror(errno)))", code: 1) }
var one: Int32 = 1
setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
var local = sockaddr_in()
local.sin_family = sa_family_t(AF_INET)
local.sin_port = port.bigEndian
local.sin_addr = address
let bound = withUnsafePointer(to: &local) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
}
guard bound == 0 else { fail("bind UDP \(listen): \(String(cString: strerror(errno)))", code: 1) }
note("hotspot-dns-fault: answering every query on \(parts[0]):\(port) with \(rcodeName.uppercased())")
if let readyFile {
    let ready = open(readyFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard ready >= 0 else { fail("write the ready file \(readyFile): \(String(cString: strerror(errno)))", code: 1) }
    writeLine(ready, "\(getpid())")
    close(ready)
}

/// The question's name and type, for the log (nil: not a parseable query).
func question(_ bytes: ArraySlice<UInt8>) -> (name: String, type: UInt16, end: Int)? {
    var offset = bytes.startIndex + 12
    var labels: [String] = []
    while offset < bytes.endIndex {
        let length = Int(bytes[offset])
        if length == 0 {
            guard offset + 5 <= bytes.endIndex else { return nil }
            let type = UInt16(bytes[offset + 1]) << 8 | UInt16(bytes[offset + 2])
            return (labels.isEmpty ? "." : labels.joined(separator: "."), type, offset + 5)
        }
        guard length < 64, offset + 1 + length <= bytes.endIndex else { return nil }
        labels.append(String(decoding: bytes[(offset + 1)...(offset + length)], as: UTF8.self))
        offset += 1 + length
    }
    return nil
}

let typeNames: [UInt16: String] = [1: "A", 28: "AAAA", 5: "CNAME", 15: "MX", 16: "TXT", 33: "SRV", 65: "HTTPS", 255: "ANY"]
var buffer = [UInt8](repeating: 0, count: 4096)
while true {
    var peer = sockaddr_in()
    var peerLength = socklen_t(MemoryLayout<sockaddr_in>.size)
    let n = buffer.withUnsafeMutableBytes { raw in
        withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &peerLength) }
        }
    }
    if n < 0 {
        if errno == EINTR { continue }
        fail("receive on \(listen): \(String(cString: strerror(errno)))", code: 1)
    }
    var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
    inet_ntop(AF_INET, &peer.sin_addr, &text, socklen_t(INET_ADDRSTRLEN))
    let from = String(cString: text)
    let message = buffer[0..<n]
    // A query: at least a header, QR clear, one question.
    guard n >= 12, message[2] & 0x80 == 0, let (name, type, end) = question(message) else {
        note("ignored \(n) bytes from \(from): not a DNS query")
        continue
    }
    var reply = Array(message[0..<end])
    reply[2] = 0x80 | (message[2] & 0x79)         // QR, keep opcode and RD
    reply[3] = 0x80 | UInt8(rcode)                // RA, the error code
    reply[4] = 0; reply[5] = 1                    // one question, no records
    for i in 6..<12 { reply[i] = 0 }
    let sent = reply.withUnsafeBytes { raw in
        withUnsafePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, peerLength) }
        }
    }
    note("query[\(typeNames[type] ?? "TYPE\(type)")] \(name) from \(from): \(rcodeName.uppercased())\(sent < 0 ? " (not sent: \(String(cString: strerror(errno))))" : "")")
}
