import Foundation
import HotspotSystem
import Netlink
import LabSandbox
import LabTopology

/// A hotspot's uplink: the veth to the internet namespace (a /30 from the internet's uplinks), the default
/// route through it (absent with `faults: {uplink: down}`), netem on its egress when the faults ask for
/// latency, loss or a rate, and IPv4 forwarding in the hotspot namespace; on a LAN with IPv6 the same for IPv6.
public final class UplinkService: HotspotService, @unchecked Sendable {  // @unchecked: started and stopped by the one thread that brings its hotspot up or down; the rest is lets
    public let hotspot: Hotspot
    public let index: Int
    let lab: Lab
    let namespace: NetworkNamespace
    let internet: NetworkNamespace
    let topology: Topology
    let launcher: any ProcessLauncher
    /// The uplink interface in the hotspot namespace.
    public let interface: String
    /// The internet's end of the /30: the hotspot's default gateway.
    public let internetSide: IPv4Address

    public var serviceName: String { "uplink" }
    public var logFiles: [String: String] { [:] }

    init(hotspot: Hotspot, index: Int, lab: Lab, namespace: NetworkNamespace, internet: NetworkNamespace, topology: Topology,
         launcher: any ProcessLauncher) throws {
        self.hotspot = hotspot
        self.index = index
        self.lab = lab
        self.namespace = namespace
        self.internet = internet
        self.topology = topology
        self.launcher = launcher
        interface = try lab.name("h\(index)u")
        internetSide = topology.internet.uplink(index).internet
    }

    var defaultRoute: Route {
        get throws {
            guard let gateway = IPAddress("\(internetSide)") else {
                throw SystemError("route the uplink of", hotspot.name, reason: "\(internetSide) is not an IP address")
            }
            return Route(gateway: gateway)
        }
    }

    /// The default IPv6 route through the uplink (a LAN with IPv6): the internet's end of the uplink's /64.
    var defaultRoute6: Route? {
        hotspot.gateway.ipv6 == nil ? nil : Route(gateway: topology.internet.uplink6(index).internet)
    }

    public func launch() throws {
        let (internetSide, hotspotSide) = topology.internet.uplink(index)
        var hotspotAddresses = [try IPPrefix.parse("\(hotspotSide)/30")]
        var internetAddresses = [try IPPrefix.parse("\(internetSide)/30")]
        if hotspot.gateway.ipv6 != nil {
            // A LAN with IPv6: the uplink carries IPv6 too (a /64 of the lab's 2001:db8:fffe::/48); the gate
            // masquerades both families, so the internet needs no route back.
            let (internet6, hotspot6) = topology.internet.uplink6(index)
            hotspotAddresses.append(IPPrefix(hotspot6, length: 64))
            internetAddresses.append(IPPrefix(internet6, length: 64))
        }
        try lab.connect(namespace, "h\(index)u", addresses: hotspotAddresses, to: internet, "h\(index)i", addresses: internetAddresses)
        if !hotspot.faults.uplinkDown {
            try namespace.route.addRoute(try defaultRoute)
            if let defaultRoute6 { try namespace.route.addRoute(defaultRoute6) }
        }
        let f = hotspot.faults
        let netem = Self.netem(latencyMS: f.latencyMS, jitterMS: f.jitterMS, lossPercent: Double(f.lossPercent), rateKbit: f.rateKbit)
        if !netem.isEmpty {
            // Latency, jitter, loss and a rate limit on the uplink (egress of the hotspot's side) with netem.
            let args = Self.netemArguments(verb: "add", device: interface, netem: netem)
            let tc = try launcher.run(ProcessConfiguration(try launcher.tool("tc"), args), inNamespace: namespace.name, timeout: .seconds(60))
            guard tc.status.succeeded else {
                throw SystemError("apply faults latency-ms/loss-percent of hotspot \(hotspot.name) on", interface,
                                  reason: "tc \(args.joined(separator: " ")): \(tc.stderr.trimmingCharacters(in: .whitespacesAndNewlines)) "
                                      + "(this kernel may lack netem; the VM kernel has it: --where vm)")
            }
        }
        try namespace.writeSysctls(["/proc/sys/net/ipv4/ip_forward"] + (hotspot.gateway.ipv6 == nil ? [] : ["/proc/sys/net/ipv6/conf/all/forwarding"]), "1")
    }

    /// Ready once launched (links and routes are synchronous).
    public func waitUntilReady() throws {}

    /// The uplink goes down: the default route is removed (the veth stays, so it can come back).
    public func stop() throws { try setUp(false) }

    /// The default route through the uplink is added (up) or removed (down); already so is fine.
    public func setUp(_ up: Bool) throws {
        for route in [try defaultRoute] + (defaultRoute6.map { [$0] } ?? []) {
            do {
                if up { try namespace.route.addRoute(route) } else { try namespace.route.deleteRoute(route) }
            } catch let e as SystemError where e.errno == (up ? EEXIST : ESRCH) {}
        }
    }

    /// `tc` arguments putting netem (`netem`: its parameters) on `device`'s egress; `verb` add or replace.
    public static func netemArguments(verb: String, device: String, netem: [String]) -> [String] {
        ["qdisc", verb, "dev", device, "root", "netem"] + netem
    }

    /// netem's parameters for these faults (empty: none).
    public static func netem(latencyMS: Int, jitterMS: Int, lossPercent: Double, rateKbit: Int) -> [String] {
        var args: [String] = []
        if latencyMS > 0 || jitterMS > 0 { args += ["delay", "\(latencyMS)ms"] + (jitterMS > 0 ? ["\(jitterMS)ms"] : []) }
        if lossPercent > 0 { args += ["loss", lossPercent == lossPercent.rounded() ? "\(Int(lossPercent))%" : "\(lossPercent)%"] }
        if rateKbit > 0 { args += ["rate", "\(rateKbit)kbit"] }
        return args
    }
}
