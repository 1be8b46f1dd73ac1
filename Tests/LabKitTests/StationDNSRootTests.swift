import Foundation
import HotspotStation
import HotspotSystem
import Netlink
import Testing
import TestSupport
@testable import LabKit
@testable import LabServices
@testable import LabTopology

/// Root test on the host kernel (veth for the radio): the station's own tools resolve names through the DNS its
/// DHCP lease named, as a station's processes are started by the lab (`hotspot-nsexec --resolv-conf` with the
/// station's resolv.conf, `StationResolver`), and never through the machine's /etc/resolv.conf (which points
/// nowhere inside the lab). The lease comes from hotspotd's own DHCP client (`DHCPClient`).
@Suite("The station's DNS (root, host kernel, veth)", .serialized, .requiresRoot)
struct StationDNSRootTests {
    /// `getent ahostsv4 NAME` (glibc's resolver: /etc/resolv.conf) in the station's namespace, as the lab starts tools there.
    static func getent(_ client: LabClient, _ name: String, resolvConf: String) throws -> ProcessResult {
        try ProcessRunner.run(ProcessConfiguration("getent", ["ahostsv4", name]).inNetworkNamespace(client.sta, resolvConf: resolvConf),
                              timeout: .seconds(40))
    }

    @Test("root: getent, busybox nslookup and the application step's request in a station resolve with the lease's DNS, also in a process started before the lease")
    func stationToolsResolveThroughTheLease() throws {
        let topology = try TopologyParser.parse(InternetRootTests.yaml, file: "net.yaml")
        let hostResolvConf = readSmallFile("/etc/resolv.conf")
        try withLab(topology) { client in
            let runDirectory = client.lab.logDirectory + "/stations/phone/hotspotd"
            let resolvConf = try StationResolver.prepare(runDirectory: runDirectory)
            #expect(readSmallFile(resolvConf) == "", "no servers before the first lease")
            let station = try #require(client.running.stationNamespace)
            let interface = try #require(client.running.stationInterface)
            // A process started before the lease, as the helpers and hotspotd are: it resolves once told to (a FIFO).
            let fifo = runDirectory + "/go"
            try #require(mkfifo(fifo, 0o600) == 0, "mkfifo \(fifo): \(String(cString: strerror(errno)))")
            let earlyLog = runDirectory + "/early.log"
            let early = try client.lab.lab.spawn(ProcessConfiguration("/bin/sh", ["-c", "read go < \(fifo); exec getent ahostsv4 api.vendor.example"],
                                                                      stdout: .file(earlyLog), stderr: .file(earlyLog)),
                                                 in: station, resolvConf: resolvConf)

            // Before the lease nothing resolves (no servers; not the machine's DNS either).
            #expect(!(try Self.getent(client, "api.vendor.example", resolvConf: resolvConf)).status.succeeded)

            // The lease, taken by hotspotd's own DHCP client in the station's namespace and applied as hotspotd does.
            let options = StationOptions(interface: interface, wpaControlPath: runDirectory + "/unused", runDirectory: runDirectory)
            let inode = try FileManager.default.attributesOfItem(atPath: resolvConf)[.systemFileNumber] as? UInt64
            let fields = try station.runInside {
                try DHCPClient(interface: interface, transport: IPv4PacketSocket(interface: interface)).run().leaseFields
            }
            try WPAStation.apply(lease: fields, options: options, route: station.route)
            let leased = try DHCPLease(fields: DHCPLease.fields(readSmallFile(options.leaseFile) ?? ""), file: options.leaseFile)
            #expect(try station.route.addresses().contains { $0.prefix == leased.address }, "the lease's address is on \(interface)")
            #expect(readSmallFile(resolvConf) == "nameserver \(client.gateway)\n")
            #expect(try FileManager.default.attributesOfItem(atPath: resolvConf)[.systemFileNumber] as? UInt64 == inode,
                    "resolv.conf is rewritten in place (the bind mount holds the inode)")

            // glibc (getent), busybox's resolver (nslookup without a server) and curl, all through /etc/resolv.conf.
            let resolved = try Self.getent(client, "api.vendor.example", resolvConf: resolvConf)
            #expect(resolved.status.succeeded && resolved.stdout.hasPrefix(client.internetIP + " "), "getent: \(resolved.status) \(resolved.stdout) \(resolved.stderr)")
            let portal = try Self.getent(client, "portal.cafe.example", resolvConf: resolvConf)
            #expect(portal.stdout.hasPrefix(client.gateway + " "), "the portal's name: \(portal.stdout) \(portal.stderr)")
            let nslookup = try ProcessRunner.run(ProcessConfiguration("busybox", ["nslookup", "-type=A", "www.google.com"])
                .inNetworkNamespace(client.sta, resolvConf: resolvConf), timeout: .seconds(30))
            #expect(nslookup.stdout.contains(client.gateway) && nslookup.stdout.contains(client.internetIP), "nslookup: \(nslookup.stdout) \(nslookup.stderr)")

            // The process started before the lease resolves too.
            let writer = open(fifo, O_RDWR | O_CLOEXEC)
            try #require(writer >= 0, "open \(fifo): \(String(cString: strerror(errno)))")
            defer { close(writer) }
            #expect(write(writer, "go\n", 3) == 3)
            let earlyStatus = try early.wait(timeout: .seconds(40))
            let earlyText = readSmallFile(earlyLog) ?? ""
            #expect(earlyStatus == .exited(0) && earlyText.hasPrefix(client.internetIP + " "), "early: \(String(describing: earlyStatus)) \(earlyText)")

            // The `application` step's request by name (`StationTraffic`): before login the gate refuses the connection (the name resolved),
            // after it the vendor's backend answers over HTTPS verified against the lab CA bundle.
            let bundle = PortalTLS.caBundle(labLogDirectory: client.lab.logDirectory)
            let vendor = "https://api.vendor.example/session"
            let blocked = try StationResolver.application(vendor, namespace: try NetworkNamespace.open(client.sta), resolvConf: resolvConf, caBundle: bundle)
            #expect(blocked.status == nil && blocked.error.contains("connect") && !blocked.error.contains("resolve"), "before login: \(blocked.error)")
            let link = try station.route.link(interface)
            let mac = try #require(link.mac).description
            let lease = readSmallFile(options.leaseFile) ?? ""
            let ip = try #require(lease.split(separator: "\n").first { $0.hasPrefix("ip=") }.map { String($0.dropFirst(3)) })
            let nft = try ProcessRunner.run(ProcessConfiguration(try RunningTopology.findTool("nft"), GateRuleset.allowArguments(mac: mac, ip: ip, seconds: 600))
                .inNetworkNamespace(client.running.namespace.name), timeout: .seconds(10))
            try #require(nft.status.succeeded, "nft: \(nft.stderr)")
            let allowed = try StationResolver.application(vendor, namespace: try NetworkNamespace.open(client.sta), resolvConf: resolvConf, caBundle: bundle, maxTime: 60)
            #expect(allowed.status == 200, "after login: \(String(describing: allowed.status)) \(allowed.error)")
        }
        // The binds stayed private to the station's processes.
        #expect(readSmallFile("/etc/resolv.conf") == hostResolvConf)
        #expect(!(readSmallFile("/proc/self/mountinfo") ?? "").contains("/etc/resolv.conf"), "a bind leaked into this mount namespace")
    }
}
