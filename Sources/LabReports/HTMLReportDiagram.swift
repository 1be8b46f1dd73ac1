import Foundation
import HotspotCore

/// The report's state diagram: `TransitionTable` as an inline SVG, states at fixed positions, the path a
/// scenario took drawn over it (split from HTMLReport.swift).
extension HTMLReport {
    struct Point { var x: Double, y: Double }

    /// Fixed positions (centres) in a 1000 × 500 view: the main flow left to right, Failure above, LoggingOff below.
    static let positions: [String: Point] = [
        "Inactive": Point(x: 215, y: 250),
        "Evaluating": Point(x: 390, y: 150),
        "Authenticating": Point(x: 640, y: 150),
        "PresentingUI": Point(x: 890, y: 150),
        "Failure": Point(x: 765, y: 45),
        "Maintaining": Point(x: 390, y: 350),
        "Authenticated": Point(x: 640, y: 350),
        "LoggingOff": Point(x: 640, y: 450),
        "*": Point(x: 50, y: 250),
    ]
    static let boxWidth = 140.0, boxHeight = 38.0, anyWidth = 84.0

    /// Long edges routed around the other states (cubic control points).
    static let routes: [String: (Point, Point)] = [
        "Failure>Inactive": (Point(x: 320, y: 30), Point(x: 215, y: 100)),
        "LoggingOff>Inactive": (Point(x: 320, y: 475), Point(x: 215, y: 420)),
        "PresentingUI>Evaluating": (Point(x: 800, y: 88), Point(x: 480, y: 88)),
    ]

    /// The table's edges, merged per (from, to) pair; `*` is "any state".
    static func edges() -> [(from: String, to: String, triggers: [String])] {
        var result: [(from: String, to: String, triggers: [String])] = []
        for row in TransitionTable.rows {
            let from = row.from?.rawValue ?? "*"
            if let i = result.firstIndex(where: { $0.from == from && $0.to == row.to.rawValue }) {
                result[i].triggers.append(row.trigger.description)
            } else {
                result.append((from, row.to.rawValue, [row.trigger.description]))
            }
        }
        return result
    }

    /// The transitions of a run: consecutive entries of the states entered, starting at Inactive.
    public static func transitions(_ path: [String]) -> [(from: String, to: String)] {
        var from = HotspotState.inactive.rawValue
        return path.map { to in
            defer { from = to }
            return (from, to)
        }
    }

    /// The diagram edge a transition took: its own row, else the "any state" row into its target, else none (off the table).
    static func edgeKey(_ from: String, _ to: String, edges: [(from: String, to: String, triggers: [String])]) -> String? {
        if edges.contains(where: { $0.from == from && $0.to == to }) { return "\(from)>\(to)" }
        if positions[from] != nil, edges.contains(where: { $0.from == "*" && $0.to == to }) { return "*>\(to)" }
        return nil
    }

    static func diagram(path: [String], id: String, index: Int, final: String?) -> String {
        let edges = edges()
        let taken = transitions(path)
        var order: [String: [Int]] = [:]
        var offTable: [(from: String, to: String, steps: [Int])] = []
        for (i, t) in taken.enumerated() {
            if let key = edgeKey(t.from, t.to, edges: edges) {
                order[key, default: []].append(i + 1)
            } else if positions[t.from] != nil, positions[t.to] != nil, t.from != t.to {
                if let j = offTable.firstIndex(where: { $0.from == t.from && $0.to == t.to }) { offTable[j].steps.append(i + 1) } else { offTable.append((t.from, t.to, [i + 1])) }
            }
        }
        let statesTaken = Set(path + (path.isEmpty ? [] : [HotspotState.inactive.rawValue]))
        let arrow = "arrow-\(index)", arrowTaken = "arrow-taken-\(index)", arrowOff = "arrow-off-\(index)"
        var svg = "<svg class=\"diagram\" id=\"\(id)\" viewBox=\"0 0 1000 500\" role=\"img\" aria-label=\"state diagram with the path taken\" xmlns=\"http://www.w3.org/2000/svg\">\n"
        svg += "<defs>"
        for (name, color, size) in [(arrow, "#b7bcc4", 9), (arrowTaken, "#1a5fd0", 13), (arrowOff, "#c2410c", 13)] {
            svg += "<marker id=\"\(name)\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"\(size)\" markerHeight=\"\(size)\" orient=\"auto\">"
                + "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"\(color)\"/></marker>"
        }
        svg += "</defs>\n"
        var badges = ""
        func draw(from: String, to: String, classes: String, marker: String, title: String, steps: [Int]?) {
            guard let a = positions[from], let b = positions[to] else { return }
            let key = "\(from)>\(to)"
            let reverse = edges.contains { $0.from == to && $0.to == from }
            let (c1, c2): (Point, Point)
            if let route = routes[key] {
                (c1, c2) = route
            } else {
                let (dx, dy) = (b.x - a.x, b.y - a.y)
                let length = max(1, (dx * dx + dy * dy).squareRoot())
                let bend = reverse ? 9.0 : 0
                let (nx, ny) = (-dy / length * bend, dx / length * bend)
                c1 = Point(x: a.x + dx / 3 + nx, y: a.y + dy / 3 + ny)
                c2 = Point(x: a.x + 2 * dx / 3 + nx, y: a.y + 2 * dy / 3 + ny)
            }
            let start = boundary(of: from, toward: c1)
            let end = boundary(of: to, toward: c2)
            svg += "<g class=\"\(classes)\" data-from=\"\(escape(from))\" data-to=\"\(escape(to))\"><title>\(escape(title))</title>"
                + "<path d=\"M\(f(start.x)),\(f(start.y)) C\(f(c1.x)),\(f(c1.y)) \(f(c2.x)),\(f(c2.y)) \(f(end.x)),\(f(end.y))\" marker-end=\"url(#\(marker))\"/></g>\n"
            if let steps {
                let mid = Point(x: (start.x + 3 * c1.x + 3 * c2.x + end.x) / 8, y: (start.y + 3 * c1.y + 3 * c2.y + end.y) / 8)
                let label = steps.map(String.init).joined(separator: ",")
                let w = max(20, Double(label.count) * 7.5 + 10)
                badges += "<g class=\"badge\"><rect x=\"\(f(mid.x - w / 2))\" y=\"\(f(mid.y - 10))\" width=\"\(f(w))\" height=\"20\" rx=\"10\"/>"
                    + "<text x=\"\(f(mid.x))\" y=\"\(f(mid.y + 4.5))\">\(label)</text></g>\n"
            }
        }
        for edge in edges {
            let key = "\(edge.from)>\(edge.to)"
            let steps = order[key]
            draw(from: edge.from, to: edge.to, classes: "edge" + (steps == nil ? "" : " taken"), marker: steps == nil ? arrow : arrowTaken,
                 title: "\(edge.from == "*" ? "any state" : edge.from) → \(edge.to): \(edge.triggers.joined(separator: " / "))", steps: steps)
        }
        for extra in offTable {
            draw(from: extra.from, to: extra.to, classes: "edge taken offtable", marker: arrowOff,
                 title: "\(extra.from) → \(extra.to): not in the transition table", steps: extra.steps)
        }
        // The start arrow, the states, then the order badges on top.
        // The initial state's marker sits above and left of Inactive, clear of the edges arriving at its top.
        let inactive = positions["Inactive"]!
        let dot = Point(x: inactive.x - 95, y: inactive.y - 62)
        let tip = boundary(of: "Inactive", toward: dot)
        svg += "<g class=\"start\"><title>initial state</title><circle cx=\"\(f(dot.x))\" cy=\"\(f(dot.y))\" r=\"5\"/>"
            + "<path d=\"M\(f(dot.x)),\(f(dot.y)) L\(f(tip.x)),\(f(tip.y))\" marker-end=\"url(#\(arrow))\"/></g>\n"
        for state in HotspotState.allCases.map(\.rawValue) + ["*"] {
            let p = positions[state]!
            let w = state == "*" ? anyWidth : boxWidth
            var classes = state == "*" ? "state any" : "state"
            if statesTaken.contains(state) || (state == "*" && order.keys.contains { $0.hasPrefix("*>") }) { classes += " taken" }
            if state == final { classes += " final" }
            if state == HotspotState.failure.rawValue { classes += " failure-state" }
            svg += "<g class=\"\(classes)\" data-state=\"\(escape(state))\"><rect x=\"\(f(p.x - w / 2))\" y=\"\(f(p.y - boxHeight / 2))\" "
                + "width=\"\(f(w))\" height=\"\(f(boxHeight))\" rx=\"9\"/><text x=\"\(f(p.x))\" y=\"\(f(p.y + 5))\">\(state == "*" ? "any state" : escape(state))</text></g>\n"
        }
        svg += badges
        return svg + "</svg>\n"
    }

    /// The numbered transitions under the diagram, each with the triggers of its row.
    static func transitionList(_ path: [String]) -> String {
        let taken = transitions(path)
        guard !taken.isEmpty else { return "<p class=\"muted\">No transition: hotspotd stayed in Inactive (or left no trace).</p>\n" }
        let edges = edges()
        var html = "<ol class=\"transitions\">\n"
        for t in taken {
            let why: String
            switch edgeKey(t.from, t.to, edges: edges) {
            case let key? where key.hasPrefix("*"):
                why = (edges.first { $0.from == "*" && $0.to == t.to }?.triggers ?? []).joined(separator: " / ") + " (any state)"
            case let key?:
                why = (edges.first { "\($0.from)>\($0.to)" == key }?.triggers ?? []).joined(separator: " / ")
            case nil:
                why = "not in the transition table"
            }
            html += "<li><span class=\"st\">\(escape(t.from))</span> → <span class=\"st\">\(escape(t.to))</span> <span class=\"muted\">\(escape(why))</span></li>\n"
        }
        return html + "</ol>\n"
    }

    static func boundary(of state: String, toward target: Point) -> Point {
        let c = positions[state]!
        let hw = (state == "*" ? anyWidth : boxWidth) / 2 + 2, hh = boxHeight / 2 + 2
        let (dx, dy) = (target.x - c.x, target.y - c.y)
        guard dx != 0 || dy != 0 else { return c }
        let t = min(dx == 0 ? .infinity : hw / abs(dx), dy == 0 ? .infinity : hh / abs(dy))
        return Point(x: c.x + dx * t, y: c.y + dy * t)
    }

    static func f(_ v: Double) -> String { String(format: "%.1f", v) }
}
