import HotspotProtocol

/// One certify check (docs/CERTIFY.md): what it judges, on its own rule, from the runs' traces, and what it owns
/// as a cause: the answers that deviate from the lab's ground truth in its domain. Each check is one file under
/// `Certify/Checks/`, a type named as its file that conforms to this protocol.
///
/// Registered the way step kinds are: the build-tool plugin `StepRegistryPlugin` lists the files of
/// `Certify/Checks/` on every build of LabKit and generates `CertifyChecks.declared` (one `TypeName()` per file,
/// named after it), so adding a check is its file alone and its row in docs/CERTIFY.md. A file whose type is
/// missing or misnamed fails the build at the generated line. Reports list checks by `position`.
protocol CertifyCheck: Sendable {
    /// The check's name on the command line (`--check ID`) and in reports.
    var id: String { get }
    /// What a helper that passes does, in one line.
    var title: String { get }
    /// The runs whose traces the check reads.
    var runs: [CertificationRun] { get }
    /// Where reports and `certify --list` list it (ascending).
    var position: Double { get }
    /// A provider pair's check (`certify --evaluation-provider/--authentication-provider`), not a helper's.
    var judgesProviders: Bool { get }
    /// A failure fails the certification (default true).
    var required: Bool { get }

    /// The check's own rule over the runs' traces.
    func judge(_ judge: Judge) -> CheckResult

    /// The deviation this check owns at one record of a run, given the ground truth before the record (the
    /// lab's actions, the gate, the helper's logins and logoffs so far); nil: not this check's. The first
    /// deviation of a run is the run's cause; a check that owns one fails at its first (docs/CERTIFY.md, "Cause first").
    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause?

    /// Where the check's cause is listed among those of other checks at the same record (ascending; default 0).
    var causeOrder: Int { get }
}

extension CertifyCheck {
    var judgesProviders: Bool { false }
    var required: Bool { true }
    var causeOrder: Int { 0 }
    func cause(of entry: TraceEntry, truth: GroundTruth, judge: Judge) -> CertifyCause? { nil }

    /// The check as reports and the command line show it.
    var descriptor: CertificationCheck { CertificationCheck(id: id, title: title, required: required, runs: runs) }
}

/// What a check blames a record for: why, and the records that show the ground truth it broke.
struct CertifyCause {
    var reason: String
    var context: [TraceEntry?] = []
}

/// Every check, from the generated `CertifyChecks.declared`, in report order.
enum CertifyChecks {
    static let all: [any CertifyCheck] = declared.sorted { $0.position < $1.position }
    /// The helper's checks.
    static let helper = all.filter { !$0.judgesProviders }
    /// A provider pair's checks (after the helper's).
    static let providers = all.filter(\.judgesProviders)
    /// The order in which checks are asked about one record (their causes listed in it).
    static let byCauseOrder: [any CertifyCheck] = all.enumerated().sorted { ($0.element.causeOrder, $0.offset) < ($1.element.causeOrder, $1.offset) }.map(\.element)

    static func named(_ id: String) -> (any CertifyCheck)? { all.first { $0.id == id } }
}

/// A record of one kind with its trace entry (for evidence): `r.result`, `r.entry`.
@dynamicMemberLookup
struct Traced<Payload> {
    let entry: TraceEntry
    let payload: Payload
    subscript<T>(dynamicMember path: KeyPath<Payload, T>) -> T { payload[keyPath: path] }
}

extension Array where Element == TraceEntry {
    /// The records of one kind, with their entries: `records.of(\.response)`.
    func of<P>(_ kind: KeyPath<TraceRecord, P?>) -> [Traced<P>] {
        compactMap { e in e.record[keyPath: kind].map { Traced(entry: e, payload: $0) } }
    }
}

extension ArraySlice where Element == TraceEntry {
    func of<P>(_ kind: KeyPath<TraceRecord, P?>) -> [Traced<P>] {
        compactMap { e in e.record[keyPath: kind].map { Traced(entry: e, payload: $0) } }
    }
}

/// The lab's ground truth at a moment of a run, as the walk over its trace keeps it (Causes.swift): is the
/// portal session alive, what is the café's portal, is DNS hijacked, what has the helper answered so far.
struct GroundTruth {
    /// What the café's portal is at a moment of the run.
    enum Portal { case normal, erring, changed, cookies }

    /// The run's whole trace (a check may cite a mark the lab writes after the record it blames).
    let trace: [TraceEntry]

    /// The run's commands by id.
    var commands: [Int: Traced<TraceRecord.Command>] = [:]
    /// Answers hotspotd found invalid for their command: valid-results owns them, not the command's check.
    var invalid: Set<Int> = []
    var sessionAlive = false
    /// The record that ended the session (the lab's action, a logoff answer, a gate observation).
    var sessionEnded: TraceEntry?
    /// The answer that started it.
    var signedIn: TraceEntry?
    var portal = Portal.normal
    var portalMark: TraceEntry?
    /// From the lab's mark that a DNS hijack starts (or, without it, the mark that it is in effect) until DNS is
    /// restored: the café's answers are dns-hijack's.
    var hijack: TraceEntry?
    /// The lab's mark that it is ending the portal session, until its mark that it has (nil outside that window).
    var sessionEnding: TraceEntry?
    /// The helper signed in again (authenticate success on the café) while the lab was ending the session: from the
    /// "ended" mark until the lab's next reading of the gate (`afterSessionEnd`), nobody knows whether the sign-in came
    /// before or after the flush, so the session's state is not judged (CI run 19: a maintain during the flush answered
    /// authenticationRequired, the re-login succeeded, and only then did the slow flush's "ended" mark come).
    var sessionUncertain = false
    var signedInWhileEnding = false
    /// The mark that the hijack is in effect: a command sent after it faced the hijack.
    var hijackInEffect: TraceEntry?
    /// The lab's mark that the café is IPv6-only (the run `ipv6-only`): IPv6OnlyCheck owns its evaluate and
    /// authenticate answers there.
    var ipv6Only: TraceEntry?
    var highForNotCaptive: TraceEntry?
    /// The roles whose provider answered start() false.
    var failedStarts: Set<String> = []

    init(_ trace: [TraceEntry]) {
        self.trace = trace
        for c in trace.of(\.command) where commands[c.id] == nil { commands[c.id] = c }
        invalid = Set(trace.of(\.irregular).filter { $0.irregularity == "invalidResult" }.map(\.command))
    }

    /// The answer a response gives, with its command: nil for an answer hotspotd found invalid (valid-results
    /// owns it) or to no command sent.
    func judged(_ entry: TraceEntry) -> (response: TraceRecord.Response, command: Traced<TraceRecord.Command>)? {
        guard let r = entry.record.response, !invalid.contains(r.command), let command = commands[r.command] else { return nil }
        return (r, command)
    }

    /// The lab's certify mark of a `labAction` record.
    static func mark(_ entry: TraceEntry) -> LabAction? {
        guard let action = entry.record.labAction?.action, action.certify != nil else { return nil }
        return action
    }

    /// The ground truth after `entry` (the checks have judged it against the truth before).
    mutating func advance(past entry: TraceEntry, judge: Judge) {
        if let action = Self.mark(entry) {
            switch action.certify {
            case RunDriver.sessionEndingMark:
                sessionEnding = entry
                signedInWhileEnding = false
            case RunDriver.sessionEndedMark:
                sessionAlive = false
                sessionEnded = entry
                sessionEnding = nil
                sessionUncertain = signedInWhileEnding
                signedInWhileEnding = false
            case RunDriver.portalMark:
                portal = SessionCookiesCheck.requiresCookies(action) ? .cookies : action.kind == "form-login" ? .erring : .changed
                portalMark = entry
            case RunDriver.hijackStartingMark:
                // DNS may answer either way from here: the other checks leave the café's answers to dns-hijack.
                hijack = entry
            case RunDriver.hijackMark:
                if hijack == nil { hijack = entry }
                hijackInEffect = entry
            case RunDriver.dnsRestoredMark:
                hijack = nil
                hijackInEffect = nil
            case IPv6OnlyCheck.networkMark:
                ipv6Only = entry
            case RunDriver.gateMark:
                let held = action.authenticated ?? false
                if sessionUncertain {
                    // The lab's reading settles it: the sign-in during the flush came after it (held) or before it.
                    sessionUncertain = false
                    sessionAlive = held
                    if !held { sessionEnded = entry }
                } else if sessionAlive && !held && SessionCookiesCheck.ownsGateReading(action) {
                    // The cookie portal did not let the station in after a sign-in answered success: session-cookies'
                    // deviation, not the session ending.
                    sessionAlive = false
                } else if sessionAlive && !held {
                    sessionAlive = false
                    sessionEnded = entry
                } else if !sessionAlive && held && action.label == "afterLogoff" {
                    sessionAlive = true
                }
            default:
                break
            }
        } else if let started = entry.record.providerStarted, !started.ok {
            failedStarts.insert(started.role)
        } else if let (r, command) = judged(entry) {
            let ssid = command.network?.ssid.text
            switch r.commandType {
            case "evaluate" where ssid == judge.notCaptive && r.network?.confidence == 2:
                highForNotCaptive = entry
            case "authenticate" where ssid == judge.home && hijack == nil:
                if r.result == "success" && (portal == .normal || portal == .cookies) {
                    sessionAlive = true
                    signedIn = entry
                    sessionUncertain = false
                    if sessionEnding != nil { signedInWhileEnding = true }
                }
            case "logoff" where r.result == "success":
                sessionAlive = false
                sessionEnded = entry
                sessionUncertain = false
            default:
                break
            }
        }
    }
}
