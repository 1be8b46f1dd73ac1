import Foundation
import HotspotSystem
import Netlink
import Testing
import TestSupport
@testable import LabKit
@testable import LabServices
@testable import LabTopology
@testable import LabVM

/// The Wi-Fi half over mac80211_hwsim: hostapd in the hotspot namespace (waited on over its control
/// socket), a plain wpa_supplicant + busybox udhcpc in a station namespace with its own radio.
/// Runs inside the hotspot-lab VM (VMSuiteTests) or on a kernel with hwsim; skipped elsewhere.
@Suite("InVM: hotspots over hwsim: open, WPA2-PSK, WPA2-Enterprise (root)", .tags(.inVM), .serialized,
       .enabled(if: InVM.hwsimAvailable, "needs mac80211_hwsim: runs inside the hotspot-lab VM (see VMSuiteTests)"))
struct InVMHotspotWiFiTests {
    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func loadHwsim() throws {
        if !FileManager.default.fileExists(atPath: "/sys/module/mac80211_hwsim") {
            _ = try ProcessRunner.check(ProcessConfiguration("modprobe", ["mac80211_hwsim", "radios=0"]), timeout: .seconds(30))
        }
    }

    struct Station {
        let lab: RunningTopology
        let namespace: NetworkNamespace
        let interface: String
        let dir: String
    }

    /// A station namespace with its own radio, created by the same lab (same netgroup as the hotspots).
    static func station(_ lab: RunningTopology) throws -> Station {
        let ns = try lab.lab.createNamespace("sta")
        let (_, interfaces) = try lab.lab.createRadio("str", in: ns)
        let dir = lab.logDirectory + "/station"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return Station(lab: lab, namespace: ns, interface: try #require(interfaces.first), dir: dir)
    }

    /// Associates with wpa_supplicant and waits for CTRL-EVENT-CONNECTED on its control socket and
    /// AP-STA-CONNECTED on hostapd's. Returns the seconds association took.
    static func associate(_ station: Station, to running: RunningHotspot, network: [String]) throws -> Double {
        let hotspot = running.hotspot
        let conf = station.dir + "/wpa_supplicant-\(hotspot.name).conf"
        let ctrl = station.dir + "/wpa-ctrl"
        var block = ["ssid=\"\(hotspot.ssid)\"", "scan_freq=\(hotspot.frequency)", "scan_ssid=\(hotspot.hidden ? 1 : 0)"]
        block += network
        try ("ctrl_interface=\(ctrl)\nap_scan=1\nnetwork={\n" + block.map { "    " + $0 }.joined(separator: "\n") + "\n}\n")
            .write(toFile: conf, atomically: true, encoding: .utf8)
        let log = station.dir + "/wpa_supplicant-\(hotspot.name).log"
        let start = ContinuousClock.now
        _ = try station.lab.lab.spawn(ProcessConfiguration("wpa_supplicant", ["-i", station.interface, "-c", conf, "-D", "nl80211", "-t"],
                                                           stdout: .file(log), stderr: .file(log)), in: station.namespace)
        let control = try WPACtrlSocket.connect(serverPath: ctrl + "/" + station.interface, timeout: .seconds(10))
        defer { control.close() }
        try control.attach()
        var connected = WPACtrlSocket.keyValues(try control.request("STATUS"))["wpa_state"] == "COMPLETED"
        if !connected {
            let event = try control.waitForEvent(["CTRL-EVENT-CONNECTED", "CTRL-EVENT-EAP-FAILURE", "CTRL-EVENT-SSID-TEMP-DISABLED"], timeout: .seconds(30))
            #expect(event.hasPrefix("CTRL-EVENT-CONNECTED"), "wpa_supplicant: \(event)")
            connected = event.hasPrefix("CTRL-EVENT-CONNECTED")
        }
        let elapsed = ContinuousClock.now - start
        let ap = try #require(running.hostapd)
        let seen = try ap.waitForEvent(["AP-STA-CONNECTED"], timeout: .seconds(10))
        #expect(seen.contains("AP-STA-CONNECTED"))
        let status = WPACtrlSocket.keyValues(try control.request("STATUS"))
        #expect(status["bssid"] == hotspot.bssid.text)
        #expect(status["ssid"] == hotspot.ssid)
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func lease(_ station: Station) throws -> [String: String] {
        let envFile = station.dir + "/lease.env"
        let script = station.dir + "/udhcpc.sh"
        try """
            #!/bin/sh
            case "$1" in
              bound|renew)
                ip addr flush dev "$interface"
                ip addr add "$ip/$subnet" dev "$interface"
                ip route replace default via "$router" dev "$interface"
                env | grep -E "^(ip|subnet|router|dns|opt114)=" > \(envFile)
                ;;
            esac
            exit 0

            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let result = try ProcessRunner.run(ProcessConfiguration("busybox", ["udhcpc", "-i", station.interface, "-f", "-q", "-n",
                                                                            "-t", "5", "-T", "1", "-O", "114", "-s", script])
            .inNetworkNamespace(station.namespace.name), timeout: .seconds(30))
        #expect(result.status.succeeded, "udhcpc: \(result.stderr)")
        var env: [String: String] = [:]
        for line in (readSmallFile(envFile) ?? "").split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { env[parts[0]] = parts[1] }
        }
        return env
    }

    static func topology(_ security: String, api: Bool = false) throws -> Topology {
        try TopologyParser.parse("""
            name: wifi
            hotspots:
              - name: cafe
                ssid: Cafe Lumiere
                bssid: "02:00:00:00:01:00"
                channel: 6
            \(security)
                gateway:
                  subnet: 198.51.100.0/24
                  dhcp-range: [198.51.100.10, 198.51.100.50]
                  captive-api: \(api ? "auto" : "none")
                  portal:
                    kind: \(api ? "captive-api" : "form-login")
            \(api ? "" : "        username: guest\n        password: croissant")
            """, file: "wifi-test.yaml")
    }

    func run(_ topology: Topology, network: (RunningTopology) -> [String], body: (Station, RunningHotspot, [String: String]) throws -> Void = { _, _, _ in }) throws {
        try #require(TestHost.isRoot, "needs root")
        try Self.loadHwsim()
        let upStart = ContinuousClock.now
        let lab = try RunningTopology.up(topology, options: RunningTopologyOptions(linkMode: .radio))
        let upSeconds = Self.seconds(since: upStart)
        var line = String(format: "bench topology: up %.2f s (%@)", upSeconds,
                          lab.timings.map { String(format: "%@ %.2f", $0.0, $0.1) }.joined(separator: ", "))
        defer {
            let downStart = ContinuousClock.now
            let errors = lab.down()
            print(line + String(format: "; down %.2f s", Self.seconds(since: downStart)))
            #expect(errors.isEmpty, "teardown: \(errors)")
            #expect(!NetworkNamespace.list().contains { $0.hasPrefix(lab.lab.prefix) })
        }
        let station = try Self.station(lab)
        let running = lab.hotspots[0]
        let seconds = try Self.associate(station, to: running, network: network(lab))
        let leaseStart = ContinuousClock.now
        let lease = try Self.lease(station)
        line += String(format: "; association %.2f s, lease %.2f s, association + lease %.2f s", seconds,
                       Self.seconds(since: leaseStart), seconds + Self.seconds(since: leaseStart))
        #expect(lease["ip"]?.hasPrefix("198.51.100.") == true && lease["router"] == "198.51.100.1")
        try body(station, running, lease)
    }

    @Test("root: open hotspot: associate, lease with option 114, Apple's probe redirected to the portal")
    func openHotspot() throws {
        try run(try Self.topology("    security: open", api: true), network: { _ in ["key_mgmt=NONE"] }) { station, running, lease in
            let uri = "http://198.51.100.1:8080/captive-api"
            #expect(lease["opt114"] == Array(uri.utf8).map { String(format: "%02x", $0) }.joined())
            let result = try ProcessRunner.run(ProcessConfiguration("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}",
                                                                             "--max-time", "30", "http://198.18.0.1/hotspot-detect.html"])
                .inNetworkNamespace(station.namespace.name))
            #expect(result.stdout == "302 http://198.51.100.1:8080/", "probe over the air: \(result.stdout) \(result.stderr)")
            // In the VM the lab took the boot's CA the host made in the results share (VMSuiteTests, as `hotspot-lab`
            // does: PortalTLS.prepareBootCA), not one of its own made with openssl under TCG.
            if InVM.isActive {
                let shared = try #require(PortalTLS.sharedBootCA(), "no boot CA in the results share")
                let own = try String(contentsOfFile: station.lab.logDirectory + "/tls/ca.pem", encoding: .utf8)
                #expect(own == (try String(contentsOfFile: shared + "/ca.pem", encoding: .utf8)), "the lab's CA is not the shared one")
            }
        }
    }

    @Test("root: WPA2-PSK hotspot: associate with the passphrase and lease")
    func pskHotspot() throws {
        try run(try Self.topology("    security:\n      kind: wpa2-psk\n      psk: correct horse battery"),
                network: { _ in ["key_mgmt=WPA-PSK", "psk=\"correct horse battery\"", "proto=RSN", "pairwise=CCMP"] }) { _, _, lease in
            #expect(lease["opt114"] == nil)
        }
    }

    @Test("root: WPA2-Enterprise hotspot (hostapd internal EAP server, PEAP/MSCHAPv2): associate and lease")
    func enterpriseHotspot() throws {
        let topology = try Self.topology("    security:\n      kind: wpa2-enterprise\n      eap-method: peap\n      users:\n        - identity: alice\n          password: wonderland")
        // The station trusts the lab's throwaway server certificate (written by RunningTopology for PEAP).
        try run(topology, network: { lab in
            ["key_mgmt=WPA-EAP", "eap=PEAP", "identity=\"alice\"", "password=\"wonderland\"",
             "phase2=\"auth=MSCHAPV2\"", "ca_cert=\"\(lab.logDirectory)/cafe/server.pem\""]
        })
    }
}
