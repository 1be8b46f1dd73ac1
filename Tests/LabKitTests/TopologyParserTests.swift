import Foundation
import Testing
@testable import LabKit
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabServices
@testable import LabTopology

/// The shipped topologies parse, and each bad input fails with file:line:column, the field and what was expected.
@Suite struct TopologyParserTests {
    static let root: String = {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while dir.path != "/" && !FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) {
            dir.deleteLastPathComponent()
        }
        return dir.path
    }()

    @Test(arguments: ["captive", "open", "ui-required", "multi-hotspot", "enterprise", "roaming"])
    func shippedTopologiesParse(_ name: String) throws {
        let topology = try TopologyParser.load(path: "\(Self.root)/topologies/\(name).yaml")
        #expect(!topology.hotspots.isEmpty)
        for hotspot in topology.hotspots {
            #expect(IPv4Subnet.isLabSubnet(hotspot.gateway.subnet))
            #expect(hotspot.gateway.subnet.contains(hotspot.gateway.dhcpStart))
        }
    }

    @Test func captiveIsTheCafeWithFormLogin() throws {
        let t = try TopologyParser.load(path: "\(Self.root)/topologies/captive.yaml")
        #expect(t.name == "captive")
        #expect(t.hotspots.count == 1)
        let cafe = t.hotspots[0]
        #expect(cafe.ssid == "Cafe Lumiere")
        #expect(cafe.bssid.text == "02:00:00:00:01:00")
        #expect(cafe.security == .open)
        #expect(cafe.gateway.portal?.kind == "form-login")
        #expect(cafe.gateway.portal?.settings["password"] == "croissant")
        #expect(cafe.gateway.address.description == "198.51.100.1")
        #expect(cafe.gateway.captiveAPI == .none)
        #expect(t.internet.address.description == "198.18.0.1")
        #expect(t.stations.first?.helpers == [#"hotspot-helper-portal --account guest:croissant --network "Cafe Lumiere""#])
    }

    @Test func multiHotspotHasSecureAndOpenAndTwoHelpers() throws {
        let t = try TopologyParser.load(path: "\(Self.root)/topologies/multi-hotspot.yaml")
        #expect(t.hotspots.count == 4)
        #expect(t.hotspots.contains { $0.security.isSecure })
        #expect(t.hotspots.contains { !$0.security.isSecure })
        #expect(t.hotspots.contains { $0.hidden })
        #expect(t.stations[0].helpers.count == 2)
        let airport = try #require(t.hotspots.first { $0.name == "airport" })
        #expect(airport.gateway.captiveAPI == .uri("http://198.51.100.65:8080/captive-api"))
        #expect(t.stations[0].knownNetworks.first { $0.ssid == "Lounge WISPr" }?.autoJoin == false)
    }

    @Test func enterpriseUsesInternalEAPServer() throws {
        let t = try TopologyParser.load(path: "\(Self.root)/topologies/enterprise.yaml")
        guard case .wpa2Enterprise(let method, let users) = t.hotspots[0].security else {
            Issue.record("expected wpa2-enterprise, got \(t.hotspots[0].security)")
            return
        }
        #expect(method == .peap)
        #expect(users.map(\.identity) == ["alice", "bob"])
    }

    static let base = """
        name: t
        hotspots:
          - name: cafe
            ssid: Cafe
            bssid: "02:00:00:00:01:00"
            security: open
            gateway:
              subnet: 198.51.100.0/24
              portal:
                kind: form-login
                username: u
                password: p
        """

    func failure(_ yaml: String) -> TopologyError? {
        do {
            _ = try TopologyParser.parse(yaml, file: "bad.yaml")
            return nil
        } catch let error as TopologyError {
            return error
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }

    @Test func baseIsValid() throws {
        let t = try TopologyParser.parse(Self.base, file: "base.yaml")
        #expect(t.hotspots[0].gateway.dhcpStart.description == "198.51.100.10")
        #expect(t.hotspots[0].gateway.dhcpEnd.description == "198.51.100.254")
    }

    @Test func unknownKey() throws {
        let yaml = Self.base.replacingOccurrences(of: "    security: open", with: "    security: open\n    colour: blue")
        let error = try #require(failure(yaml))
        #expect(error.line == 7 && error.column == 5)
        #expect(error.field == "hotspots[0].colour")
        #expect(error.description.hasPrefix("bad.yaml:7:5: hotspots[0].colour: unknown key `colour`; expected one of: name, ssid"))
    }

    @Test func dnsFaultFromTheStart() throws {
        let servfail = try TopologyParser.parse(Self.base + "\n    faults: {dns: servfail}", file: "t.yaml")
        #expect(servfail.hotspots[0].faults.dns == "servfail")
        let down = try TopologyParser.parse(Self.base + "\n    faults: {dns-down: true}", file: "t.yaml")
        #expect(down.hotspots[0].faults.dns == "refused" && down.hotspots[0].faults.dnsDown)
        let unknown = try #require(failure(Self.base + "\n    faults: {dns: flaky}"))
        #expect(unknown.field == "hotspots[0].faults.dns")
        #expect(unknown.message == "unknown DNS mode `flaky`; expected one of: no-answer, normal, refused, hijack, servfail, private")
        let link = try TopologyParser.parse(Self.base + "\n    faults: {latency-ms: 80, jitter-ms: 20, loss-percent: 2, rate-kbit: 512}", file: "t.yaml")
        #expect(RunningTopology.netem(latencyMS: link.hotspots[0].faults.latencyMS, jitterMS: link.hotspots[0].faults.jitterMS,
                                 lossPercent: Double(link.hotspots[0].faults.lossPercent), rateKbit: link.hotspots[0].faults.rateKbit)
                == ["delay", "80ms", "20ms", "loss", "2%", "rate", "512kbit"])
        #expect(RunningTopology.netem(latencyMS: 0, jitterMS: 0, lossPercent: 0.5, rateKbit: 0) == ["loss", "0.5%"])
        let rate = try #require(failure(Self.base + "\n    faults: {rate-kbit: fast}"))
        #expect(rate.field == "hotspots[0].faults.rate-kbit")
        let both = try #require(failure(Self.base + "\n    faults: {dns-down: true, dns: hijack}"))
        #expect(both.message.contains("give either dns-down or dns, not both"))
    }

    @Test func wrongType() throws {
        let yaml = Self.base + "\n    channel: six"
        let error = try #require(failure(yaml))
        #expect(error.field == "hotspots[0].channel")
        #expect(error.line == 13 && error.column == 14)
        #expect(error.message == "expected an integer in 1...13, found scalar `six`")
        let listError = try #require(failure(Self.base.replacingOccurrences(of: "ssid: Cafe", with: "ssid: [a, b]")))
        #expect(listError.field == "hotspots[0].ssid")
        #expect(listError.message == "expected a string, found a list")
        #expect(listError.line == 4 && listError.column == 11)
    }

    @Test func duplicateBSSID() throws {
        let yaml = Self.base + """

              - name: bar
                ssid: Bar
                bssid: "02:00:00:00:01:00"
                gateway:
                  subnet: 192.0.2.0/24
            """
        let error = try #require(failure(yaml))
        #expect(error.field == "hotspots[1].bssid")
        #expect(error.line == 15 && error.column == 12)
        #expect(error.message.contains("duplicate BSSID 02:00:00:00:01:00 (first used by hotspots[0])"))
    }

    @Test func accessPoints() throws {
        let yaml = Self.base + """

                access-points:
                  - bssid: "02:00:00:00:01:01"
                    channel: 11
                  - bssid: "02:00:00:00:01:02"
            """
        let cafe = try TopologyParser.parse(yaml, file: "aps.yaml").hotspots[0]
        #expect(cafe.accessPoints.map(\.bssid.text) == ["02:00:00:00:01:00", "02:00:00:00:01:01", "02:00:00:00:01:02"])
        #expect(cafe.accessPoints.map(\.channel) == [6, 11, 6])   // the hotspot's channel by default
        #expect(cafe.accessPoints.map(\.frequency) == [2437, 2462, 2437])
        #expect(cafe.served(by: cafe.extraAccessPoints[0]).bssid.text == "02:00:00:00:01:01")
        #expect(try TopologyParser.load(path: "\(Self.root)/topologies/roaming.yaml").hotspots[0].accessPoints.count == 2)
    }

    @Test func accessPointErrors() throws {
        func apYAML(_ item: String) -> String { Self.base + "\n    access-points:\n      - " + item }
        // line 14 is the access-points item
        let duplicate = try #require(failure(apYAML(#"bssid: "02:00:00:00:01:00""#)))
        #expect(duplicate.field == "hotspots[0].access-points[0].bssid")
        #expect(duplicate.line == 14 && duplicate.column == 16)
        #expect(duplicate.message == "duplicate BSSID 02:00:00:00:01:00 (first used by hotspots[0]); expected a unique BSSID")
        let multicast = try #require(failure(apYAML(#"bssid: "03:00:00:00:01:01""#)))
        #expect(multicast.field == "hotspots[0].access-points[0].bssid")
        #expect(multicast.message == "expected a unicast MAC address such as 02:00:00:00:01:01, found `03:00:00:00:01:01`")
        let channel = try #require(failure(apYAML(#"{bssid: "02:00:00:00:01:01", channel: 40}"#)))
        #expect(channel.field == "hotspots[0].access-points[0].channel")
        #expect(channel.message == "expected an integer in 1...13, found 40")
        let missing = try #require(failure(apYAML("channel: 1")))
        #expect(missing.field == "hotspots[0].access-points[0]")
        #expect(missing.message == "missing key `bssid`")
        let unknown = try #require(failure(apYAML(#"{bssid: "02:00:00:00:01:01", ssid: Other}"#)))
        #expect(unknown.field == "hotspots[0].access-points[0].ssid")
        #expect(unknown.message.hasPrefix("unknown key `ssid`; expected one of: bssid, channel"))
        let notList = try #require(failure(Self.base + "\n    access-points: 02:00:00:00:01:01"))
        #expect(notList.field == "hotspots[0].access-points")
        #expect(notList.message.hasPrefix("expected a list"))
        // unique across hotspots too: a second hotspot's access point reusing the first's extra BSSID
        let across = try #require(failure(apYAML(#"bssid: "02:00:00:00:01:01""#) + """

              - name: bar
                ssid: Bar
                bssid: "02:00:00:00:02:00"
                access-points: [{bssid: "02:00:00:00:01:01"}]
                gateway:
                  subnet: 192.0.2.0/24
            """))
        #expect(across.field == "hotspots[1].access-points[0].bssid")
        #expect(across.message == "duplicate BSSID 02:00:00:00:01:01 (first used by hotspots[0].access-points[0]); expected a unique BSSID")
    }

    @Test func unknownPortalKind() throws {
        let error = try #require(failure(Self.base.replacingOccurrences(of: "kind: form-login", with: "kind: telepathy")))
        #expect(error.field == "hotspots[0].gateway.portal.kind")
        #expect(error.line == 10 && error.column == 15)
        #expect(error.message.hasPrefix("unknown portal kind `telepathy`; expected one of: click-through, form-login"))
    }

    @Test func httpsOnlySetting() throws {
        let on = try TopologyParser.parse(Self.base + "\n        https-only: \"true\"", file: "on.yaml")
        #expect(on.hotspots[0].gateway.portal?.settings["https-only"] == "true")
        #expect(PortalTLS.isHTTPSOnly(on.hotspots[0].gateway.portal!.settings))
        let bad = try #require(failure(Self.base + "\n        https-only: maybe"))
        #expect(bad.field == "hotspots[0].gateway.portal.https-only")
        #expect(bad.message == "expected \"true\" or \"false\", found `maybe`")
        let clash = try #require(failure(Self.base + "\n        https-only: \"true\"\n        port: 443"))
        #expect(clash.field == "hotspots[0].gateway.portal.port")
        #expect(clash.message.hasPrefix("port 443 is the https-only portal's TLS port"))
    }

    @Test func overlappingSubnets() throws {
        let yaml = Self.base + """

              - name: bar
                ssid: Bar
                bssid: "02:00:00:00:02:00"
                gateway:
                  subnet: 198.51.100.128/25
            """
        let error = try #require(failure(yaml))
        #expect(error.field == "hotspots[1].gateway.subnet")
        #expect(error.line == 17 && error.column == 15)
        #expect(error.message.contains("198.51.100.128/25 overlaps hotspots[0].gateway.subnet 198.51.100.0/24"))
    }

    @Test func shortPSK() throws {
        let yaml = Self.base.replacingOccurrences(of: "    security: open", with: "    security:\n      kind: wpa2-psk\n      psk: short")
        let error = try #require(failure(yaml))
        #expect(error.field == "hotspots[0].security.psk")
        #expect(error.line == 8 && error.column == 12)
        #expect(error.message == "expected a PSK of 8 to 63 characters, found 5")
    }

    @Test func addressesOutsideLabRanges() throws {
        let error = try #require(failure(Self.base.replacingOccurrences(of: "198.51.100.0/24", with: "10.0.0.0/24")))
        #expect(error.field == "hotspots[0].gateway.subnet")
        #expect(error.message.contains("outside the lab ranges"))
    }

    @Test func missingKeyAndYAMLSyntax() throws {
        let missing = try #require(failure(Self.base.replacingOccurrences(of: "    ssid: Cafe\n", with: "")))
        #expect(missing.field == "hotspots[0]")
        #expect(missing.message == "missing key `ssid`")
        #expect(missing.line == 3 && missing.column == 5)
        let syntax = try #require(failure("hotspots:\n  - name: [unclosed\n"))
        #expect(syntax.line >= 2)
        #expect(syntax.message.hasPrefix("YAML"))
        let unreadable = #expect(throws: TopologyError.self) { try TopologyParser.load(path: "/nonexistent/x.yaml") }
        #expect(unreadable?.message.contains("No such file or directory") == true)
    }

    @Test func stationNeedsPSKForSecureNetwork() throws {
        let yaml = Self.base.replacingOccurrences(of: "    security: open", with: "    security:\n      kind: wpa2-psk\n      psk: longenough") + """

            stations:
              - name: phone
                known-networks:
                  - ssid: Cafe
            """
        let error = try #require(failure(yaml))
        #expect(error.field == "stations[0].known-networks[0]")
        #expect(error.message.contains("expected `psk:`"))
        // With a helper on the station, the password may come from its filterScanList answer.
        let withHelper = yaml.replacingOccurrences(of: "  - name: phone\n", with: "  - name: phone\n    helpers: [hotspot-helper-portal]\n")
        let topology = try TopologyParser.parse(withHelper, file: "t.yaml")
        #expect(topology.stations[0].knownNetworks[0].psk == nil)
    }
}

/// Portal settings validated from the kind's definition (PortalKinds), each error at the value or key at fault.
extension TopologyParserTests {
    static func portal(_ lines: String) -> String {
        base.replacingOccurrences(of: "        kind: form-login\n        username: u\n        password: p", with: lines)
    }

    @Test func status511NeedsItsUsernameAtParseTime() throws {
        let error = try #require(failure(Self.portal("        kind: status-511\n        password: p")))
        #expect(error.field == "hotspots[0].gateway.portal")
        #expect(error.line == 10 && error.column == 9)
        #expect(error.message.hasPrefix("missing key `username` for the status-511 portal"), "\(error)")
        #expect(try TopologyParser.parse(Self.portal("        kind: status-511\n        username: u\n        password: p"), file: "ok.yaml")
            .hotspots[0].gateway.portal?.kind == "status-511")
    }

    @Test func loginStatusMustBeAnHTTPErrorStatus() throws {
        let error = try #require(failure(Self.base + "\n        login-status: teapot"))
        #expect(error.field == "hotspots[0].gateway.portal.login-status")
        #expect(error.line == 13 && error.column == 23)
        #expect(error.message == "expected a whole number 400...599, found `teapot`")
        let status511 = try #require(failure(Self.portal("        kind: status-511\n        username: u\n        password: p\n        login-status: 200")))
        #expect(status511.field == "hotspots[0].gateway.portal.login-status" && status511.message.hasSuffix("found `200`"))
        #expect(try TopologyParser.parse(Self.base + "\n        login-status: 503", file: "ok.yaml").hotspots[0].gateway.portal?.settings["login-status"] == "503")
    }

    @Test func settingErrorsPointAtTheValue() throws {
        let https = try #require(failure(Self.base + "\n        https-only: maybe"))
        #expect(https.line == 13 && https.column == 21, "\(https)")
        let delay = try #require(failure(Self.portal("        kind: broken-slow\n        delay-seconds: soon")))
        #expect(delay.field == "hotspots[0].gateway.portal.delay-seconds")
        #expect(delay.line == 11 && delay.column == 24, "\(delay)")
        #expect(delay.message == "expected a whole number 0...86400, found `soon`")
        let flag = try #require(failure(Self.portal("        kind: captive-api\n        can-extend-session: perhaps")))
        #expect(flag.line == 11 && flag.column == 29 && flag.message == "expected \"true\" or \"false\", found `perhaps`")
    }

    @Test func settingsOfAnotherKindAreRefused() throws {
        let error = try #require(failure(Self.portal("        kind: voucher\n        voucher: V\n        username: u")))
        #expect(error.field == "hotspots[0].gateway.portal.username")
        #expect(error.line == 12 && error.column == 9)
        #expect(error.message == "unknown key `username` for the voucher portal; expected one of: kind, port, https-only, session-cookie, csrf-token, voucher")
        let none = try #require(failure(Self.portal("        kind: broken-500\n        terms: x")))
        #expect(none.message == "unknown key `terms` for the broken-500 portal; expected one of: kind, port, https-only, session-cookie, csrf-token")
    }

    @Test func emailKindInATopology() throws {
        let t = try TopologyParser.parse(Self.portal("        kind: email\n        domain: staff.example"), file: "email.yaml")
        #expect(t.hotspots[0].gateway.portal == PortalSettings(kind: "email", port: 8080, settings: ["domain": "staff.example"]))
        let bad = try #require(failure(Self.portal("        kind: email\n        domain: \"@staff\"")))
        #expect(bad.field == "hotspots[0].gateway.portal.domain" && bad.line == 11 && bad.column == 17)
        #expect(bad.message == "expected a domain name such as example.com, found `@staff`")
    }

    /// The scenario `portal:` step checks its settings against the kind's definition too.
    @Test func scenarioPortalStepSettings() throws {
        func stepFailure(_ step: String) -> TopologyError? {
            do {
                _ = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - \(step)\n", file: "s.yaml")
                return nil
            } catch {
                return error as? TopologyError
            }
        }
        let teapot = try #require(stepFailure("portal: {kind: form-login, settings: {login-status: teapot}}"))
        #expect(teapot.field == "steps[0].portal.settings.login-status")
        #expect(teapot.line == 3 && teapot.column == 57 && teapot.message == "expected a whole number 400...599, found `teapot`")
        let other = try #require(stepFailure("portal: {kind: click-through, settings: {voucher: V}}"))
        #expect(other.field == "steps[0].portal.settings.voucher")
        #expect(other.message == "unknown setting `voucher` for the click-through portal; expected one of: https-only, session-cookie, csrf-token, terms")
        let down = try #require(stepFailure("portal: {kind: down, settings: {terms: x}}"))
        #expect(down.message == "the portal `down` takes no settings")
        // Required settings may come from the topology's portal: checked when the portal switches.
        let scenario = try ScenarioParser.parse("topology: t.yaml\nsteps:\n  - portal: {kind: status-511, settings: {login-delay-seconds: \"1.5\"}}\n", file: "s.yaml")
        let step = try #require(scenario.steps[0].action as? PortalStep, "portal step")
        #expect(step.kind == "status-511" && step.hotspot == nil && step.settings == ["login-delay-seconds": "1.5"])
    }
}

/// The lab's YAML loader (topologies and scenarios): a size limit, no anchors or aliases, bounded nesting; files
/// that are directories say so.
extension TopologyParserTests {
    static func temporaryDirectory() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-yaml-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func aDirectoryIsNotATopology() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let topology = #expect(throws: TopologyError.self) { try TopologyParser.load(path: dir) }
        #expect(topology?.message == "cannot read the file: it is a directory; expected a YAML file", "\(String(describing: topology))")
        let scenario = #expect(throws: TopologyError.self) { try ScenarioParser.load(path: dir) }
        #expect(scenario?.message == "cannot read the file: it is a directory; expected a YAML file")
    }

    /// Aliases used as mapping keys: composing this took hours (each level doubles what the keys expand to).
    static let aliasKeyBomb: String = {
        var yaml = "name: t\nx0: &x0 {a: 1, b: 2}\n"
        for level in 1...40 { yaml += "x\(level): &x\(level) {? *x\(level - 1) : 1, ? [*x\(level - 1)] : 2}\n" }
        return yaml + "hotspots: []\n"
    }()

    /// Aliases inside a scenario step's value (a billion laughs): this ran out of memory.
    static let stepAliasBomb: String = {
        var yaml = "topology: t.yaml\nsteps:\n  - sleep: 1\n  - expect-states: &l0 [Idle, Idle]\n"
        for level in 1...30 { yaml += "  - expect-states: &l\(level) [*l\(level - 1), *l\(level - 1)]\n" }
        return yaml
    }()

    /// "Fast" is work, not the wall clock: this thread's CPU seconds (CLOCK_THREAD_CPUTIME_ID; the tests are
    /// synchronous, so they stay on one thread), which a loaded machine does not stretch. An alias bomb expanded, or a
    /// 1 MiB file parsed, would spend them.
    static func threadCPUSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    @Test func anchorsAndAliasesAreRefusedFast() throws {
        let start = Self.threadCPUSeconds()
        let keys = try #require(failure(Self.aliasKeyBomb))
        #expect(keys.line == 2 && keys.column == 5 && keys.field == "x0", "\(keys)")
        #expect(keys.message == "YAML anchor `&x0` is not supported in lab files (aliases can expand exponentially); write the value out")
        let step = #expect(throws: TopologyError.self) { try ScenarioParser.parse(Self.stepAliasBomb, file: "s.yaml") }
        #expect(step?.line == 4 && step?.column == 20 && step?.field == "steps[1].expect-states", "\(String(describing: step))")
        #expect(step?.message.hasPrefix("YAML anchor `&l0`") == true)
        #expect(Self.threadCPUSeconds() - start < 5, "refusing took \(Self.threadCPUSeconds() - start) s of CPU")
        // An alias alone (its anchor elsewhere is refused first, so: an undefined one) is refused as an alias.
        let alias = try #require(failure(Self.base.replacingOccurrences(of: "username: u", with: "username: *u")))
        #expect(alias.field == "hotspots[0].gateway.portal.username" && alias.line == 11 && alias.column == 19, "\(alias)")
        #expect(alias.message.hasPrefix("YAML alias `*u` is not supported"))
        // A small, harmless-looking anchor is refused too (the rule is simple).
        let small = try #require(failure(Self.base.replacingOccurrences(of: "    security: open", with: "    security: &s open")))
        #expect(small.field == "hotspots[0].security" && small.line == 6 && small.column == 15)
    }

    @Test func oversizeAndDeepFilesAreRefusedFast() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/big.yaml"
        // A valid topology padded with a comment to 1 MiB + 1 byte.
        let padding = LabYAML.maxBytes + 1 - Self.base.utf8.count - 3
        try (Self.base + "\n# " + String(repeating: "x", count: padding)).write(toFile: file, atomically: true, encoding: .utf8)
        let start = Self.threadCPUSeconds()
        let big = #expect(throws: TopologyError.self) { try TopologyParser.load(path: file) }
        #expect(big?.message == "the file is 1048577 bytes; expected at most 1 MiB (1048576 bytes)", "\(String(describing: big))")
        #expect(big?.description.hasPrefix(file + ":0:0: (document): ") == true)
        let text = #expect(throws: TopologyError.self) { try ScenarioParser.parse(String(repeating: "#", count: LabYAML.maxBytes + 1), file: "s.yaml") }
        #expect(text?.message.hasSuffix("expected at most 1 MiB (1048576 bytes)") == true)
        #expect(Self.threadCPUSeconds() - start < 5, "refusing took \(Self.threadCPUSeconds() - start) s of CPU")
        let deep = try #require(failure("hotspots: " + String(repeating: "[", count: 100) + String(repeating: "]", count: 100)))
        #expect(deep.message == "nested deeper than 64 mappings and lists; expected a shallower file", "\(deep)")
        #expect(deep.line == 1 && deep.column == 74)
    }
}

extension TopologyParserTests {
    @Test func internetDefaults() throws {
        #expect(Internet.defaultAddress.description == "198.18.0.1" && Internet.defaultUplinks.description == "203.0.113.0/24")
        let t = try TopologyParser.parse(Self.base, file: "t.yaml")
        #expect(t.internet.address == Internet.defaultAddress && t.internet.uplinks == Internet.defaultUplinks)
    }
}
