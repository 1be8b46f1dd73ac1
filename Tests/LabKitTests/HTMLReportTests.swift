import Foundation
import HotspotProtocol
import HotspotSystem
import Testing
@testable import LabKit
@testable import LabCertify
@testable import LabReports
@testable import LabScenarioModel
@testable import LabScenarios

/// `hotspot-lab run --html`: the report of hand-built results (no lab runs): the summary and verdicts, the
/// failing step escaped, exactly the transitions taken highlighted on the state diagram, links to the logs;
/// then the page as Chromium renders it (DOM after the inline script, and a screenshot).
@Suite("HTML report (no root)")
struct HTMLReportTests {
    static func step(_ line: Int, _ text: String, _ action: any ScenarioStepAction) -> ScenarioStep {
        ScenarioStep(line: line, column: 5, text: text, action: action)
    }

    static func scenario(_ name: String, _ description: String, _ steps: [ScenarioStep]) -> Scenario {
        Scenario(name: name, description: description, file: "topologies/scenarios/\(name).yaml", topologyPath: "topologies/scenarios/../cafe.yaml",
                 station: nil, maintainInterval: 300, timeScale: 1, helpers: nil, steps: steps)
    }

    static let failingMessage = "step 2 (topologies/scenarios/broken-login.yaml:9:5) `wait-state: Authenticated`: expected Authenticated <b>& co</b>, actual Failure"

    /// A passing captive run, a failing one (step 2 of 3), a flaky one that ends with the connection lost.
    static func results(logDirectory: String) -> [ScenarioResult] {
        let captiveSteps = [
            step(6, "join: cafe", JoinStep(ssid: "cafe", password: nil)),
            step(7, "wait-state: Authenticated", WaitStateStep(state: "Authenticated", timeout: 10)),
            step(8, "expect-states: [Evaluating, Authenticating, Authenticated]", ExpectStatesStep(states: ["Evaluating", "Authenticating", "Authenticated"])),
            step(9, "application: allowed", ApplicationStep(expect: .allowed, url: nil)),
        ]
        let captive = ScenarioResult(
            scenario: scenario("captive", "the captive sequence: evaluate, authenticate, signed in", captiveSteps), passed: true,
            steps: [
                StepResult(index: 0, step: captiveSteps[0], passed: true, elapsed: 0.41, duration: 0.41, state: "Inactive", message: "join cafe"),
                StepResult(index: 1, step: captiveSteps[1], passed: true, elapsed: 1.93, duration: 1.52, state: "Authenticated", message: "state Authenticated"),
                StepResult(index: 2, step: captiveSteps[2], passed: true, elapsed: 1.94, duration: 0.01, state: "Authenticated",
                           message: "Evaluating -> Authenticating -> Authenticated"),
                StepResult(index: 3, step: captiveSteps[3], passed: true, elapsed: 2.10, duration: 0.16, state: "Authenticated", message: "application allowed: HTTP 200"),
            ],
            timeline: [
                TimelineEntry(t: 0.000, kind: "user", text: "user joins cafe (password from none)"),
                TimelineEntry(t: 0.212, kind: "event", text: "associated with cafe 02:00:00:00:01:00 (joined by the user)"),
                TimelineEntry(t: 0.388, kind: "station", text: "DHCP lease 198.51.100.14 in 171 ms"),
                TimelineEntry(t: 0.390, kind: "state", text: "Inactive → Evaluating"),
                TimelineEntry(t: 0.391, kind: "command", text: "→ evaluate to com.example.portal [cafe, didJustJoin]"),
                TimelineEntry(t: 0.412, kind: "response", text: "← evaluate success from com.example.portal (confidence high) in 20.7 ms"),
                TimelineEntry(t: 0.413, kind: "state", text: "Evaluating → Authenticating (best helper com.example.portal)"),
                TimelineEntry(t: 0.414, kind: "command", text: "→ authenticate to com.example.portal [cafe, didJustJoin]"),
                TimelineEntry(t: 1.602, kind: "response", text: "← authenticate success from com.example.portal in 1188.0 ms"),
                TimelineEntry(t: 1.603, kind: "state", text: "Authenticating → Authenticated"),
                TimelineEntry(t: 1.604, kind: "cache", text: "cache cafe: com.example.portal"),
            ],
            path: ["Evaluating", "Authenticating", "Authenticated"], duration: 5.2, labUpSeconds: 2.9,
            logDirectory: logDirectory, traceFile: logDirectory + "/stations/station/run/trace.jsonl")

        let brokenSteps = [
            step(8, "join: cafe", JoinStep(ssid: "cafe", password: nil)),
            step(9, "wait-state: Authenticated", WaitStateStep(state: "Authenticated", timeout: 5)),
            step(10, "application: allowed", ApplicationStep(expect: .allowed, url: nil)),
        ]
        let broken = ScenarioResult(
            scenario: scenario("broken-login", "a helper that fails to sign in", brokenSteps), passed: false,
            steps: [
                StepResult(index: 0, step: brokenSteps[0], passed: true, elapsed: 0.38, duration: 0.38, state: "Inactive", message: "join cafe"),
                StepResult(index: 1, step: brokenSteps[1], passed: false, elapsed: 5.40, duration: 5.02, state: "Inactive", message: failingMessage),
            ],
            timeline: [
                TimelineEntry(t: 0.0, kind: "state", text: "Inactive → Evaluating"),
                TimelineEntry(t: 0.01, kind: "command", text: "→ evaluate to com.example.broken [cafe, didJustJoin]"),
                TimelineEntry(t: 0.03, kind: "response", text: "← evaluate success from com.example.broken (confidence low) in 19.0 ms"),
                TimelineEntry(t: 0.04, kind: "state", text: "Evaluating → Authenticating (best helper com.example.broken)"),
                TimelineEntry(t: 0.05, kind: "command", text: "→ authenticate to com.example.broken [cafe, didJustJoin]"),
                TimelineEntry(t: 0.30, kind: "response", text: "← authenticate failure from com.example.broken in 250.2 ms"),
                TimelineEntry(t: 0.31, kind: "state", text: "Authenticating → Failure"),
                TimelineEntry(t: 0.33, kind: "state", text: "Failure → Inactive"),
            ],
            path: ["Evaluating", "Authenticating", "Failure", "Inactive"], duration: 8.8, labUpSeconds: 3.1,
            logDirectory: logDirectory, traceFile: nil)

        let flakySteps = [
            step(5, "join: lounge", JoinStep(ssid: "lounge", password: nil)),
            step(6, "foreground: voucher", ForegroundStep(helper: "voucher")),
            step(7, "leave", LeaveStep()),
        ]
        var flaky = ScenarioResult(
            scenario: scenario("flaky-voucher", "voucher through the UI; the user leaves", flakySteps), passed: true,
            steps: flakySteps.enumerated().map { i, s in
                StepResult(index: i, step: s, passed: true, elapsed: Double(i) + 0.5, duration: 0.5, state: ["Authenticating", "Authenticated", "Inactive"][i], message: "ok")
            },
            timeline: [
                TimelineEntry(t: 0.0, kind: "state", text: "Inactive → Evaluating"),
                TimelineEntry(t: 0.1, kind: "state", text: "Evaluating → Authenticating"),
                TimelineEntry(t: 0.2, kind: "state", text: "Authenticating → PresentingUI"),
                TimelineEntry(t: 0.9, kind: "user", text: "user brings com.example.voucher to the foreground"),
                TimelineEntry(t: 1.1, kind: "state", text: "PresentingUI → Authenticated"),
                TimelineEntry(t: 2.0, kind: "state", text: "Authenticated → Inactive"),
            ],
            path: ["Evaluating", "Authenticating", "PresentingUI", "Authenticated", "Inactive"], duration: 12.0, labUpSeconds: 3.0,
            logDirectory: "", traceFile: nil)
        flaky.flaky = true
        flaky.attempts = 2
        return [captive, broken, flaky]
    }

    /// A log folder laid out like a lab's: the lab's own log, a hotspot's daemons, a station's.
    static func makeLogFolder() throws -> String {
        let dir = NSTemporaryDirectory() + "html-report-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let files = [
            "internet.log", "cafe/hostapd.log", "cafe/hostapd.conf", "cafe/dnsmasq.log", "cafe/portal.log", "cafe/gate.nft", "cafe/dnsmasq.leases",
            "stations/station/hotspotd.log", "stations/station/wpa_supplicant.conf", "stations/station/helper-1-my portal.log",
            "stations/station/run/trace.jsonl", "stations/station/run/state.json", "hwsim0.pcap",
        ]
        for file in files {
            let path = dir + "/" + file
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data("\(file)\n".utf8).write(to: URL(fileURLWithPath: path))
        }
        return dir
    }

    /// The `data-from>data-to` of the edges in the SVG with this id (only the highlighted ones if `taken`).
    static func edges(_ html: String, svg id: String, taken: Bool) -> Set<String> {
        guard let start = html.range(of: "<svg class=\"diagram\" id=\"\(id)\""),
              let end = html.range(of: "</svg>", range: start.upperBound..<html.endIndex) else { return [] }
        let svg = html[start.upperBound..<end.lowerBound]
        var result: Set<String> = []
        for chunk in svg.components(separatedBy: "<g class=\"edge").dropFirst() {
            let classes = chunk.prefix { $0 != "\"" }
            guard !taken || classes.split(separator: " ").contains("taken"),
                  let from = chunk.range(of: "data-from=\""), let to = chunk.range(of: "data-to=\"") else { continue }
            let a = chunk[from.upperBound...].prefix { $0 != "\"" }, b = chunk[to.upperBound...].prefix { $0 != "\"" }
            result.insert("\(a)>\(b)")
        }
        return result
    }

    @Test("JUnit of scenarios: a failed step is a <failure>, a lab that could not be built an <error> (errors=, not failures=)")
    func junitCountsSetupErrorsApart() throws {
        var results = Self.results(logDirectory: "/logs")
        var unbuilt = results[0]
        unbuilt.passed = false
        unbuilt.steps = []
        unbuilt.setupError = "start hotspotd for station device: connect to /run/x/control.sock: No such file or directory (ENOENT)"
        results.append(unbuilt)
        let xml = JUnit.scenarios(results, suite: "hotspot-lab run")
        #expect(xml.contains("tests=\"4\" failures=\"1\" errors=\"1\""), "\(xml.prefix(300))")
        #expect(xml.contains("<error message=\"start hotspotd for station device: connect to /run/x/control.sock: No such file or directory (ENOENT)\"/>"))
        #expect(xml.components(separatedBy: "<failure message=").count == 2)
    }

    @Test("the summary names each scenario with its verdict; the failing step is highlighted and its message escaped")
    func summaryAndFailure() throws {
        let html = HTMLReport.render(Self.results(logDirectory: "/nonexistent/hsl0000"), title: "run <1> & co")
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<title>run &lt;1&gt; &amp; co</title>"))
        for (name, verdict, css) in [("captive", "PASS", "pass"), ("broken-login", "FAIL", "fail"), ("flaky-voucher", "FLAKY", "flaky")] {
            #expect(html.contains("<tr class=\"\(css)\" data-scenario=\"\(name)\"><td><a href=\"#scenario-\(name)\">\(name)</a></td><td><span class=\"verdict \(css)\">\(verdict)</span>"),
                    "summary row of \(name)")
            #expect(html.contains("<section class=\"scenario \(css)\" id=\"scenario-\(name)\">"))
        }
        #expect(html.contains("(2 attempts)"))
        // The state path in the summary.
        #expect(html.contains("<span class=\"st\">Evaluating</span> → <span class=\"st\">Authenticating</span> → <span class=\"st\">Authenticated</span>"))
        // The failing step: highlighted row, the message escaped (never raw markup), the step not run greyed.
        let escaped = "expected Authenticated &lt;b&gt;&amp; co&lt;/b&gt;, actual Failure"
        #expect(html.contains("<tr id=\"step-broken-login-2\" class=\"step failed\"><td class=\"mark\">✗</td>"))
        #expect(html.contains(escaped))
        #expect(!html.contains("<b>& co"))
        #expect(html.contains("`wait-state: Authenticated`"))
        #expect(html.contains("<tr id=\"step-broken-login-3\" class=\"step notrun\">"))
        #expect(html.contains("<tr id=\"step-captive-1\" class=\"step ok\"><td class=\"mark\">✓</td>"))
        // No external assets.
        #expect(!html.contains("<link "))
        #expect(!html.contains(" src="))
    }

    @Test("the timeline: an element per scenario, entries classed by kind, latencies in their own column")
    func timeline() {
        let html = HTMLReport.render(Self.results(logDirectory: ""), title: "t")
        #expect(html.contains("<table class=\"timeline\" id=\"timeline-captive\">"))
        #expect(html.contains("<table class=\"timeline\" id=\"timeline-broken-login\">"))
        #expect(html.contains("<tr class=\"tl-entry tl-state\" data-kind=\"state\">"))
        #expect(html.contains("<tr class=\"tl-entry tl-command\" data-kind=\"command\">"))
        #expect(html.contains("<tr class=\"tl-entry tl-response\" data-kind=\"response\">"))
        #expect(html.contains("<td>← evaluate success from com.example.portal (confidence high)</td><td class=\"num latency\">20.7 ms</td>"))
        #expect(html.contains("<td class=\"num latency slow\">1188.0 ms</td>"))
        #expect(html.contains("→ authenticate to com.example.portal [cafe, didJustJoin]"))
        #expect(HTMLReport.splitLatency("DHCP lease 198.51.100.14 in 171 ms") == ("DHCP lease 198.51.100.14", 171))
        #expect(HTMLReport.splitLatency("user joins x in the lobby").1 == nil)
    }

    @Test("the state diagram highlights exactly the transitions taken, starting at Inactive")
    func diagramHighlightsThePath() {
        let html = HTMLReport.render(Self.results(logDirectory: ""), title: "t")
        // Every edge of the table is drawn in each diagram: 22 (from, to) pairs and "any state" → Inactive.
        let all = Self.edges(html, svg: "diagram-captive", taken: false)
        #expect(all.count == HTMLReport.edges().count)
        #expect(all.contains("Inactive>Evaluating") && all.contains("Evaluating>Authenticated") && all.contains("*>Inactive"))

        #expect(Self.edges(html, svg: "diagram-captive", taken: true) == ["Inactive>Evaluating", "Evaluating>Authenticating", "Authenticating>Authenticated"])
        #expect(!Self.edges(html, svg: "diagram-captive", taken: true).contains("Evaluating>Authenticated"))
        #expect(Self.edges(html, svg: "diagram-broken-login", taken: true)
                == ["Inactive>Evaluating", "Evaluating>Authenticating", "Authenticating>Failure", "Failure>Inactive"])
        // Authenticated → Inactive is the "any state" row (connectivity lost).
        #expect(Self.edges(html, svg: "diagram-flaky-voucher", taken: true)
                == ["Inactive>Evaluating", "Evaluating>Authenticating", "Authenticating>PresentingUI", "PresentingUI>Authenticated", "*>Inactive"])
        // The states entered are highlighted, the last one marked final; the others are not.
        #expect(html.contains("<g class=\"state any taken\" data-state=\"*\">"))
        #expect(html.contains("<g class=\"state any\" data-state=\"*\">"))
        #expect(html.contains("<g class=\"state taken final\" data-state=\"Authenticated\">"))
        #expect(html.contains("<g class=\"state\" data-state=\"Maintaining\">"))
        #expect(html.contains("<g class=\"state taken failure-state\" data-state=\"Failure\">"))
        // The numbered list of transitions with the table's triggers.
        #expect(html.contains("<span class=\"st\">Evaluating</span> → <span class=\"st\">Authenticating</span> <span class=\"muted\">a helper claimed the network</span>"))

        // A transition that is not in the table is drawn dashed and says so.
        let odd = HTMLReport.diagram(path: ["Authenticated"], id: "d", index: 0, final: "Authenticated")
        #expect(odd.contains("<g class=\"edge taken offtable\" data-from=\"Inactive\" data-to=\"Authenticated\">"))
        #expect(HTMLReport.transitionList(["Authenticated"]).contains("not in the transition table"))
        #expect(HTMLReport.transitions(["Evaluating", "Authenticated"]).map { "\($0.from)>\($0.to)" } == ["Inactive>Evaluating", "Evaluating>Authenticated"])
    }

    @Test("log links: every log, trace, configuration and capture under the log folder, as file:// links")
    func logLinks() throws {
        let dir = try Self.makeLogFolder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let html = HTMLReport.render(Self.results(logDirectory: dir), title: "t")
        for file in ["internet.log", "hwsim0.pcap", "cafe/hostapd.log", "cafe/hostapd.conf", "cafe/dnsmasq.log", "cafe/portal.log",
                     "stations/station/hotspotd.log", "stations/station/wpa_supplicant.conf", "stations/station/run/trace.jsonl"] {
            #expect(html.contains("<a class=\"log\" href=\"file://\(dir)/\(file)\" title=\"\(dir)/\(file) ("), "link to \(file)")
            #expect(html.contains("\">\(file)</a>"), "relative name of \(file)")
        }
        #expect(html.contains("href=\"file://\(dir)/stations/station/helper-1-my%20portal.log\""))
        #expect(html.contains(">stations/station/helper-1-my portal.log</a>"))
        for skipped in ["gate.nft", "dnsmasq.leases", "state.json"] { #expect(!html.contains(skipped)) }
        // Grouped per daemon folder; the trace file named on its own.
        #expect(html.contains("<span class=\"group\">cafe</span>"))
        #expect(html.contains("<span class=\"group\">stations/station</span>"))
        #expect(html.contains("hotspotd's trace: <a class=\"trace\" href=\"file://\(dir)/stations/station/run/trace.jsonl\">"))
        #expect(HTMLReport.logFiles(in: dir).first == "hwsim0.pcap")
        // A run whose lab was never built says so instead of listing nothing.
        #expect(html.contains("no log folder (the lab was not built)"))
    }

    // MARK: - In a browser

    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/snap/bin/chromium"].first { access($0, X_OK) == 0 }

    /// Runs headless Chromium (as root it needs --no-sandbox) with its own profile folder, under `timeout`: a bound
    /// for a hung browser only. About 1 s on a quiet machine; CI once starved it past the old 15 s bound (the host
    /// suites in a cgroup of lower CPU weight beside the VM and the CPU hogs), which failed a test that had nothing
    /// wrong: a verdict may not depend on the machine's load.
    static func chromium(_ arguments: [String], in dir: String) throws -> ProcessResult {
        try ProcessRunner.run(ProcessConfiguration("/usr/bin/timeout", [
            "-k", "5", "150", chromium!, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
            "--user-data-dir=\(dir)/profile",
        ] + arguments, environment: ProcessInfo.processInfo.environment.merging(["HOME": dir]) { $1 }), timeout: .seconds(160))
    }

    static func writeReport() throws -> (dir: String, file: String) {
        let dir = try makeLogFolder()
        let file = dir + "/report.html"
        try HTMLReport.render(results(logDirectory: dir), title: "hotspot-lab run (HTMLReportTests)").write(toFile: file, atomically: true, encoding: .utf8)
        return (dir, file)
    }

    @Test("Chromium renders the report: the timelines and their entries in the DOM, the script's filters", 
          .enabled(if: chromium != nil, "chromium is not installed (ci/install-deps.sh installs it: apt-get install chromium)"))
    func browserDOM() throws {
        let (dir, file) = try Self.writeReport()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try Self.chromium(["--dump-dom", "file://" + file], in: dir)
        #expect(result.status.succeeded, "chromium: \(result.status): \(result.stderr.suffix(600))")
        let dom = result.stdout
        #expect(dom.contains("id=\"timeline-captive\""))
        #expect(dom.contains("id=\"timeline-broken-login\""))
        #expect(dom.components(separatedBy: "class=\"tl-entry tl-state\"").count - 1 == 3 + 4 + 5)
        #expect(dom.contains("class=\"tl-entry tl-command\""))
        #expect(dom.contains("class=\"tl-entry tl-response\""))
        #expect(dom.contains("<svg class=\"diagram\" id=\"diagram-captive\""))
        // What the inline script made: a filter bar before each timeline with a checkbox and a count per kind.
        #expect(dom.contains("data-js=\"ready\""))
        #expect(dom.contains("<div class=\"tl-filter\" id=\"filter-timeline-captive\">"))
        #expect(dom.contains("<input type=\"checkbox\" data-kind=\"state\"> state (3)</label>"))
        #expect(dom.contains("<input type=\"checkbox\" data-kind=\"response\"> response (2)</label>"))
        #expect(dom.contains("<div class=\"tl-filter\" id=\"filter-timeline-flaky-voucher\">"))
        // The parser kept the escaped message as text.
        #expect(dom.contains("expected Authenticated &lt;b&gt;&amp; co&lt;/b&gt;, actual Failure"))
    }

    @Test("Chromium takes a screenshot of the report at 1280 × 2000",
          .enabled(if: chromium != nil, "chromium is not installed (ci/install-deps.sh installs it: apt-get install chromium)"))
    func browserScreenshot() throws {
        let (dir, file) = try Self.writeReport()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let png = dir + "/report.png"
        let result = try Self.chromium(["--screenshot=\(png)", "--window-size=1280,2000", "file://" + file], in: dir)
        #expect(result.status.succeeded, "chromium: \(result.status): \(result.stderr.suffix(600))")
        let data = try #require(FileManager.default.contents(atPath: png), "no screenshot at \(png)")
        #expect(data.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "not a PNG")
        #expect(data.count > 50_000, "the screenshot is \(data.count) bytes: a blank page?")
        // To look at it: HOTSPOT_LAB_KEEP_SCREENSHOT=/tmp/report.png keeps the PNG (and the page as /tmp/report.png.html).
        if let keep = ProcessInfo.processInfo.environment["HOTSPOT_LAB_KEEP_SCREENSHOT"] {
            try data.write(to: URL(fileURLWithPath: keep))
            try? FileManager.default.removeItem(atPath: keep + ".html")
            try FileManager.default.copyItem(atPath: file, toPath: keep + ".html")
        }
    }

    // MARK: - The certify report

    /// A certify report with a cause (maintain answered from memory), checks not reached, and evidence far wider
    /// than a window (a 40-network scan list as one JSON line).
    static func certifyReport() throws -> CertificationReport {
        let t = CertifyJudgeTests.goodCaptive(fromMemory: true)
        var report = try CertifyJudgeTests.judge(t, gate: CertifyJudgeTests.gate(t))
        let wide = "[scan] seq 3: " + JSON.object(["kind": "response", "networkList": .array((0..<40).map { i in
            ["ssid": .string("Network\(i)WithALongName"), "bssid": .string("02:00:00:00:00:\(i)"), "password": .string(String(repeating: "x", count: 300))]
        })]).text
        if let index = report.results.firstIndex(where: { $0.check.id == "logoff" }) { report.results[index].evidence.append(wide) }
        return report
    }

    /// The page's layout as Chromium measured it at `width` × `height`: an inline script (added to a copy of the
    /// page) writes the numbers into the DOM, read back with --dump-dom. The cause is measured as the page opens,
    /// the width with every disclosure open.
    static func layout(of html: String, width: Int, height: Int, in dir: String) throws -> [String: Double] {
        let probe = """
            <script>(function () {
              var cause = document.getElementById('cause').getBoundingClientRect();
              var reason = document.querySelector('#cause .reason').getBoundingClientRect();
              // Every disclosure open: the widest the page can get.
              document.querySelectorAll('details').forEach(function (d) { d.open = true; });
              // The right edge of the widest element: content clipped by an overflow rule would hide from scrollWidth.
              var right = 0;
              document.querySelectorAll('body *').forEach(function (e) { var r = e.getBoundingClientRect(); if (r.width > 0) right = Math.max(right, r.right); });
              document.body.setAttribute('data-layout', JSON.stringify({scrollWidth: document.documentElement.scrollWidth, right: right,
                innerWidth: window.innerWidth, causeTop: cause.top, reasonBottom: reason.bottom, reasonRight: reason.right}));
            })();</script></body>
            """
        let file = dir + "/certify-probe.html"
        try html.replacingOccurrences(of: "</body>", with: probe).write(toFile: file, atomically: true, encoding: .utf8)
        let result = try chromium(["--dump-dom", "--window-size=\(width),\(height)", "file://" + file], in: dir)
        #expect(result.status.succeeded, "chromium: \(result.status): \(result.stderr.suffix(600))")
        guard let start = result.stdout.range(of: "data-layout=\""),
              let end = result.stdout[start.upperBound...].firstIndex(of: "\"") else { return [:] }
        let text = String(result.stdout[start.upperBound..<end]).replacingOccurrences(of: "&quot;", with: "\"")
        return (try JSON.parse(Array(text.utf8)).objectValue ?? [:]).compactMapValues(\.doubleValue)
    }

    @Test("certify: at 1280 × 800 the cause is on the first screen and nothing scrolls sideways; the screenshot is taken",
          .enabled(if: chromium != nil, "chromium is not installed (ci/install-deps.sh installs it: apt-get install chromium)"))
    func certifyReportFitsALaptop() throws {
        let dir = try Self.makeLogFolder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let html = CertifyReports.html(try Self.certifyReport())
        let layout = try Self.layout(of: html, width: 1280, height: 800, in: dir)
        let scroll = try #require(layout["scrollWidth"], "no layout from chromium: \(layout)")
        let inner = try #require(layout["innerWidth"])
        #expect(inner == 1280)
        #expect(scroll <= inner, "the page is \(scroll) px wide in a \(inner) px window: it scrolls sideways")
        #expect((layout["right"] ?? .infinity) <= inner, "an element ends at \(layout["right"] ?? -1) px, past the \(inner) px window")
        #expect((layout["causeTop"] ?? .infinity) < 800 && (layout["reasonBottom"] ?? .infinity) < 800, "the cause is not on the first screen: \(layout)")
        #expect((layout["reasonRight"] ?? .infinity) <= inner)
        let file = dir + "/certify.html"
        try html.write(toFile: file, atomically: true, encoding: .utf8)
        let png = dir + "/certify.png"
        let shot = try Self.chromium(["--screenshot=\(png)", "--window-size=1280,800", "file://" + file], in: dir)
        #expect(shot.status.succeeded, "chromium: \(shot.status): \(shot.stderr.suffix(600))")
        let data = try #require(FileManager.default.contents(atPath: png), "no screenshot at \(png)")
        #expect(data.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "not a PNG")
        // IHDR: width and height, big-endian, at bytes 16 and 20.
        let size = { (at: Int) in data[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        #expect(size(16) == 1280 && size(20) == 800)
        if let keep = ProcessInfo.processInfo.environment["HOTSPOT_LAB_KEEP_SCREENSHOT"] {
            try data.write(to: URL(fileURLWithPath: keep + ".certify.png"))
        }
    }
}
