import Foundation
import HotspotSystem
import Netlink
import LabSandbox
import LabTopology

/// A LAN with IPv6 (`ip: dual` or `v6-only`): the gateway's IPv6 address on the LAN and `hotspot-ra` sending the
/// Router Advertisements (the prefix for SLAAC with the M and O flags for DHCPv6, RDNSS with the gateway, and
/// RFC 8910 option 37 when the gateway announces a captive-portal API). Ready once the first advertisement went
/// out. DHCPv6 (addresses, DNS, option 103) is dnsmasq's (`DnsmasqConfig`). Debian 12's radvd and dnsmasq cannot
/// send option 37 (docs/DECISIONS.md).
public final class RouterAdvertisementService: HotspotService, @unchecked Sendable {  // @unchecked: started and stopped by the one thread that brings its hotspot up or down; the rest is lets
    public let hotspot: Hotspot
    public let ipv6: GatewayIPv6
    public let namespace: NetworkNamespace
    public let interface: String
    public let directory: String
    let launcher: any ProcessLauncher
    public private(set) var process: (any ServiceProcess)?

    public var serviceName: String { "router advertisements" }
    public var log: String { directory + "/ra.log" }
    public var readyFile: String { directory + "/ra.ready" }
    public var logFiles: [String: String] { ["ra": log] }

    public init(hotspot: Hotspot, ipv6: GatewayIPv6, namespace: NetworkNamespace, interface: String, directory: String,
                launcher: any ProcessLauncher) {
        self.hotspot = hotspot
        self.ipv6 = ipv6
        self.namespace = namespace
        self.interface = interface
        self.directory = directory
        self.launcher = launcher
    }

    /// hotspot-ra's arguments.
    public static func arguments(_ gateway: Gateway, ipv6: GatewayIPv6, interface: String, readyFile: String) -> [String] {
        var args = ["--interface", interface, "--prefix", "\(ipv6.prefix)", "--dns", "\(ipv6.address)", "--interval", "3"]
        if case .uri(let uri) = gateway.captiveAPI { args += ["--captive-portal", uri] }
        return args + ["--ready-file", readyFile]
    }

    public func launch() throws {
        try LabAddressPolicy.check(IPPrefix(ipv6.address, length: 64))
        try namespace.route.addAddress(IPPrefix(ipv6.address, length: ipv6.prefix.length), to: interface)
        unlink(readyFile)
        let binary = try launcher.product("hotspot-ra", environmentKey: "HOTSPOT_RA")
        process = try launcher.spawn(ProcessConfiguration(binary, Self.arguments(hotspot.gateway, ipv6: ipv6, interface: interface, readyFile: readyFile),
                                                          stdout: .file(log), stderr: .file(log)), inNamespace: namespace.name)
    }

    public func waitUntilReady() throws {
        guard let process else { throw SystemError("wait for", "the router advertisements of \(hotspot.name)", reason: "they were not launched") }
        try Readiness.waitForFile(readyFile, child: process, log: log, what: "hotspot-ra for \(hotspot.name)")
    }

    public func stop() throws { try Readiness.stop(process, grace: .seconds(2)) }
}
