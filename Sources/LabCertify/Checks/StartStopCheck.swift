import HotspotProtocol

/// `start-stop` (a provider pair): each provider launched answers start (true), and answers stop and exits 0
/// (`Judge.lifecycle`). Owns a start() answered false (the provider's commands then count as not answered).
struct StartStopCheck: CertifyCheck {
    let id = "start-stop"
    let title = "each provider launched answers start, and answers stop and exits 0"
    let runs: [CertificationRun] = [.scan, .captive]
    let position = 15.0
    let judgesProviders = true

    func judge(_ j: Judge) -> CheckResult {
        var bad: [String] = []
        var launches = 0
        var stops = 0
        for run in runs { (launches, stops, bad) = j.lifecycle(run, launches, stops, bad) }
        if launches == 0 { return j.fail(self, "no provider was launched", runs.flatMap { j.notes($0) }) }
        return bad.isEmpty ? j.pass(self, "\(launches) launch(es), each answered start; \(stops) stop(s), each answered and followed by exit 0", [])
            : j.fail(self, "\(bad.count) lifecycle rule(s) broken", bad)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        // A command held for a launch that never answered start, unanswered by its deadline: the start's failure.
        if let x = entry.record.irregular, x.irregularity == "noAnswer", let type = x.commandType,
           let launch = judge.unstartedLaunch(before: entry, role: Judge.role(handling: type)) {
            return CertifyCause(reason: "the \(Judge.role(handling: type)) launched for \(type) command \(x.command) never answered start "
                + "(the command it was held for went unanswered by its deadline)", context: [launch])
        }
        guard let s = entry.record.providerStarted, !s.ok else { return nil }
        return CertifyCause(reason: "the \(s.role) of \(s.app) answered start() false "
            + "(a provider that does not start gets no command; each of them counts as not answered)")
    }
}
