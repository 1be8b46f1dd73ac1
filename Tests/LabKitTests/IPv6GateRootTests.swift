import Foundation
import HotspotSystem
import Netlink
import Testing
import TestSupport
@testable import LabKit
@testable import LabTopology

/// A hotspot with IPv6 (`ip: dual`, `ip: v6-only`) on the host kernel, veth for the radio: the gate of both families
/// in one `inet` table, the portal on the gateway's IPv6 address, the internet on both families, Router
/// Advertisements from hotspot-ra and DHCPv6 from dnsmasq. The station namespace runs real clients: the kernel's
/// SLAAC, busybox udhcpc, dhcpcd (DHCPv6 and RA), curl and ping.
extension LabClient {
    var gateway6: String { "\(running.hotspot.gateway.ipv6!.address)" }
    var internet6: String { "\(Internet.address6)" }

    /// Waits until the station has a global IPv6 address (the kernel's SLAAC from the RAs) and a default route.
    func waitForSLAAC(timeout: Duration = .seconds(120)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let addresses = try run("ip", ["-6", "-o", "addr", "show", "dev", running.stationInterface!, "scope", "global"]).stdout
            let route = try run("ip", ["-6", "route", "show", "default"]).stdout
            if let address = addresses.split(separator: " ").first(where: { $0.contains("/64") }), !route.isEmpty,
               !addresses.contains("tentative") {
                return String(address.split(separator: "/")[0])
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw SystemError("wait for", "a SLAAC address on \(running.stationInterface!)", reason: "none after \(timeout)")
    }

    /// As `LabClient.ping`: a long wait where a reply is expected, a short one where the gate must stop it.
    func ping6(_ ip: String, wait: Int = 10) throws -> Bool {
        try run("busybox", ["ping", "-6", "-c", "1", "-W", "\(wait)", ip]).status.succeeded
    }

    /// curl over IPv6 to a literal.
    func get6(_ url: String, form: [String]? = nil, maxTime: Int = 30) throws -> Reply {
        var args = ["-6", "-sS", "-o", "-", "-w", "\n%{http_code}", "--max-time", "\(maxTime)", "--noproxy", "*"]
        for field in form ?? [] { args += ["--data-urlencode", field] }
        args.append(url)
        return Self.reply(try run("curl", args))
    }

    /// The gate of both families is closed: IPv4 and IPv6 HTTP redirected to the portal, ping of both rejected.
    func expectCaptiveOnBothFamilies(_ comment: String) throws {
        let portalURL = running.hotspot.gateway.portalURL!
        let web6 = try get6("http://[\(internet6)]/hotspot-detect.html")
        #expect(web6.status == 302 && web6.body != InternetSuccess, "\(comment): IPv6 probe answered \(web6.status) \(web6.body)")
        let location = try run("curl", ["-6", "-sS", "-o", "/dev/null", "-w", "%{redirect_url}", "--max-time", "30",
                                        "http://[\(internet6)]/hotspot-detect.html"]).stdout
        #expect(location == portalURL, "\(comment): IPv6 redirect to \(location), expected \(portalURL)")
        #expect(!(try ping6(internet6, wait: 2)), "\(comment): ping \(internet6) should be rejected")
        if running.hotspot.gateway.ip.hasIPv4 {
            #expect(try appleProbe.status == 302, "\(comment): IPv4 probe")
            #expect(!(try ping(internetIP, wait: 2)), "\(comment): ping \(internetIP) should be rejected")
        }
    }

    func expectOnlineOnBothFamilies(_ comment: String) throws {
        let web6 = try get6("http://[\(internet6)]/hotspot-detect.html")
        #expect(web6.status == 200 && web6.body == InternetSuccess, "\(comment): IPv6 probe answered \(web6.status) \(web6.body)")
        #expect(try ping6(internet6), "\(comment): ping \(internet6) should pass")
        if running.hotspot.gateway.ip.hasIPv4 {
            #expect(try appleProbe.status == 200, "\(comment): IPv4 probe")
            #expect(try ping(internetIP), "\(comment): ping \(internetIP) should pass")
        }
    }
}

extension LabClient {
    /// Runs dhcpcd (IPv6 only: RA and DHCPv6) in the station namespace, with RFC 8910's options defined (dhcpcd 9.4
    /// has no definition of its own: `definend 37`, `define6 103`, requested as `dhcp6_captive_portal_uri`), until
    /// it reported both a Router Advertisement and a DHCPv6 lease; returns the environment of each (ROUTERADVERT,
    /// BOUND6), as its hook script saw them. `persistent`: the addresses and routes stay when it is stopped.
    func dhcpcd6(timeout: Duration = .seconds(120)) throws -> (ra: [String: String], dhcp6: [String: String]) {
        let dir = lab.logDirectory + "/dhcpcd-\(running.index)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try """
            noipv4
            ipv6rs
            ia_na 1
            nohook resolv.conf
            persistent
            define6 103 string captive_portal_uri
            definend 37 string captive_portal_uri
            option dhcp6_name_servers, dhcp6_captive_portal_uri

            """.write(toFile: dir + "/dhcpcd.conf", atomically: true, encoding: .utf8)
        try """
            #!/bin/sh
            env | sort > \(dir)/env.$reason.tmp && mv \(dir)/env.$reason.tmp \(dir)/env.$reason
            exit 0

            """.write(toFile: dir + "/hook.sh", atomically: true, encoding: .utf8)
        chmod(dir + "/hook.sh", 0o755)
        let interface = running.stationInterface!
        // Its own process group: dhcpcd's privilege-separation proxies outlive a SIGTERM to the main process.
        let child = try ChildProcess.spawn(try ProcessConfiguration(
            "dhcpcd", ["-f", dir + "/dhcpcd.conf", "-c", dir + "/hook.sh", "-B", "-6", "-t", "30", interface],
            stdout: .file(dir + "/dhcpcd.log"), stderr: .file(dir + "/dhcpcd.log"), newProcessGroup: true).inNetworkNamespace(sta))
        defer {
            _ = try? child.terminate()
            kill(-child.pid, SIGKILL)  // the proxies left in its group
            unlink("/var/lib/dhcpcd/\(interface).lease6")
            // Nothing of dhcpcd's group may be left running. SIGKILL is delivered asynchronously: a member may still
            // show as running for a moment after kill(2) returns (longer on a loaded machine), so wait for the group
            // to be gone (bounded), never for a fixed time.
            func running() -> [Int32] {
                (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap(Int32.init).filter { pid in
                    // Running ones (a killed proxy whose parent is gone waits to be reaped by pid 1: state Z).
                    getpgid(pid) == child.pid && !(readSmallFile("/proc/\(pid)/stat")?.contains(") Z ") ?? true)
                } ?? []
            }
            var leftovers = running()
            let gone = ContinuousClock.now + .seconds(10)
            while !leftovers.isEmpty, ContinuousClock.now < gone {
                usleep(20_000)
                leftovers = running()
            }
            #expect(leftovers.isEmpty, "dhcpcd processes left running 10 s after SIGKILL to their group: \(leftovers)")
        }
        let deadline = ContinuousClock.now + timeout
        func environment(_ reason: String) -> [String: String]? {
            readSmallFile(dir + "/env." + reason).map { text in
                var env: [String: String] = [:]
                for line in text.split(separator: "\n") {
                    let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                    if parts.count == 2 { env[parts[0]] = parts[1] }
                }
                return env
            }
        }
        while ContinuousClock.now < deadline {
            if let ra = environment("ROUTERADVERT"), let bound = environment("BOUND6") { return (ra, bound) }
            if try child.poll() != nil { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw SystemError("run dhcpcd", "on \(interface)", reason: "no Router Advertisement and DHCPv6 lease reported: "
                          + (readSmallFile(dir + "/dhcpcd.log") ?? "").split(separator: "\n").suffix(8).joined(separator: " | "))
    }
}

func dualTopology(ip: String = "dual", kind: String = "click-through", api: Bool = false, extra: String = "") throws -> Topology {
    let yaml = """
        name: t
        hotspots:
          - name: cafe
            ssid: Cafe
            bssid: "02:00:00:00:01:00"
            gateway:
              subnet: 198.51.100.0/24
              ip: \(ip)
              session-seconds: 600
              captive-api: \(api ? "auto" : "none")
        \(extra)
              portal:
                kind: \(kind)
                port: 8080

        """
    return try TopologyParser.parse(yaml, file: "test-\(ip).yaml")
}

@Suite("IPv6 hotspots: the gate of both families (root, host kernel, veth for the radio)", .serialized, .requiresRoot)
struct IPv6GateRootTests {
    @Test("root: dual stack: captive on IPv4 and IPv6 before login; a sign-in over IPv6 releases both families; a logoff over IPv4 closes both; a sign-in over IPv4 opens IPv6")
    func dualStackLogin() throws {
        try withLab(try dualTopology()) { client in
            #expect(client.running.hotspot.gateway.ipv6?.prefix.description == "2001:db8:c633:6400::/64")
            let lease = try client.dhcp()
            #expect(lease["ip"]?.hasPrefix("198.51.100.") == true)
            let address6 = try client.waitForSLAAC()
            #expect(address6.hasPrefix("2001:db8:c633:6400:"), "SLAAC address \(address6)")
            // DNS over IPv6: the gateway's dnsmasq answers on its IPv6 address, with an AAAA on a dual-stack LAN.
            let aaaa = try client.run("busybox", ["nslookup", "-type=AAAA", "www.example.com", client.gateway6]).stdout
            #expect(aaaa.contains(client.internet6), "AAAA over IPv6: \(aaaa)")

            try client.expectCaptiveOnBothFamilies("before login")
            // The portal answers on the gateway's IPv6 address; a sign-in there releases both families.
            let portal6 = "http://[\(client.gateway6)]:8080"
            let ok = try client.get6(portal6 + "/accept", form: ["accept=yes"])
            #expect(ok.status == 200, "IPv6 sign-in answered \(ok.status): \(ok.body)")
            try client.expectOnlineOnBothFamilies("after a sign-in over IPv6")

            let off = try client.get("http://\(client.gateway):8080/logoff")
            #expect(off.status == 200, "logoff over IPv4: \(off.status)")
            try client.expectCaptiveOnBothFamilies("after a logoff over IPv4")

            let again = try client.get("http://\(client.gateway):8080/accept", form: ["accept=yes"])
            #expect(again.status == 200)
            try client.expectOnlineOnBothFamilies("after a sign-in over IPv4")
            // The session's end (the lab's expire-sessions) closes both families.
            try client.lab.expirePortalSessions(client.running)
            try client.expectCaptiveOnBothFamilies("after the sessions expired")
        }
    }

    @Test("root: an IPv4-only hotspot still rejects IPv6 from clients (no RA, no IPv6 past the gate)")
    func ipv4OnlyRejectsIPv6() throws {
        try withLab(try dualTopology(ip: "v4")) { client in
            #expect(client.running.hotspot.gateway.ipv6 == nil)
            #expect(client.running.routerAdvertisements == nil)
            _ = try client.dhcp()
            let global = try client.run("ip", ["-6", "-o", "addr", "show", "scope", "global"]).stdout
            #expect(global.isEmpty, "an IPv4-only LAN gave an IPv6 address: \(global)")
            #expect(try client.get("http://\(client.gateway):8080/accept", form: ["accept=yes"]).status == 200)
            #expect(try client.appleProbe.status == 200)
            #expect(!(try client.ping6(client.internet6, wait: 2)))
        }
    }

    @Test("root: RFC 8910 over IPv6 alone: on an IPv6-only hotspot (no DHCPv4) dhcpcd learns the captive-portal API URL from RA option 37 and from DHCPv6 option 103; the API answers over IPv6 and a sign-in there opens IPv6")
    func rfc8910OverIPv6Alone() throws {
        try withLab(try dualTopology(ip: "v6-only", kind: "captive-api", api: true)) { client in
            let expected = "http://[\(client.gateway6)]:8080/captive-api"
            #expect(client.running.hotspot.gateway.captiveAPI == .uri(expected))
            // No DHCPv4 on an IPv6-only LAN: a DHCPv4 client gets no lease (so option 114 cannot be where the URL came from).
            let v4 = try client.run("busybox", ["udhcpc", "-i", client.running.stationInterface!, "-n", "-q", "-t", "2", "-T", "1",
                                                "-s", "/bin/true"])
            #expect(!v4.status.succeeded, "an IPv6-only LAN answered DHCPv4: \(v4.stdout)")
            let (ra, dhcp6) = try client.dhcpcd6()
            #expect(ra["nd1_captive_portal_uri"] == expected, "RA option 37: \(ra["nd1_captive_portal_uri"] ?? "absent")")
            #expect(ra["nd1_rdnss1_servers"] == client.gateway6, "RA RDNSS: \(ra["nd1_rdnss1_servers"] ?? "absent")")
            #expect(dhcp6["new_dhcp6_captive_portal_uri"] == expected, "DHCPv6 option 103: \(dhcp6["new_dhcp6_captive_portal_uri"] ?? "absent")")
            #expect(dhcp6["new_dhcp6_name_servers"] == client.gateway6)
            #expect(dhcp6["new_dhcp6_ia_na1_ia_addr1"]?.hasPrefix("2001:db8:c633:6400::1") == true, "DHCPv6 address: \(dhcp6)")
            // The kernel's SLAAC gives the station its address and default route beside dhcpcd's.
            _ = try client.waitForSLAAC()
            let api = try client.get6(expected)
            #expect(api.status == 200 && api.body.contains(#""captive":true"#), "API before sign-in: \(api.status) \(api.body)")
            #expect(api.body.contains("\"user-portal-url\":\"http:\\/\\/[\(client.gateway6)]:8080\\/\"") || api.body.contains("[\(client.gateway6)]:8080/"),
                    "user-portal-url over IPv6: \(api.body)")
            try client.expectCaptiveOnBothFamilies("before sign-in")
            #expect(try client.get6("http://[\(client.gateway6)]:8080/accept", form: ["accept=yes"]).status == 200)
            let after = try client.get6(expected)
            #expect(after.body.contains(#""captive":false"#), "API after sign-in: \(after.body)")
            try client.expectOnlineOnBothFamilies("after a sign-in over IPv6")
        }
    }

    @Test("root: IPv6 only: DNS64 synthesizes IPv4-only names into the NAT64 prefix; before sign-in NAT64 is closed (HTTP goes to the portal); after it the station reaches the IPv4 internet through NAT64")
    func nat64AndDNS64() throws {
        try withLab(try dualTopology(ip: "v6-only")) { client in
            #expect(client.running.nat64 != nil)
            _ = try client.waitForSLAAC()
            func aaaa(_ name: String) throws -> String {
                try client.run("busybox", ["nslookup", "-type=AAAA", name, client.gateway6]).stdout
            }
            // The lab's names are IPv4-only on an IPv6-only LAN; DNS64 gives them an address in 2001:db8:ff64::/96.
            let synthesized = "2001:db8:ff64::c612:1"
            #expect(try aaaa("captive.apple.com").contains(synthesized))
            #expect(try aaaa("ipv4only.arpa").contains("2001:db8:ff64::c000:aa"), "RFC 7050 prefix discovery")
            let probe = "http://[\(synthesized)]/hotspot-detect.html"
            let before = try client.get6(probe)
            #expect(before.status == 302 && before.body != InternetSuccess, "before sign-in through NAT64: \(before.status)")
            #expect(!(try client.ping6(synthesized, wait: 2)), "NAT64 must be closed before sign-in")
            try client.expectCaptiveOnBothFamilies("before sign-in")
            #expect(try client.get6("http://[\(client.gateway6)]:8080/accept", form: ["accept=yes"]).status == 200)
            let after = try client.get6(probe)
            #expect(after.status == 200 && after.body == InternetSuccess, "through NAT64 after sign-in: \(after.status) \(after.body)")
            #expect(try client.ping6(synthesized))
            try client.expectOnlineOnBothFamilies("after sign-in")
            try client.lab.expirePortalSessions(client.running)
            #expect(!(try client.ping6(synthesized, wait: 2)), "NAT64 closed again after the session")
        }
    }
}
