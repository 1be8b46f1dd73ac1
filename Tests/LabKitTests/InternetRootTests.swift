import Foundation
import HotspotSystem
import Netlink
import Portals
import Testing
import TestSupport
@testable import LabKit
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabServices
@testable import LabTopology

/// Root test on the host kernel (veth for the radio): the lab's internet end to end from a station namespace.
/// Every name resolves to the internet; before login every client's probe rules say captive, after it open;
/// HTTPS to any name (Android's probe, a vendor backend of `internet: services:`) verifies against the lab CA.
@Suite("The lab's internet from a station (root, host kernel, veth)", .serialized, .requiresRoot)
struct InternetRootTests {
    static let yaml = """
        name: net
        internet:
          services:
            - host: api.vendor.example
              path: /session
              headers: {Content-Type: application/json}
              body: '{"session": "active"}'
        hotspots:
          - name: cafe
            ssid: Cafe
            bssid: "02:00:00:00:01:00"
            gateway:
              subnet: 198.51.100.0/24
              portal: {kind: click-through, port: 8080}
        """

    /// Each URL fetched as the `probe` step fetches it (`StationTraffic`) in the station's namespace (the lab's DNS,
    /// the lab CA).
    static func probe(_ client: LabClient, _ urls: [String]) throws -> [String: ProbeObservation] {
        let resolv = client.lab.logDirectory + "/probe-resolv.conf"
        try "nameserver \(client.gateway)\n".write(toFile: resolv, atomically: true, encoding: .utf8)
        let seen = try StationTraffic.probe(urls, in: try NetworkNamespace.open(client.sta), resolvConf: resolv,
                                            caFile: PortalTLS.caFile(labLogDirectory: client.lab.logDirectory), timeout: .seconds(60))
        return Dictionary(uniqueKeysWithValues: zip(urls, seen))
    }

    static func verdicts(_ client: LabClient, extra: [String] = []) throws -> (verdicts: [String: ProbeVerdict], seen: [String: ProbeObservation]) {
        var urls: [String] = []
        for rules in ClientProbeRules.all {
            urls.append(rules.http.url)
            if let https = rules.https { urls.append(https.url) }
        }
        let seen = try probe(client, urls + extra)
        var verdicts: [String: ProbeVerdict] = [:]
        for item in ProbeStep.verdicts(ClientProbeRules.clients, observations: seen) { verdicts[item.client] = item.verdict }
        return (verdicts, seen)
    }

    @Test("root: captive for all six before login, open after it; HTTPS per name; the vendor backend")
    func probesBeforeAndAfterLogin() throws {
        let topology = try TopologyParser.parse(Self.yaml, file: "net.yaml")
        try withLab(topology) { client in
            let lease = try client.dhcp()
            #expect(try client.resolve("nmcheck.gnome.org") == client.internetIP, "every name resolves to the internet")
            #expect(try client.resolve("anything.at.all.example") == client.internetIP)
            #expect(try client.resolve("portal.cafe.example") == client.gateway, "the portal's name is more specific")
            let vendor = "https://api.vendor.example/session"
            let before = try Self.verdicts(client, extra: [vendor])
            #expect(before.verdicts == Dictionary(uniqueKeysWithValues: ClientProbeRules.clients.map { ($0, .captive) }), "\(before.seen)")
            guard case .failed = before.seen[vendor] else { Issue.record("the backend answered before login: \(String(describing: before.seen[vendor]))"); return }
            // Login: the gate lets the station through (as the portal does).
            let station = try #require(client.running.stationNamespace)
            let interface = try #require(client.running.stationInterface)
            let link = try station.route.link(interface)
            let mac = try #require(link.mac).description
            let ip = try #require(lease["ip"])
            let nft = try ProcessRunner.run(ProcessConfiguration(try RunningTopology.findTool("nft"), GateRuleset.allowArguments(mac: mac, ip: ip, seconds: 600))
                .inNetworkNamespace(client.running.namespace.name), timeout: .seconds(45))
            try #require(nft.status.succeeded, "nft: \(nft.stderr) (mac `\(mac)`, ip \(ip))")
            let after = try Self.verdicts(client, extra: [vendor])
            #expect(after.verdicts == Dictionary(uniqueKeysWithValues: ClientProbeRules.clients.map { ($0, .open) }), "\(after.seen)")
            #expect(after.seen[vendor] == .answered(status: 200, body: "{\"session\": \"active\"}"))
            // curl with the CA bundle (what SSL_CERT_FILE / CURL_CA_BUNDLE name for the station's tools).
            let bundle = PortalTLS.caBundle(labLogDirectory: client.lab.logDirectory)
            let curl = try client.run("curl", ["-sS", "--max-time", "30", "--cacert", bundle, "--resolve", "api.vendor.example:443:\(client.internetIP)", vendor])
            #expect(curl.stdout == "{\"session\": \"active\"}", "\(curl.stderr)")
            let log = readSmallFile(client.lab.logDirectory + "/internet.log") ?? ""
            #expect(log.contains("https GET api.vendor.example /session -> service 0 200"), "\(log.suffix(600))")
        }
    }
}
