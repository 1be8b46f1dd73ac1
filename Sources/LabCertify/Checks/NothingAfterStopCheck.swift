import HotspotProtocol

/// `nothing-after-stop` (a provider pair): no command is answered by a provider after hotspotd stopped it (until
/// it is launched or registers again).
struct NothingAfterStopCheck: CertifyCheck {
    let id = "nothing-after-stop"
    let title = "no command is answered by a provider after its stop"
    let runs: [CertificationRun] = [.scan, .captive]
    let position = 16.0
    let judgesProviders = true

    func judge(_ j: Judge) -> CheckResult {
        var bad: [String] = []
        for run in runs {
            var stopped: Set<String> = []
            for r in j.records(run) {
                switch r.record {
                case .providerStopped(let p): stopped.insert(p.role)
                case .providerLaunched(let p): stopped.remove(p.role)
                case .providerRegistered(let p): stopped.remove(p.role)
                case .response(let a):
                    if let type = a.commandType ?? j.command(run, a)?.commandType, stopped.contains(Judge.role(handling: type)) {
                        bad.append(j.evidence(run, r))
                    }
                case .rejected(let x):
                    if let id = x.command, let type = j.records(run).of(\.command).first(where: { $0.id == id })?.commandType,
                       stopped.contains(Judge.role(handling: type)) {
                        bad.append(j.evidence(run, r))
                    }
                default:
                    break
                }
            }
        }
        return bad.isEmpty ? j.pass(self, "no command answered by a provider after its stop", [])
            : j.fail(self, "\(bad.count) answer(s) from a provider after its stop", bad)
    }
}
