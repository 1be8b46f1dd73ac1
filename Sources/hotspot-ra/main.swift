// hotspot-ra: a hotspot's Router Advertisements (SLAAC prefix, RDNSS, RFC 8910 option 37) on its LAN. Debian 12's
// radvd (2.19) and dnsmasq (2.90) cannot send option 37 (radvd has it from 2.20): docs/DECISIONS.md. DHCPv6 stays
// with the hotspot's dnsmasq.
//
//   hotspot-ra --interface IF --prefix 2001:db8:1::/64 [--dns ADDR]... [--captive-portal URI] [--interval S]
//              [--stateless] [--ready-file PATH]
#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem

/// One unbuffered line to a file descriptor (1: the log, 2: errors).
func line(_ fd: Int32, _ message: String) {
    let bytes = Array("hotspot-ra: \(message)\n".utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    line(2, message)
    exit(2)
}

func log(_ message: String) { line(1, message) }

func ipv6(_ text: String, _ option: String) -> [UInt8] {
    var address = in6_addr()
    guard inet_pton(AF_INET6, text, &address) == 1 else { fail("\(option): expected an IPv6 address, found `\(text)`") }
    return withUnsafeBytes(of: &address) { Array($0) }
}

var interface: String?
var prefix: ([UInt8], UInt8)?
var dns: [[UInt8]] = []
var portal: String?
var interval = 3.0
var managed = true
var readyFile: String?
var arguments = CommandLine.arguments.dropFirst()
while let option = arguments.popFirst() {
    guard option == "--stateless" || !arguments.isEmpty else { fail("\(option): expected a value") }
    switch option {
    case "--interface": interface = arguments.popFirst()
    case "--prefix":
        let text = arguments.popFirst()!
        let parts = text.split(separator: "/")
        guard parts.count == 2, let length = UInt8(parts[1]), length <= 128 else { fail("--prefix: expected ADDRESS/LENGTH, found `\(text)`") }
        prefix = (ipv6(String(parts[0]), "--prefix"), length)
    case "--dns": dns.append(ipv6(arguments.popFirst()!, "--dns"))
    case "--captive-portal": portal = arguments.popFirst()
    case "--interval":
        let text = arguments.popFirst()!
        guard let value = Double(text), value > 0 else { fail("--interval: expected seconds > 0, found `\(text)`") }
        interval = value
    case "--stateless": managed = false
    case "--ready-file": readyFile = arguments.popFirst()
    default: fail("unknown option `\(option)`; expected --interface, --prefix, --dns, --captive-portal, --interval, --stateless, --ready-file")
    }
}
guard let interface else { fail("--interface is required") }
guard let prefix else { fail("--prefix is required") }
let advertisement = RouterAdvertisement(prefix: prefix.0, prefixLength: prefix.1, managed: managed, other: true,
                                        dnsServers: dns, captivePortal: portal)
do {
    let advertiser = try RouterAdvertiser(interface: interface, advertisement: advertisement)
    log("advertising on \(interface) every \(interval) s and on each solicitation" + (portal.map { ", captive portal \($0)" } ?? ""))
    advertiser.run(interval: interval, onFirstSend: {
        log("first advertisement sent")
        if let readyFile {
            let fd = open(readyFile, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            if fd >= 0 { close(fd) }
        }
    }, report: { log("send: \($0)") })
} catch {
    fail("\(error)")
}
