import Foundation
import HotspotProtocol

/// What must be the same when a scenario runs in the radio tier and in the native tier (docs/SCENARIOS.md, "Tiers"):
/// the states entered, the commands hotspotd sent (in order, to which helper), the helpers' results, and every
/// step's outcome, up to the end of the scenario's last state check (`checkedPart`). Timing, addresses, MACs and the
/// `via` of events are not part of it.
public struct TierOutcome: Sendable, Equatable, Codable {
    public var scenario: String
    public var tier: String
    public var path: [String]
    /// `evaluate -> com.hotspotlab.portal`, in the order hotspotd sent them.
    public var commands: [String]
    /// `evaluate com.hotspotlab.portal success`, sorted (two helpers answering one command may answer in any order).
    public var results: [String]
    /// `ok join: Cafe Lumiere` / `FAILED ...`, every step run.
    public var steps: [String]

    public init(scenario: String, tier: String, path: [String], commands: [String], results: [String], steps: [String]) {
        self.scenario = scenario
        self.tier = tier
        self.path = path
        self.commands = commands
        self.results = results
        self.steps = steps
    }

    public init(_ result: ScenarioResult) {
        self.init(scenario: result.scenario.name, tier: result.tier, path: result.checkedPath, commands: result.commands,
                  results: result.results, steps: result.steps.map { ($0.passed ? "ok " : "FAILED ") + $0.step.text })
    }

    /// The step kinds that check states: the outcome ends where the last of them ended.
    static let stateChecks: Set<String> = ["wait-state", "expect-states"]

    /// The part of a run both tiers must agree on: hotspotd's trace up to the end of the scenario's last state check
    /// (the `labAction` record of the step after it; the whole trace when it is the last step). After that, timers keep
    /// running (a maintain every few seconds) while the remaining steps take their time, which differs with the tier
    /// and the machine's load and is not part of what the scenario claims.
    static func checkedPart(_ records: [TraceEntry], scenario: Scenario) -> ArraySlice<TraceEntry> {
        guard let last = scenario.steps.lastIndex(where: { stateChecks.contains($0.kind) }) else { return records[...] }
        let cut = records.firstIndex { $0.record.labAction?.action.index == last + 1 } ?? records.count
        return records[..<cut]
    }

    /// The state path, commands and results of a run's checked part (`checkedPart`), from hotspotd's trace, without
    /// the maintain rounds that changed nothing and were followed by another (`withoutRepeatedRounds`).
    static func checked(_ records: [TraceEntry], scenario: Scenario) -> (path: [String], commands: [String], results: [String]) {
        let part = withoutRepeatedRounds(checkedPart(records, scenario: scenario))
        let path = part.compactMap { $0.record.transition?.to }
        let (commands, results) = commandsAndResults(part[...])
        return (path, commands, results)
    }

    /// `records` without each maintain round that changed nothing (Authenticated -> Maintaining -> Authenticated) and
    /// was followed by another round (the next transition is to Maintaining again): its transitions, commands and
    /// answers. How many such rounds fit in between two steps is the machine's speed, not the helper's doing: with a
    /// 3 s maintain timer, a loaded machine fits one more in before a lab action takes effect (CI run 17: a
    /// `maintain success` in the radio tier that the native tier did not have). The last round before anything else
    /// (a failure, a step's own change) is kept, as is every round that changed something.
    static func withoutRepeatedRounds(_ records: ArraySlice<TraceEntry>) -> [TraceEntry] {
        let all = Array(records)
        let transitions = all.indices.filter { all[$0].record.transition != nil }
        var dropped = Set<Int>()
        for (n, start) in transitions.enumerated() where n + 2 < transitions.count {
            let back = transitions[n + 1], next = transitions[n + 2]
            guard let into = all[start].record.transition, into.from == "Authenticated", into.to == "Maintaining",
                  let out = all[back].record.transition, out.from == "Maintaining", out.to == "Authenticated",
                  all[next].record.transition?.to == "Maintaining" else { continue }
            let round = start..<next
            // Only a round whose every answer within it was success (a no-op round); its commands and answers go too.
            let ids = Set(round.compactMap { all[$0].record.command?.id })
            guard round.allSatisfy({ all[$0].record.response.map { $0.result == "success" } ?? true }) else { continue }
            for i in round where all[i].record.transition != nil || all[i].record.command != nil
                || all[i].record.response.map({ ids.contains($0.command) }) == true {
                dropped.insert(i)
            }
        }
        return all.indices.filter { !dropped.contains($0) }.map { all[$0] }
    }

    /// The commands and results of a run, from hotspotd's trace (`command` and `response` records).
    static func commandsAndResults(_ records: ArraySlice<TraceEntry>) -> (commands: [String], results: [String]) {
        var commands: [String] = []
        var results: [String] = []
        for entry in records {
            switch entry.record {
            case .command(let c): commands.append("\(c.commandType) -> \(c.helper)")
            case .response(let r): results.append("\(r.commandType ?? "?") \(r.helper) \(r.result)")
            default: break
            }
        }
        return (commands, results.sorted())
    }

    /// Where `native` departs from `radio` (empty: the same outcome), one line per difference.
    public static func differences(radio: TierOutcome, native: TierOutcome) -> [String] {
        var lines: [String] = []
        func compare(_ what: String, _ a: [String], _ b: [String]) {
            guard a != b else { return }
            let index = Array(zip(a, b)).firstIndex { $0.0 != $0.1 } ?? min(a.count, b.count)
            lines.append("\(radio.scenario): \(what) part at #\(index + 1): radio \(index < a.count ? a[index] : "(end)"), native \(index < b.count ? b[index] : "(end)")"
                         + " (radio \(a.count), native \(b.count))")
        }
        compare("state path", radio.path, native.path)
        compare("commands", radio.commands, native.commands)
        compare("results", radio.results, native.results)
        compare("steps", radio.steps, native.steps)
        return lines
    }

    /// The outcomes in a `hotspot-lab run --json` report (or the recorded radio outcomes, the same shape).
    public static func load(report path: String) throws -> [TierOutcome] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any], let scenarios = root["scenarios"] as? [[String: Any]] else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: path, NSLocalizedDescriptionKey: "\(path): expected {\"scenarios\": [...]}"])
        }
        return scenarios.map { s in
            let steps = (s["steps"] as? [[String: Any]] ?? []).map { (($0["passed"] as? Bool) == true ? "ok " : "FAILED ") + (($0["step"] as? String) ?? "?") }
            return TierOutcome(scenario: s["name"] as? String ?? "?", tier: s["tier"] as? String ?? "?",
                               path: s["checkedPath"] as? [String] ?? s["path"] as? [String] ?? [],
                               commands: s["commands"] as? [String] ?? [], results: s["results"] as? [String] ?? [], steps: steps)
        }
    }
}
