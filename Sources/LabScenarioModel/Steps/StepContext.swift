import Foundation
import HotspotCore
import PortalKinds
import HotspotProtocol
import HotspotSystem
import LabTopology

/// What steps act on: the acting station's hotspotd, its helpers and wpa_supplicant, and the lab around it
/// (hotspots named as in the topology). `LabStepContext` is the real lab; tests of the runner use a fake.
public protocol StepContext: AnyObject {
    var topology: Topology { get }
    /// The acting station's name.
    var stationName: String { get }
    /// Trace line where the states checked by the next `expect-states` begin.
    var stateCheckpoint: Int { get set }
    /// Trace line where the next `wait-state` starts looking.
    var waitCursor: Int { get set }
    /// The trace line after the transition the last `wait-state` matched (not one that found hotspotd already in the
    /// state), while only checks have run since it (`ExpectStatesStep.checksOnly`); nil otherwise. Where `expect-states`
    /// stops reading: the states a timer adds after it count toward the next `expect-states`, however long the checks in
    /// between took.
    var stateBound: Int? { get set }
    /// The trace line of the transition the last `wait-state` matched, nil when it matched none (hotspotd was already
    /// in the state): where `sleep: {since: state}` counts from. Unlike `stateBound`, kept across steps that act.
    var matchedTransition: Int? { get set }

    // MARK: the station's hotspotd
    func status() throws -> JSON
    func readTrace(from line: Int) -> [TraceEntry]
    func traceLineCount() -> Int
    /// Waits for the first transition to `state` after trace line `cursor`; returns the line after it.
    func waitForState(_ state: String, after cursor: Int, timeout: Duration) throws -> Int
    func showScanList() throws -> [TraceScanListEntry]
    func join(_ ssid: SSID, password: String?) throws
    func autoJoin() throws
    func leave() throws
    /// The armed maintain timer fires now (`ControlRequest.fireMaintainTimer`).
    func fireMaintainTimer() throws
    func foreground(_ identifier: String?) throws
    /// True when hotspotd accepted the logoff.
    func logoff(helper identifier: String) throws -> Bool
    /// Returns the trace line where the new daemon's records begin.
    func restartHotspotd(helperDelay: Duration) throws -> Int
    /// Records a step in hotspotd's trace (what a replay reads).
    func recordStep(_ text: String, kind: String, line: Int, index: Int)
    /// Waits for a transition to `state` after trace line `cursor` (never "already there"); returns the line after it.
    func waitForTransition(to state: String, after cursor: Int, timeout: Duration) throws -> Int

    // MARK: the station's helpers, by identifier or executable name
    /// The helper's pid; nil: the station has no such helper.
    func helperPID(_ name: String) -> Int32?
    /// The identifier the helper registered with; nil: unknown.
    func helperIdentifier(_ name: String) -> String?
    func type(_ text: String, intoHelper name: String) throws
    /// SIGKILL, and waits for it to die.
    func killHelper(_ name: String) throws
    func signalHelper(_ name: String, _ signal: Int32) throws

    // MARK: the station
    func macAddress() throws -> String
    /// An application's HTTP GET (no helper mark): the HTTP status, or nil with curl's error.
    func application(_ url: String) throws -> (status: Int?, error: String)
    /// Each URL fetched once from the station as the system's connectivity probe (no redirect followed).
    func probe(_ urls: [String]) throws -> [ProbeObservation]
    /// A request on the station's wpa_supplicant control connection (attached: events arrive on it).
    func wpaRequest(_ command: String) throws -> String
    func wpaWaitForEvent(_ prefixes: [String], timeout: Duration) throws -> String
    var wpaLog: String { get }

    // MARK: the lab (hotspots by name)
    /// How many of the hotspot's access points have a hostapd control socket (none: veth mode).
    func hostapdCount(hotspot: String) throws -> Int
    /// Sends `command` to the hostapd of the hotspot's access point number `index` (of those with one); its reply.
    func hostapdRequest(hotspot: String, index: Int, _ command: String) throws -> String
    func setUplink(hotspot: String, up: Bool) throws -> String
    func setLinkQuality(hotspot: String, side: LinkSide, latencyMS: Int, jitterMS: Int, lossPercent: Double, rateKbit: Int) throws -> String
    func setDNS(hotspot: String, mode: String) throws -> String
    func switchPortal(hotspot: String, kind: String, settings: [String: String]) throws
    /// The `mac . ip` elements of the hotspot's captive gate's authenticated set.
    func gateAuthenticated(hotspot: String) throws -> [String]
    func setSignal(hotspot: String, bssid: String?, dbm: Int?) throws -> String
    func expirePortalSessions(hotspot: String) throws

    /// Waits `seconds` (a `sleep` step, a flap's intervals, a poll's interval).
    func pause(_ seconds: Double)
    /// CLOCK_MONOTONIC now, the clock of the trace's `t_ns` (hotspotd runs on the same kernel as the lab's runner, in
    /// both tiers): where `sleep: {since: state}` stands against a state's trace time. Default: the system's.
    func monotonicNow() -> Duration
}

extension StepContext {
    /// A helper named in a step, as hotspotd knows it: its registered identifier, else the name as written.
    public func helperID(_ name: String) -> String { helperIdentifier(name) ?? name }

    public func noHelper(_ name: String) -> StepFailure { StepFailure("no helper \(name) on station \(stationName)") }

    public func monotonicNow() -> Duration { SystemMonotonicClock.read() }

    /// Looks with `look` until it gives a value or `bound` has passed since the call, pausing `interval` seconds between
    /// looks; nil when it never did. The last look comes after the bound: a thread starved past it between two looks
    /// must not miss what is already there.
    public func poll<T>(within bound: Duration, every interval: Double, _ look: () throws -> T?) throws -> T? {
        let start = ContinuousClock.now
        while true {
            let last = ContinuousClock.now - start >= bound
            if let value = try look() { return value }
            if last { return nil }
            pause(interval)
        }
    }

    /// The trace line after the record of the last step of `kind` (`recordStep`, written before the step acts): where a
    /// step with `after: kind` starts looking. Nothing the action causes can come before it; a maintain round the timer
    /// ran before it, can. (Not the step's end: the action may take effect, and its consequences follow, well before
    /// the step returns: CI run 20's `dns: servfail`.) The parser makes sure such a step came before.
    public func lineAfterStep(ofKind kind: String) throws -> Int {
        let records = readTrace(from: 0)
        guard let index = records.lastIndex(where: { $0.record.labAction?.action.stepKind == kind }) else {
            throw StepFailure("no `\(kind)` step before this one in hotspotd's trace (after: \(kind))")
        }
        return index + 1
    }

    /// The named hotspot, else the one the station is (or was last) associated with, else the only one.
    public func hotspotFor(_ name: String?) throws -> Hotspot {
        if let name {
            guard let h = topology.hotspots.first(where: { $0.name == name }) else { throw StepFailure("no hotspot \(name) in \(topology.file)") }
            return h
        }
        // By the SSID's bytes (`ssid_hex` first): two SSIDs that are not UTF-8 may share their lossy text.
        let ssid = try status()["association"].flatMap(SSID.init(wire:))
            ?? readTrace(from: 0).compactMap(\.record.station).last(where: { $0.action == "associated" })?.ssid.ssid
        if let h = topology.hotspots.first(where: { $0.rawSSID == ssid }) { return h }
        if topology.hotspots.count == 1 { return topology.hotspots[0] }
        throw StepFailure("which hotspot? name one (`hotspot:`); the station is not associated")
    }
}
