import Foundation
import HotspotSystem
import Testing
@testable import LabKit
@testable import LabServices
@testable import LabTopology

/// A daemon that never ran: the recording launcher's answer to `spawn`.
final class RecordedProcess: ServiceProcess, @unchecked Sendable {
    let pid: pid_t = 0
    private(set) var exitStatus: HotspotSystem.ExitStatus?
    /// Set by a test: the process ended, as a real child's waitpid would report on the next poll.
    var ended: HotspotSystem.ExitStatus?
    func poll() throws -> HotspotSystem.ExitStatus? {
        if exitStatus == nil { exitStatus = ended }
        return exitStatus
    }
    func terminate(grace: Duration) throws -> HotspotSystem.ExitStatus {
        exitStatus = .signaled(SIGTERM)
        return .signaled(SIGTERM)
    }
}

/// Records every command line instead of running it (no root). A spawned daemon is "ready" at once: its
/// `--ready-file` is created, dnsmasq's log gets its start line.
final class RecordingLauncher: ProcessLauncher, @unchecked Sendable {
    private(set) var lines: [String] = []
    private(set) var processes: [RecordedProcess] = []

    func tool(_ name: String) throws -> String { "/usr/sbin/" + name }
    func product(_ name: String, environmentKey: String) throws -> String { "/build/" + name }

    func spawn(_ configuration: ProcessConfiguration, inNamespace namespace: String?) throws -> any ServiceProcess {
        lines.append("spawn in \(namespace ?? "-"): " + configuration.commandLine)
        let args = configuration.arguments
        if let i = args.firstIndex(of: "--ready-file"), i + 1 < args.count {
            _ = FileManager.default.createFile(atPath: args[i + 1], contents: nil)
        }
        if let facility = args.first(where: { $0.hasPrefix("--log-facility=") }) {
            try "dnsmasq[1]: started, version 2.89\n".write(toFile: String(facility.dropFirst("--log-facility=".count)), atomically: true, encoding: .utf8)
        }
        let process = RecordedProcess()
        processes.append(process)
        return process
    }

    func run(_ configuration: ProcessConfiguration, inNamespace namespace: String?, timeout: Duration) throws -> CommandResult {
        lines.append("run in \(namespace ?? "-"): " + configuration.commandLine)
        return CommandResult(status: .exited(0))
    }
}

/// The hotspot services' command lines, files and restarts, through a recording launcher (no root).
@Suite struct HotspotServiceTests {
    let dir: String
    let launcher = RecordingLauncher()
    let internet = Internet(address: IPv4Address("198.18.0.1")!, uplinks: IPv4Subnet("203.0.113.0/24")!, names: ["captive.apple.com"])

    init() throws {
        dir = NSTemporaryDirectory() + "hotspot-services-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir + "/cafe", withIntermediateDirectories: true)
    }

    func cafe(_ security: Security = .open) -> Hotspot {
        Hotspot(
            name: "cafe", ssid: "Café", bssid: MACAddressText("02:00:00:00:01:00")!, channel: 6, hidden: false, security: security,
            gateway: Gateway(subnet: IPv4Subnet("198.51.100.0/24")!, address: IPv4Address("198.51.100.1")!,
                             dhcpStart: IPv4Address("198.51.100.10")!, dhcpEnd: IPv4Address("198.51.100.200")!,
                             dns: [IPv4Address("198.51.100.1")!], captiveAPI: .none,
                             portal: PortalSettings(kind: "form-login", port: 8080, settings: ["username": "u", "password": "p"]),
                             sessionSeconds: 600))
    }

    @Test func gateLoadsItsRulesetAndExpiresSessions() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gate = GateService(gateway: cafe().gateway, namespace: "hsl0001h0", lan: "hsl0001h0r", uplink: "hsl0001h0u",
                               directory: dir + "/cafe", launcher: launcher)
        try gate.start()
        #expect(try String(contentsOfFile: dir + "/cafe/gate.nft", encoding: .utf8)
                == GateRuleset.render(cafe().gateway, lan: "hsl0001h0r", uplink: "hsl0001h0u"))
        try gate.expireSessions()
        try gate.stop()
        #expect(launcher.lines == [
            "run in hsl0001h0: /usr/sbin/nft -f \(dir)/cafe/gate.nft",
            "run in hsl0001h0: /usr/sbin/nft flush set inet hotspot authenticated ; flush set inet hotspot authenticated6",
            "run in hsl0001h0: /usr/sbin/nft delete table inet hotspot",
        ])
    }

    /// servfail asked again after its SERVFAIL server died: the server is started again. A child that ended is known
    /// only once polled (its exit status stays nil until reaped), so the check polls it. Control: a live one stays.
    @Test func aSERVFAILServerThatDiedIsStartedAgain() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let dns = DHCPDNSService(hotspot: cafe(), internet: internet, namespace: "hsl0001h0", interface: "hsl0001h0r",
                                 directory: dir + "/cafe", launcher: launcher)
        try dns.start()
        try dns.setMode(.servfail)
        let server = try #require(launcher.processes.last)
        #expect(launcher.lines.last?.hasPrefix("spawn in hsl0001h0: /build/hotspot-dns-fault ") == true)
        let spawned = launcher.lines.count
        try dns.setMode(.servfail)
        #expect(launcher.lines.count == spawned, "a running SERVFAIL server is left alone")
        server.ended = .exited(1)
        try dns.setMode(.servfail)
        #expect(launcher.lines.count == spawned + 1)
        #expect(launcher.lines.last?.hasPrefix("spawn in hsl0001h0: /build/hotspot-dns-fault ") == true)
        #expect(dns.faultServer !== server)
    }

    @Test func dnsmasqCommandLineAndDNSFaults() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let dns = DHCPDNSService(hotspot: cafe(), internet: internet, namespace: "hsl0001h0", interface: "hsl0001h0r",
                                 directory: dir + "/cafe", launcher: launcher)
        try dns.start()
        let log = dir + "/cafe/dnsmasq.log"
        #expect(launcher.lines == [
            "spawn in hsl0001h0: /usr/sbin/dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --no-poll --user=root "
                + "--pid-file --bind-interfaces --interface=hsl0001h0r --except-interface=lo --listen-address=198.51.100.1 "
                + "--dhcp-range=198.51.100.10,198.51.100.200,255.255.255.0,3600 --dhcp-authoritative --dhcp-leasefile=\(dir)/cafe/dnsmasq.leases "
                + "--no-ping --dhcp-option=option:router,198.51.100.1 --dhcp-option=option:dns-server,198.51.100.1 --log-facility=\(log) "
                + "--log-dhcp --log-queries --address=/#/198.18.0.1 --address=/captive.apple.com/198.18.0.1 --address=/portal.cafe.example/198.51.100.1",
        ])
        #expect(dns.mode == .normal)

        // no-answer: the drop table; servfail: dnsmasq for DHCP only (its log kept as .1) and the SERVFAIL server.
        try dns.dropQueries()
        try dns.setMode(.servfail)
        #expect(dns.mode == .servfail && !dns.dropped && dns.faultServer != nil)
        #expect(FileManager.default.fileExists(atPath: log + ".1"))
        #expect(launcher.processes[0].exitStatus == HotspotSystem.ExitStatus.signaled(SIGTERM))
        #expect(launcher.lines[1] == "run in hsl0001h0: /usr/sbin/nft -f \(dir)/cafe/dns-fault.nft")
        #expect(try String(contentsOfFile: dir + "/cafe/dns-fault.nft", encoding: .utf8) == DHCPDNSService.dropRuleset)
        #expect(launcher.lines[2] == "run in hsl0001h0: /usr/sbin/nft delete table inet hsldnsfault")
        #expect(launcher.lines[3].hasSuffix(" --log-dhcp --log-queries --port=0"))
        #expect(launcher.lines[4] == "spawn in hsl0001h0: /build/hotspot-dns-fault --listen 198.51.100.1:53 --rcode servfail "
                + "--log \(dir)/cafe/dns-fault.log --ready-file \(dir)/cafe/dns-fault.ready")

        // Back to normal: the SERVFAIL server stops first, then dnsmasq restarts (log .2); the same mode again is a no-op.
        try dns.setMode(.normal)
        #expect(launcher.processes[2].exitStatus == HotspotSystem.ExitStatus.signaled(SIGTERM) && dns.faultServer == nil)
        #expect(launcher.lines.count == 6 && launcher.lines[5].hasSuffix("--address=/portal.cafe.example/198.51.100.1"))
        #expect(FileManager.default.fileExists(atPath: log + ".2"))
        try dns.setMode(.normal)
        #expect(launcher.lines.count == 6)

        // hijack, then private: each a DNS-only dnsmasq on a side port, up before one nft transaction points port 53 at
        // it; the hotspot's dnsmasq (DHCP) is never restarted, and the previous side server stops after the switch.
        try dns.setMode(.hijack)
        #expect(dns.mode == .hijack && dns.mainMode == .normal && dns.sidePort == 5300)
        #expect(launcher.lines.count == 8)
        #expect(launcher.lines[6] == "spawn in hsl0001h0: /usr/sbin/dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --no-poll "
                + "--user=root --pid-file --bind-interfaces --interface=hsl0001h0r --except-interface=lo --listen-address=198.51.100.1 "
                + "--log-facility=\(dir)/cafe/dnsmasq-dns-1-hijack.log --log-queries --address=/#/198.51.100.1 --port=5300")
        #expect(launcher.lines[7] == "run in hsl0001h0: /usr/sbin/nft -f \(dir)/cafe/dns-redirect.nft")
        #expect(try String(contentsOfFile: dir + "/cafe/dns-redirect.nft", encoding: .utf8)
                == DnsmasqConfig.redirectRuleset(cafe().gateway, interface: "hsl0001h0r", port: 5300))
        let hijacker = launcher.processes.last!
        try dns.setMode(.hijack)
        #expect(launcher.lines.count == 8)
        try dns.setMode(.privateAddresses)
        #expect(dns.mode == .privateAddresses && dns.sidePort == 5301 && launcher.lines.count == 10)
        #expect(launcher.lines[8].hasSuffix("--log-queries --address=/captive.apple.com/10.0.0.1 --port=5301"))
        #expect(launcher.lines[9] == "run in hsl0001h0: /usr/sbin/nft -f \(dir)/cafe/dns-redirect.nft")
        #expect(hijacker.exitStatus == HotspotSystem.ExitStatus.signaled(SIGTERM))
        // Back to normal: the table goes in one step, then the side server stops; dnsmasq was not restarted.
        let privateServer = launcher.processes.last!
        try dns.setMode(.normal)
        #expect(launcher.lines.count == 11 && launcher.lines[10] == "run in hsl0001h0: /usr/sbin/nft delete table inet hsldnsmode")
        #expect(privateServer.exitStatus == HotspotSystem.ExitStatus.signaled(SIGTERM) && dns.sideServer == nil && dns.mode == .normal)
        #expect(dns.logFiles.keys.sorted() == ["dnsmasq", "dnsmasq-dns-1", "dnsmasq-dns-2"])

        // Its log is collected.
        try dns.writeLogs(to: dir + "/collected")
        #expect(FileManager.default.fileExists(atPath: dir + "/collected/dnsmasq.log"))
    }

    @Test func hostapdConfigAndCommandLine() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var hotspot = cafe(.wpa2Enterprise(method: .peap, users: [EAPUser(identity: "alice", password: "wonderland")]))
        hotspot.extraAccessPoints = [AccessPoint(bssid: MACAddressText("02:00:00:00:01:01")!, channel: 11)]
        let security = try AccessPointService.prepareSecurity(hotspot, directory: dir + "/cafe", launcher: launcher)
        #expect(security == AccessPointService.SecurityFiles(
            eapUserFile: dir + "/cafe/eap_users",
            certificates: HostapdConfig.CertificateFiles(caCert: dir + "/cafe/server.pem", serverCert: dir + "/cafe/server.pem",
                                                         privateKey: dir + "/cafe/server.key")))
        #expect(try String(contentsOfFile: dir + "/cafe/eap_users", encoding: .utf8) == HostapdConfig.eapUsers(hotspot.security))
        let second = AccessPointService(hotspot: hotspot, number: 1, interface: "wlan1", bridge: "hsl0001h0b", namespace: "hsl0001h0",
                                        directory: dir + "/cafe", security: security, launcher: launcher)
        try second.launch()
        #expect(launcher.lines == [
            "run in -: /usr/sbin/openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout \(dir)/cafe/server.key "
                + "-out \(dir)/cafe/server.pem -days 2 -subj /CN=hotspot-lab.invalid",
            "spawn in hsl0001h0: /usr/sbin/hostapd -t \(dir)/cafe/hostapd-1.conf",
        ])
        #expect(second.serviceName == "hostapd 02:00:00:00:01:01" && second.logFiles == ["hostapd-1": dir + "/cafe/hostapd-1.log"])
        #expect(second.controlPath == dir + "/cafe/hostapd-ctrl/wlan1")
        #expect(try String(contentsOfFile: dir + "/cafe/hostapd-1.conf", encoding: .utf8) == """
            # generated by hotspot-lab for hotspot cafe
            interface=wlan1
            driver=nl80211
            ctrl_interface=\(dir)/cafe/hostapd-ctrl
            ssid2=436166c3a9
            utf8_ssid=1
            bssid=02:00:00:00:01:01
            hw_mode=g
            channel=11
            ignore_broadcast_ssid=0
            auth_algs=1
            wmm_enabled=1
            logger_stdout=-1
            logger_stdout_level=1
            bridge=hsl0001h0b
            wpa=2
            wpa_key_mgmt=WPA-EAP
            rsn_pairwise=CCMP
            ieee8021x=1
            eap_server=1
            eap_user_file=\(dir)/cafe/eap_users
            ca_cert=\(dir)/cafe/server.pem
            server_cert=\(dir)/cafe/server.pem
            private_key=\(dir)/cafe/server.key

            """)
    }

    @Test func netemCommandLines() {
        let netem = UplinkService.netem(latencyMS: 100, jitterMS: 10, lossPercent: 5, rateKbit: 512)
        #expect(UplinkService.netemArguments(verb: "add", device: "hsl0001h0u", netem: netem)
                == ["qdisc", "add", "dev", "hsl0001h0u", "root", "netem", "delay", "100ms", "10ms", "loss", "5%", "rate", "512kbit"])
        #expect(UplinkService.netem(latencyMS: 0, jitterMS: 0, lossPercent: 0, rateKbit: 0).isEmpty)
        #expect(RunningTopology.netem(latencyMS: 20, jitterMS: 0, lossPercent: 0.5, rateKbit: 0) == ["delay", "20ms", "loss", "0.5%"])
    }
}
