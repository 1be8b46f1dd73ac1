import Foundation
import PortalKinds
import HotspotCore
import LabScenarios

/// One self-contained HTML page for a set of scenario runs (`hotspot-lab run --html FILE`): a summary
/// table, then per scenario its steps, the timeline from hotspotd's trace, the path taken drawn on the
/// state diagram (an inline SVG of `TransitionTable`, states at fixed positions) and links to every
/// daemon's logs. Inline CSS, no external assets; a few lines of inline JavaScript add per-kind filters
/// to the timelines, and the page reads the same without them.
public enum HTMLReport {
    public static func render(_ results: [ScenarioResult], title: String) -> String {
        let anchors = anchorNames(results.map(\.scenario.name))
        let passed = results.filter { $0.passed && !$0.flaky }.count
        let flaky = results.filter { $0.passed && $0.flaky }.count
        let failed = results.count - passed - flaky
        let total = results.reduce(0) { $0 + $1.duration }
        var html = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title))</title>
        <style>\(css)</style>
        </head>
        <body>
        <header>
        <h1>\(escape(title))</h1>
        <p class="totals"><span class="verdict \(failed == 0 ? "pass" : "fail")">\(failed == 0 ? "PASS" : "FAIL")</span>
        \(results.count) scenario\(results.count == 1 ? "" : "s"): \(passed) passed, \(flaky) flaky, \(failed) failed \
        · \(escape(Array(Set(results.map(\.tier))).sorted().joined(separator: " and "))) tier · \(String(format: "%.1f", total)) s in all · generated \(escape(ISO8601DateFormatter().string(from: Date())))</p>
        </header>
        <main>
        <section id="summary">
        <h2>Summary</h2>
        <table class="summary">
        <thead><tr><th>scenario</th><th>verdict</th><th>tier</th><th>steps</th><th class="num">duration</th><th class="num">lab up</th><th>state path</th><th>failure</th></tr></thead>
        <tbody>

        """
        for (result, anchor) in zip(results, anchors) {
            let v = verdict(result)
            let ran = result.steps.filter(\.passed).count
            let failure = result.setupError.map { "the lab could not be built: " + $0 } ?? result.failure?.message
            html += "<tr class=\"\(v.css)\" data-scenario=\"\(escape(result.scenario.name))\">"
                + "<td><a href=\"#scenario-\(anchor)\">\(escape(result.scenario.name))</a></td>"
                + "<td><span class=\"verdict \(v.css)\">\(v.label)</span>\(result.attempts > 1 ? " <span class=\"muted\">(\(result.attempts) attempts)</span>" : "")</td>"
                + "<td class=\"tier\">\(escape(result.tier))</td>"
                + "<td class=\"num\">\(ran)/\(result.scenario.steps.count)</td>"
                + "<td class=\"num\">\(String(format: "%.1f s", result.duration))</td>"
                + "<td class=\"num\">\(String(format: "%.1f s", result.labUpSeconds))</td>"
                + "<td class=\"path\">\(pathText(result.path))</td>"
                + "<td class=\"msg\">\(failure.map { escape(shorten($0, 160)) } ?? "")</td></tr>\n"
        }
        html += "</tbody>\n</table>\n</section>\n"
        for (index, (result, anchor)) in zip(results, anchors).enumerated() {
            html += scenarioSection(result, anchor: anchor, index: index)
        }
        html += "</main>\n<script>\(script)</script>\n</body>\n</html>\n"
        return html
    }

    // MARK: - One scenario

    static func scenarioSection(_ r: ScenarioResult, anchor: String, index: Int) -> String {
        let v = verdict(r)
        var html = "<section class=\"scenario \(v.css)\" id=\"scenario-\(anchor)\">\n"
        html += "<h2><span class=\"verdict \(v.css)\">\(v.label)</span> \(escape(r.scenario.name))</h2>\n"
        if !r.scenario.description.isEmpty { html += "<p class=\"description\">\(escape(r.scenario.description))</p>\n" }
        html += "<p class=\"meta\">\(escape(r.scenario.file)) · topology \(escape(r.scenario.topologyPath)) · \(escape(r.tier)) tier"
            + String(format: " · %.1f s (lab up %.1f s)", r.duration, r.labUpSeconds)
            + (r.attempts > 1 ? " · \(r.attempts) attempts" + (r.flaky ? ": failed once, passed on the retry" : "") : "") + "</p>\n"
        if let setup = r.setupError {
            html += "<div class=\"callout fail\"><strong>The lab could not be built</strong> (the scenario did not run):<pre>\(escape(setup))</pre></div>\n"
        } else if let failure = r.failure {
            html += "<div class=\"callout fail\"><strong>Step \(failure.index + 1) failed</strong> "
                + "<a href=\"#step-\(anchor)-\(failure.index + 1)\">(in the steps below)</a><pre>\(escape(failure.message))</pre></div>\n"
        }
        html += steps(r, anchor: anchor)
        html += "<h3>Path taken</h3>\n"
        html += diagram(path: r.path, id: "diagram-\(anchor)", index: index, final: r.path.last)
        html += transitionList(r.path)
        html += "<h3>Timeline <span class=\"muted\">(hotspotd's trace, \(r.timeline.count) entries)</span></h3>\n"
        html += timeline(r.timeline, id: "timeline-\(anchor)")
        html += "<h3>Logs</h3>\n"
        html += logs(r)
        html += "</section>\n"
        return html
    }

    static func steps(_ r: ScenarioResult, anchor: String) -> String {
        guard !r.scenario.steps.isEmpty else { return "" }
        var html = "<h3>Steps</h3>\n<table class=\"steps\">\n<thead><tr><th></th><th class=\"num\">#</th><th class=\"num\">at</th>"
            + "<th class=\"num\">took</th><th>state after</th><th>step</th><th>message</th></tr></thead>\n<tbody>\n"
        for (i, step) in r.scenario.steps.enumerated() {
            let id = "step-\(anchor)-\(i + 1)"
            if i < r.steps.count {
                let s = r.steps[i]
                html += "<tr id=\"\(id)\" class=\"step \(s.passed ? "ok" : "failed")\">"
                    + "<td class=\"mark\">\(s.passed ? "✓" : "✗")</td><td class=\"num\">\(i + 1)</td>"
                    + "<td class=\"num\">\(String(format: "%.2f s", s.elapsed))</td><td class=\"num\">\(String(format: "%.2f s", s.duration))</td>"
                    + "<td><span class=\"st\">\(escape(s.state))</span></td>"
                    + "<td><code>\(escape(s.step.text))</code> <span class=\"muted\">line \(s.step.line)</span></td>"
                    + "<td class=\"msg\"><pre>\(escape(s.message))</pre></td></tr>\n"
            } else {
                html += "<tr id=\"\(id)\" class=\"step notrun\"><td class=\"mark\">–</td><td class=\"num\">\(i + 1)</td><td></td><td></td><td></td>"
                    + "<td><code>\(escape(step.text))</code> <span class=\"muted\">line \(step.line)</span></td><td class=\"msg muted\">not run</td></tr>\n"
            }
        }
        return html + "</tbody>\n</table>\n"
    }

    static func timeline(_ entries: [TimelineEntry], id: String) -> String {
        var html = "<table class=\"timeline\" id=\"\(id)\">\n<thead><tr><th class=\"num\">t</th><th class=\"num\">Δ</th><th>kind</th>"
            + "<th>what happened</th><th class=\"num\">latency</th></tr></thead>\n<tbody>\n"
        if entries.isEmpty { html += "<tr class=\"empty\"><td colspan=\"5\" class=\"muted\">no trace records</td></tr>\n" }
        var previous: Double?
        for e in entries {
            let (text, latency) = splitLatency(e.text)
            let kind = cssName(e.kind)
            let delta = previous.map { String(format: "+%.0f ms", max(0, e.t - $0) * 1000) } ?? ""
            previous = e.t
            let slow = (latency ?? 0) >= 1000 ? " slow" : ""
            html += "<tr class=\"tl-entry tl-\(kind)\" data-kind=\"\(escape(e.kind))\">"
                + "<td class=\"num\">\(String(format: "%.3f s", e.t))</td><td class=\"num muted\">\(delta)</td>"
                + "<td><span class=\"kind\">\(escape(e.kind))</span></td><td>\(escape(text))</td>"
                + "<td class=\"num latency\(slow)\">\(latency.map { String(format: "%.1f ms", $0) } ?? "")</td></tr>\n"
        }
        return html + "</tbody>\n</table>\n"
    }

    /// "← evaluate success from x in 12.5 ms" → ("← evaluate success from x", 12.5).
    static func splitLatency(_ text: String) -> (String, Double?) {
        guard text.hasSuffix(" ms"), let r = text.range(of: " in ", options: .backwards),
              let value = Double(text[r.upperBound..<text.index(text.endIndex, offsetBy: -3)]) else { return (text, nil) }
        return (String(text[..<r.lowerBound]), value)
    }

    // MARK: - Logs

    static func logs(_ r: ScenarioResult) -> String {
        var html = "<div class=\"logs\">\n"
        if let trace = r.traceFile {
            html += "<p>hotspotd's trace: <a class=\"trace\" href=\"\(escape(fileURL(trace)))\">\(escape(trace))</a></p>\n"
        }
        guard !r.logDirectory.isEmpty else { return html + "<p class=\"muted\">no log folder (the lab was not built)</p>\n</div>\n" }
        let dir = absolute(r.logDirectory)
        html += "<p>Log folder: <a href=\"\(escape(fileURL(dir)))\">\(escape(dir))</a></p>\n"
        let files = logFiles(in: dir)
        guard !files.isEmpty else { return html + "<p class=\"muted\">no logs found there (removed since the run?)</p>\n</div>\n" }
        // Grouped by daemon folder: the lab's own files, each hotspot, each station.
        var groups: [(String, [String])] = []
        for file in files {
            let parts = file.split(separator: "/").map(String.init)
            let group = parts.count == 1 ? "lab" : (parts[0] == "stations" && parts.count > 2 ? "stations/" + parts[1] : parts[0])
            if let i = groups.firstIndex(where: { $0.0 == group }) { groups[i].1.append(file) } else { groups.append((group, [file])) }
        }
        html += "<ul class=\"loglist\">\n"
        for (group, members) in groups {
            html += "<li><span class=\"group\">\(escape(group))</span> "
            html += members.map { file in
                let path = dir + "/" + file
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
                return "<a class=\"log\" href=\"\(escape(fileURL(path)))\" title=\"\(escape(path)) (\(byteCount(size)))\">\(escape(file))</a>"
            }.joined(separator: " ")
            html += "</li>\n"
        }
        return html + "</ul>\n</div>\n"
    }

    /// The daemons' logs, traces, configuration files and captures under `directory`, relative to it, sorted.
    static func logFiles(in directory: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
        var files: [String] = []
        while let item = walker.nextObject() as? String {
            let name = (item as NSString).lastPathComponent
            guard name.hasSuffix(".log") || name == "trace.jsonl" || name.hasSuffix(".conf") || name.hasSuffix(".pcap") else { continue }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory + "/" + item, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            files.append(item)
        }
        // The lab's own files first, then each folder's.
        return files.sorted { a, b in
            let (ta, tb) = (a.contains("/"), b.contains("/"))
            return ta == tb ? a < b : !ta
        }
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    static func fileURL(_ path: String) -> String {
        "file://" + (absolute(path).addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? absolute(path))
    }

    static func byteCount(_ n: Int64) -> String {
        n < 1024 ? "\(n) B" : n < 1024 * 1024 ? String(format: "%.1f KB", Double(n) / 1024) : String(format: "%.1f MB", Double(n) / 1048576)
    }

    // MARK: - Text

    static func verdict(_ r: ScenarioResult) -> (label: String, css: String) {
        r.passed ? (r.flaky ? ("FLAKY", "flaky") : ("PASS", "pass")) : ("FAIL", "fail")
    }

    static func pathText(_ path: [String]) -> String {
        path.isEmpty ? "<span class=\"muted\">none</span>" : path.map { "<span class=\"st\">\(escape($0))</span>" }.joined(separator: " → ")
    }

    static func shorten(_ s: String, _ n: Int) -> String {
        let line = s.replacingOccurrences(of: "\n", with: " ")
        return line.count <= n ? line : String(line.prefix(n - 1)) + "…"
    }

    /// PortalKinds' `Markup.escape`, the package's one HTML/XML escaper.
    public static func escape(_ s: String) -> String { Markup.escape(s) }

    /// Element ids from scenario names: anything but letters, digits, `-`, `_` and `.` becomes `-`; a repeated name gets `-2`, `-3`.
    static func anchorNames(_ names: [String]) -> [String] {
        var seen: [String: Int] = [:]
        return names.map { name in
            var base = String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) ? $0 : "-" })
            if base.isEmpty { base = "scenario" }
            seen[base, default: 0] += 1
            return seen[base]! == 1 ? base : "\(base)-\(seen[base]!)"
        }
    }

    static func cssName(_ kind: String) -> String {
        String(kind.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") ? $0 : "-" })
    }

    static let css = """
    :root { --pass: #157347; --fail: #b42318; --flaky: #b45309; --accent: #1a5fd0; --line: #d9dde3; --muted: #667085; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1d2939; background: #f6f7f9; }
    header { background: #fff; border-bottom: 1px solid var(--line); padding: 14px 28px; }
    h1 { margin: 0 0 4px; font-size: 22px; }
    main { max-width: 1200px; margin: 0 auto; padding: 8px 28px 40px; }
    h2 { font-size: 19px; margin: 0 0 6px; }
    h3 { font-size: 15px; margin: 20px 0 6px; }
    section { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 16px 20px; margin: 18px 0; }
    section.scenario.fail { border-left: 5px solid var(--fail); }
    section.scenario.pass { border-left: 5px solid var(--pass); }
    section.scenario.flaky { border-left: 5px solid var(--flaky); }
    table { border-collapse: collapse; width: 100%; }
    th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eceef2; vertical-align: top; }
    th { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); border-bottom: 1px solid var(--line); }
    td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
    .muted { color: var(--muted); }
    .totals { margin: 0; color: #344054; }
    .verdict { display: inline-block; min-width: 52px; text-align: center; padding: 1px 8px; border-radius: 10px; font-weight: 700; font-size: 12px; color: #fff; }
    .verdict.pass { background: var(--pass); } .verdict.fail { background: var(--fail); } .verdict.flaky { background: var(--flaky); }
    table.summary tr.fail td { background: #fef3f2; }
    table.summary tr.flaky td { background: #fffaeb; }
    td.path { font-size: 13px; }
    table.summary td:first-child, table.summary td:nth-child(2), ul.loglist .group { white-space: nowrap; }
    td.msg { max-width: 520px; }
    .st { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; background: #eef2f8; border-radius: 4px; padding: 0 4px; white-space: nowrap; }
    .description { margin: 0 0 2px; }
    .meta { margin: 0 0 8px; color: var(--muted); font-size: 13px; word-break: break-all; }
    .callout { border-radius: 8px; padding: 8px 12px; margin: 8px 0; }
    .callout.fail { background: #fef3f2; border: 1px solid #fecdca; }
    pre { margin: 0; white-space: pre-wrap; word-break: break-word; font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
    .callout pre { margin-top: 4px; }
    code { font: 12.5px ui-monospace, "DejaVu Sans Mono", monospace; }
    table.steps td.mark { font-weight: 700; width: 20px; text-align: center; }
    table.steps tr.ok td.mark { color: var(--pass); }
    table.steps tr.failed td { background: #fef3f2; }
    table.steps tr.failed td.mark, table.steps tr.failed pre { color: var(--fail); }
    table.steps tr.failed { outline: 2px solid var(--fail); outline-offset: -2px; }
    table.steps tr.notrun td { color: #98a2b3; }
    svg.diagram { display: block; width: 100%; max-width: 940px; height: auto; margin: 0 auto; }
    svg.diagram .edge path { fill: none; stroke: #b7bcc4; stroke-width: 1.4; }
    svg.diagram .edge.taken path { stroke: var(--accent); stroke-width: 3.2; }
    svg.diagram .edge.offtable path { stroke: #c2410c; stroke-dasharray: 6 4; }
    svg.diagram .state rect { fill: #fff; stroke: #98a2b3; stroke-width: 1.3; }
    svg.diagram .state.any rect { stroke-dasharray: 4 3; fill: #f9fafb; }
    svg.diagram .state text { font: 14px system-ui, "DejaVu Sans", sans-serif; text-anchor: middle; fill: #98a2b3; }
    svg.diagram .state.taken rect { fill: #e8f0fe; stroke: var(--accent); stroke-width: 2.2; }
    svg.diagram .state.taken text { fill: #102a56; font-weight: 600; }
    svg.diagram .state.final rect { stroke-width: 4; }
    svg.diagram .state.failure-state.taken rect { fill: #fee4e2; stroke: var(--fail); }
    svg.diagram .start circle { fill: #475467; } svg.diagram .start path { stroke: #475467; stroke-width: 1.4; }
    svg.diagram .badge rect { fill: var(--accent); }
    svg.diagram .badge text { font: 700 12px system-ui, "DejaVu Sans", sans-serif; fill: #fff; text-anchor: middle; }
    ol.transitions { columns: 2; margin: 4px 0 0; font-size: 13px; }
    table.timeline { font-size: 13px; }
    table.timeline td { padding: 2px 8px; }
    .kind { display: inline-block; min-width: 74px; font-size: 11.5px; border-radius: 4px; padding: 0 5px; background: #f2f4f7; color: #475467; }
    tr.tl-state td { background: #eef4ff; } tr.tl-state .kind { background: var(--accent); color: #fff; }
    tr.tl-command .kind { background: #dbeafe; color: #1e40af; }
    tr.tl-response .kind { background: #dcfce7; color: #166534; }
    tr.tl-user .kind { background: #fef3c7; color: #92400e; }
    tr.tl-irregular td, tr.tl-rejected td { background: #fffaeb; }
    td.latency { color: #166534; } td.latency.slow { color: var(--fail); font-weight: 600; }
    .tl-filter { margin: 2px 0 6px; font-size: 12.5px; color: #475467; }
    .tl-filter label { margin-right: 12px; white-space: nowrap; cursor: pointer; }
    ul.loglist { list-style: none; padding: 0; margin: 4px 0; }
    ul.loglist li { margin: 3px 0; }
    ul.loglist .group { display: inline-block; min-width: 140px; font-weight: 600; }
    a.log { font: 12.5px ui-monospace, "DejaVu Sans Mono", monospace; margin-right: 10px; }
    a { color: var(--accent); }
    """

    /// Per-kind filters over each timeline (the page works without them).
    static let script = """
    document.querySelectorAll('table.timeline').forEach(function (table) {
      var rows = Array.prototype.slice.call(table.querySelectorAll('tr.tl-entry'));
      if (!rows.length) return;
      var counts = {};
      rows.forEach(function (r) { counts[r.dataset.kind] = (counts[r.dataset.kind] || 0) + 1; });
      var bar = document.createElement('div');
      bar.className = 'tl-filter';
      bar.id = 'filter-' + table.id;
      bar.append('show: ');
      Object.keys(counts).forEach(function (kind) {
        var label = document.createElement('label');
        var box = document.createElement('input');
        box.type = 'checkbox'; box.checked = true; box.dataset.kind = kind;
        box.addEventListener('change', function () {
          rows.forEach(function (r) { if (r.dataset.kind === kind) r.hidden = !box.checked; });
        });
        label.append(box, ' ' + kind + ' (' + counts[kind] + ')');
        bar.append(label);
      });
      table.parentNode.insertBefore(bar, table);
    });
    document.body.dataset.js = 'ready';
    """
}
