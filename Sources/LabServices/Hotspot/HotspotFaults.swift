import Foundation
import HotspotSystem
import Netlink
import PortalKinds
import LabTopology

/// Faults switched during a run (docs/REPLAY.md, docs/SCENARIOS.md): DNS modes, link quality, the uplink,
/// the portal server (another kind, or down), portal sessions expiring, the access points' signal. Each goes
/// through the hotspot's services.
extension RunningTopology {
    /// DNS faults during a run (docs/REPLAY.md; the modes: `DNSAnswerMode.names`): `no-answer` drops every query at
    /// the hotspot (an nftables table of the fault's own); the others switch the DNS to answer that way
    /// (`DHCPDNSService.setMode`: at once through a DNS-only dnsmasq on a side port where it can, else by restarting
    /// dnsmasq, its leases kept); `servfail` answers from `hotspot-dns-fault` on the gateway's port 53.
    @discardableResult
    public func setDNS(hotspot name: String, mode: String) throws -> String {
        guard let running = hotspots.first(where: { $0.hotspot.name == name }) else {
            throw SystemError("set the DNS of", name, reason: "no such hotspot in \(topology.file)")
        }
        if mode == "no-answer" {
            try running.dhcpDNS.dropQueries()
            return "DNS of \(name): no answer (queries dropped)"
        }
        guard let newMode = DNSAnswerMode(rawValue: mode) else {
            throw SystemError("set the DNS of", name, reason: "unknown mode `\(mode)`; expected one of \(DNSAnswerMode.names.joined(separator: ", "))")
        }
        try running.dhcpDNS.setMode(newMode)
        return "DNS of \(name): \(newMode.rawValue)"
    }

    /// The hotspot's uplink comes back (its default route is added) or goes down (removed).
    @discardableResult
    public func setUplink(_ running: RunningHotspot, up: Bool) throws -> String {
        try running.uplink.setUp(up)
        return "uplink of \(running.hotspot.name) \(up ? "up" : "down")"
    }

    /// Latency, jitter, loss and a rate limit on a hotspot's uplink or radio side (its egress there), with
    /// netem; all zero removes it. Needs netem (the VM kernel has it; the host kernel here does not).
    @discardableResult
    public func setLinkQuality(_ running: RunningHotspot, side: LinkSide = .uplink, latencyMS: Int, jitterMS: Int, lossPercent: Double,
                               rateKbit: Int) throws -> String {
        let tc = try launcher.tool("tc")
        // The uplink: the hotspot's egress to the internet. The radio side: its egress to the stations (the
        // LAN interface; management frames such as beacons do not pass the qdisc, so stations stay associated).
        let device = side == .uplink ? running.uplinkInterface : running.lanInterface
        let what = "\(side.rawValue) of \(running.hotspot.name)"
        if latencyMS == 0 && jitterMS == 0 && lossPercent == 0 && rateKbit == 0 {
            _ = try launcher.run(ProcessConfiguration(tc, ["qdisc", "del", "dev", device, "root"]), inNamespace: running.namespace.name,
                                 timeout: .seconds(60))
            return "\(what): no added latency or loss"
        }
        let args = UplinkService.netemArguments(
            verb: "replace", device: device,
            netem: Self.netem(latencyMS: latencyMS, jitterMS: jitterMS, lossPercent: lossPercent, rateKbit: rateKbit))
        let result = try launcher.run(ProcessConfiguration(tc, args), inNamespace: running.namespace.name, timeout: .seconds(60))
        guard result.status.succeeded else {
            throw SystemError("set the link quality of the \(what) on", device,
                              reason: "tc \(args.joined(separator: " ")): \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)) "
                                  + "(this kernel may lack netem; the VM kernel has it: --where vm)")
        }
        return "\(what): " + args.dropFirst(6).joined(separator: " ")
    }

    /// netem's parameters for these faults (empty: none).
    static func netem(latencyMS: Int, jitterMS: Int, lossPercent: Double, rateKbit: Int) -> [String] {
        UplinkService.netem(latencyMS: latencyMS, jitterMS: jitterMS, lossPercent: lossPercent, rateKbit: rateKbit)
    }

    /// The portal changes on the server side: the hotspot's portal server is replaced by one of `kind`
    /// (settings: the topology's, overridden by `settings`). The gate and its authenticated set stay.
    /// `kind` "down": the portal server dies (stopped), whatever it was doing; the gate still redirects to it.
    public func switchPortal(hotspot name: String, kind: String, settings: [String: String] = [:]) throws {
        guard let position = hotspots.firstIndex(where: { $0.hotspot.name == name }) else {
            throw SystemError("switch the portal of", name, reason: "no such hotspot in \(topology.file)")
        }
        if kind == "down" {
            try hotspots[position].portalService?.stop()
            hotspots[position].portalService = nil
            return
        }
        guard PortalCatalog.kinds.contains(kind) else {
            throw SystemError("switch the portal of", name, reason: "unknown portal kind `\(kind)`; expected one of: \(PortalCatalog.kinds.joined(separator: ", "))")
        }
        let running = hotspots[position]
        guard let current = running.hotspot.gateway.portal else {
            throw SystemError("switch the portal of", name, reason: "the hotspot is not captive (no portal in \(topology.file))")
        }
        do { _ = try PortalCatalog.definition(kind)?.validate(current.settings.merging(settings) { _, new in new }) } catch {
            throw SystemError("switch the portal of", name, reason: "\(error) (the topology's settings and the step's)")
        }
        if let definition = PortalCatalog.definition(kind),
           let (setting, message) = SessionCookie.problem(current.settings.merging(settings) { _, new in new }, kind: definition) {
            throw SystemError("switch the portal of", name, reason: "setting `\(setting)`: \(message) (the topology's settings and the step's)")
        }
        try running.portalService?.stop()
        let portal = PortalService(hotspot: running.hotspot, kind: kind, settings: current.settings.merging(settings) { _, new in new },
                                   namespace: running.namespace, labLogDirectory: logDirectory, launcher: launcher)
        servesHere(portal)
        try portal.start()
        hotspots[position].portalService = portal
    }

    /// Every portal session of the hotspot ends, as at the session length: the gate's authenticated set is flushed.
    public func expirePortalSessions(_ running: RunningHotspot) throws {
        try running.gate.expireSessions()
    }

    /// What stations receive from the hotspot's access points (all, or the one with `bssid`): `dbm` in
    /// `RadioSignal.range` (LabTopology), set as the AP interface's tx power (`dbm + 50` dBm) through nl80211; nil:
    /// automatic (the radio's default, 20 dBm: -30 dBm received). Returns what it did, per access point.
    @discardableResult
    public func setSignal(_ running: RunningHotspot, bssid: String?, dbm: Int?) throws -> String {
        guard !running.accessPoints.isEmpty else {
            throw SystemError("set the signal of", running.hotspot.name, reason: "the hotspot has no radio (veth mode)")
        }
        if let dbm, !RadioSignal.range.contains(dbm) {
            throw SystemError("set the signal of", running.hotspot.name,
                              reason: "\(dbm) dBm is outside what mac80211_hwsim can give (\(RadioSignal.range.lowerBound)...\(RadioSignal.range.upperBound) dBm)")
        }
        let targets = running.accessPoints.filter { ap in bssid.map { ap.accessPoint.bssid.text.lowercased() == $0.lowercased() } ?? true }
        guard !targets.isEmpty else {
            throw SystemError("set the signal of", running.hotspot.name,
                              reason: "no access point \(bssid ?? "") (it has \(running.accessPoints.map(\.accessPoint.bssid.text).joined(separator: ", ")))")
        }
        let nl80211 = try running.namespace.runInside { try Nl80211() }
        let wireless = try nl80211.interfaces()
        var done: [String] = []
        for ap in targets {
            guard let interface = wireless.first(where: { $0.name == ap.interface }) else {
                throw SystemError("set the signal of", "\(running.hotspot.name) \(ap.accessPoint.bssid)",
                                  reason: "its interface \(ap.interface) is not a wireless interface in \(running.namespace.name)")
            }
            try nl80211.setTxPower(interface: interface, mBm: dbm.map { Int32(($0 + 50) * 100) })
            done.append("\(ap.accessPoint.bssid) " + (dbm.map { "\($0) dBm (tx power \($0 + 50) dBm)" } ?? "normal (automatic tx power)"))
        }
        return "signal of \(running.hotspot.name): " + done.joined(separator: ", ")
    }
}
