import HotspotProtocol

/// `dns-hijack`: under a DNS hijack (every name answers with the gateway), maintain is not answered success: a
/// name that resolves is not the internet. Owns a maintain on the café answered success during the hijack.
struct DNSHijackCheck: CertifyCheck {
    let id = "dns-hijack"
    let title = "does not trust DNS: under a DNS hijack, maintain is not answered success"
    let runs: [CertificationRun] = [.dnsHijack]
    let position = 12.0

    /// The maintain answer that decides the check, from the mark that the hijack starts: the first maintain sent after
    /// the mark that it is in effect, or one sent during the switch (between the two marks, its probe on either side of
    /// it) and answered anything but success (its success proves nothing: the probe may have run before the switch).
    /// Nil while there is none yet.
    static func decisive(in trace: [TraceEntry]) -> Traced<TraceRecord.Response>? {
        guard let effect = trace.firstIndex(where: { GroundTruth.mark($0)?.certify == RunDriver.hijackMark }) else { return nil }
        let start = trace[..<effect].lastIndex(where: { GroundTruth.mark($0)?.certify == RunDriver.hijackStartingMark }) ?? effect
        let restored = trace[effect...].firstIndex(where: { GroundTruth.mark($0)?.certify == RunDriver.dnsRestoredMark }) ?? trace.endIndex
        let window = trace[start..<restored]
        for maintain in window.of(\.command) where maintain.commandType == "maintain" {
            guard let answer = window.of(\.response).first(where: { $0.command == maintain.id }) else { return nil }
            if maintain.entry.seq > trace[effect].seq || answer.result != "success" { return answer }
        }
        return nil
    }

    func judge(_ j: Judge) -> CheckResult {
        let trace = j.records(.dnsHijack)
        guard let mark = trace.firstIndex(where: { GroundTruth.mark($0)?.certify == RunDriver.hijackMark }) else {
            return j.fail(self, "the run never hijacked DNS (the helper did not sign in first?)", j.notes(.dnsHijack))
        }
        guard let answer = Self.decisive(in: trace) else {
            let maintains = trace[mark...].of(\.command).filter { $0.commandType == "maintain" }
            return j.fail(self, maintains.isEmpty ? "no maintain was sent while DNS was hijacked" : "maintain under the hijack was not answered",
                          [j.evidence(.dnsHijack, trace[mark])] + maintains.prefix(2).map { j.evidence(.dnsHijack, $0.entry) } + j.notes(.dnsHijack))
        }
        let shown = [j.evidence(.dnsHijack, trace[mark]), j.evidence(.dnsHijack, answer.entry)]
        return answer.result == "success"
            ? j.fail(self, "answered maintain success while every name resolved to the gateway: a name that resolves is not the internet (check the probe's content)", shown)
            : j.pass(self, "answered maintain \(answer.result) while DNS was hijacked", shown)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        // Only a maintain sent once the hijack was in effect: one sent during the switch may have probed before it.
        guard let hijack = truth.hijackInEffect, let (r, command) = truth.judged(entry), r.commandType == "maintain",
              command.entry.seq > hijack.seq, command.network?.ssid.text == judge.home, r.result == "success" else { return nil }
        return CertifyCause(reason: "maintain answered success at seq \(entry.seq) while every name resolved to the gateway (since seq \(hijack.seq)): a name that resolves is not the internet",
                            context: [command.entry, hijack])
    }
}
