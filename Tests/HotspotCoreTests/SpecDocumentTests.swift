import Foundation
import HotspotCore
import Testing

/// docs/state-machine.md is generated from TransitionTable; the diagrams are drawn from the same rows.
@Suite("Spec document")
struct SpecDocumentTests {
    static let docsFolder = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs")

    @Test("docs/state-machine.md is the current `hotspot-lab spec --format markdown` output")
    func stateMachineDocIsCurrent() throws {
        let url = Self.docsFolder.appendingPathComponent("state-machine.md")
        let onDisk = try String(contentsOf: url, encoding: .utf8)
        let generated = SpecDocument.render(.markdown)
        #expect(onDisk == generated, """
            \(url.path) is stale: the transition table changed. Regenerate it with
                swift run hotspot-lab spec --format markdown > docs/state-machine.md
            """)
    }

    @Test("docs/DECISIONS.md lists every decision of TransitionTable.decisions")
    func decisionsDocIsCurrent() throws {
        let url = Self.docsFolder.appendingPathComponent("DECISIONS.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        for decision in TransitionTable.decisions {
            #expect(text.contains(decision), "docs/DECISIONS.md does not state: \(decision)")
        }
    }

    @Test("markdown: every row, state, decision and command is in the document")
    func markdownComplete() {
        let doc = SpecDocument.render(.markdown)
        for row in TransitionTable.rows {
            let line = "| \(row.from?.rawValue ?? "any state") | \(row.trigger) | \(row.to) |"
            #expect(doc.contains(line), "missing row \(row.specRow)")
            #expect(doc.contains(row.specRow))
        }
        for state in HotspotState.allCases { #expect(doc.contains("| \(state) |")) }
        for decision in TransitionTable.decisions { #expect(doc.contains("- \(decision)")) }
        #expect(doc.contains("| presentUI | 4 | success, unsupportedNetwork, temporaryFailure, failure | none |"))
        #expect(doc.contains("| evaluate | 2 | success | 45 s |"))
    }

    @Test("dot: every state and every row's edge with its trigger")
    func dotComplete() {
        let dot = SpecDocument.render(.dot)
        #expect(dot.hasPrefix("digraph hotspot {") && dot.hasSuffix("}\n"))
        #expect(dot.contains("start -> Inactive;"))
        for state in HotspotState.allCases {
            #expect(dot.contains("\(state.rawValue) ->") || dot.contains("-> \(state.rawValue)"), "state \(state) missing")
        }
        for row in TransitionTable.rows {
            let prefix = "    \(row.from?.rawValue ?? "any") -> \(row.to.rawValue) [label=\""
            let edge = dot.split(separator: "\n").first { $0.hasPrefix(prefix) }
            #expect(edge != nil, "no edge for \(row.specRow)")
            let label = row.trigger.description.replacing("\"", with: "\\\"")
            #expect(edge?.contains(label) == true, "edge \(String(describing: edge)) lacks \(label)")
        }
    }

    @Test("mermaid: every state and every row's edge with its trigger")
    func mermaidComplete() {
        let mermaid = SpecDocument.render(.mermaid)
        #expect(mermaid.hasPrefix("stateDiagram-v2\n    [*] --> Inactive\n"))
        for state in HotspotState.allCases { #expect(mermaid.contains(state.rawValue), "state \(state) missing") }
        let lines = mermaid.split(separator: "\n")
        for row in TransitionTable.rows {
            let prefix = "    \(row.from?.rawValue ?? "AnyState") --> \(row.to.rawValue): "
            let edge = lines.first { $0.hasPrefix(prefix) }
            #expect(edge != nil, "no edge for \(row.specRow)")
            let label = row.trigger.description.replacing(":", with: " -")
            #expect(edge?.contains(label) == true, "edge \(String(describing: edge)) lacks \(label)")
        }
        // Mermaid labels may not hold a second colon.
        for line in lines where line.contains("-->") {
            #expect(line.filter { $0 == ":" }.count <= 1, "\(line)")
        }
    }

    @Test("the table has one row per (state, trigger) and every state is reachable from Inactive")
    func tableWellFormed() {
        var reachable: Set<HotspotState> = [.inactive]
        var grew = true
        while grew {
            grew = false
            for row in TransitionTable.rows where row.from.map(reachable.contains) ?? true {
                if reachable.insert(row.to).inserted { grew = true }
            }
        }
        #expect(reachable == Set(HotspotState.allCases))
        for state in HotspotState.allCases {
            #expect(TransitionTable.entryActions[state] != nil, "\(state) has no entry actions")
        }
        #expect(TransitionTable.row(from: .authenticating, on: .result(.authenticate, .uiRequired))?.to == .presentingUI)
        #expect(TransitionTable.row(from: .presentingUI, on: .result(.presentUI, .uiRequired)) == nil)
        #expect(TransitionTable.row(from: .maintaining, on: .connectivityLost)?.to == .inactive)
    }
}
