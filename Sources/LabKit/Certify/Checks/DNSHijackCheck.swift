import HotspotProtocol

/// `dns-hijack`: under a DNS hijack (every name answers with the gateway), maintain is not answered success: a
/// name that resolves is not the internet. Owns a maintain on the café answered success during the hijack.
struct DNSHijackCheck: CertifyCheck {
    let id = "dns-hijack"
    let title = "does not trust DNS: under a DNS hijack, maintain is not answered success"
    let runs: [CertificationRun] = [.dnsHijack]
    let position = 12.0

    func judge(_ j: Judge) -> CheckResult {
        let trace = j.records(.dnsHijack)
        guard let mark = trace.firstIndex(where: { GroundTruth.mark($0)?.certify == RunDriver.hijackMark }) else {
            return j.fail(self, "the run never hijacked DNS (the helper did not sign in first?)", j.notes(.dnsHijack))
        }
        guard let maintain = trace[mark...].of(\.command).first(where: { $0.commandType == "maintain" }) else {
            return j.fail(self, "no maintain was sent while DNS was hijacked", [j.evidence(.dnsHijack, trace[mark])] + j.notes(.dnsHijack))
        }
        guard let answer = trace[mark...].of(\.response).first(where: { $0.command == maintain.id }) else {
            return j.fail(self, "maintain under the hijack was not answered", [j.evidence(.dnsHijack, trace[mark]), j.evidence(.dnsHijack, maintain.entry)])
        }
        let shown = [j.evidence(.dnsHijack, trace[mark]), j.evidence(.dnsHijack, answer.entry)]
        return answer.result == "success"
            ? j.fail(self, "answered maintain success while every name resolved to the gateway: a name that resolves is not the internet (check the probe's content)", shown)
            : j.pass(self, "answered maintain \(answer.result) while DNS was hijacked", shown)
    }

    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? {
        guard let hijack = truth.hijack, let (r, command) = truth.judged(entry), r.commandType == "maintain",
              command.network?.ssid.text == judge.home, r.result == "success" else { return nil }
        return CertifyCause(reason: "maintain answered success at seq \(entry.seq) while every name resolved to the gateway (since seq \(hijack.seq)): a name that resolves is not the internet",
                            context: [command.entry, hijack])
    }
}
