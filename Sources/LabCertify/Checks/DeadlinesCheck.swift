import HotspotProtocol

/// `deadlines`: every command is answered before its deadline (hotspotd's `irregular noAnswer` says one was not).
/// Owns each `noAnswer`, except the commands of a provider that answered start() false (start-stop's).
struct DeadlinesCheck: CertifyCheck {
    let id = "deadlines"
    let title = "answers every command before its deadline"
    let runs: [CertificationRun] = [.scan, .captive]
    let position = 1.0

    func judge(_ j: Judge) -> CheckResult {
        var late: [String] = []
        var answered = 0
        for run in runs {
            late += j.records(run).filter { $0.record.irregular?.irregularity == "noAnswer" }.map { j.evidence(run, $0) }
            answered += j.records(run).of(\.response).count
        }
        return late.isEmpty ? j.pass(self, "\(answered) answers, none after its deadline", [])
            : j.fail(self, "\(late.count) command(s) unanswered by the deadline", late)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        guard let i = entry.record.irregular, i.irregularity == "noAnswer" else { return nil }
        // A provider that answered start() false gets no command: its commands go unanswered because of that
        // start, which start-stop owns, not because of a deadline.
        if truth.failedStarts.contains(Judge.role(handling: i.commandType ?? "")) { return nil }
        return CertifyCause(reason: "no answer to \(i.commandType ?? "a") command \(i.command) by its deadline")
    }
}
