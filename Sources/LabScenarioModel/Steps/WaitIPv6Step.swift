import Foundation
import HotspotProtocol
import LabTopology

/// `wait-ipv6` / `wait-ipv6: {timeout: 30}`: hotspotd traces `ipv6Up` for the current association (a `station`
/// record after the latest `associated`: the station's interface has a usable global IPv6 address, from SLAAC or
/// DHCPv6, and an IPv6 default route; docs/STATION.md) within the timeout. On a dual-stack network the DHCPv4
/// lease is IP up and the IPv6 side comes up beside it, later (duplicate address detection): this waits for it,
/// for steps about IPv6 traffic. Polled on the trace, never a fixed wait.
public struct WaitIPv6Step: ScenarioStepAction {
    public var timeout: Double

    static let kind = StepKind("wait-ipv6", example: "wait-ipv6: {timeout: 20}", replay: .notReplayed) { args in
        if args.isNull { return WaitIPv6Step(timeout: 30) }
        let keys = try args.keys(allowed: ["timeout"], required: [])
        return WaitIPv6Step(timeout: try keys["timeout"].map { try ScenarioParser.number($0, in: 0.1...600) } ?? 30)
    }

    /// The `ipv6Up` record of the latest association in `entries`, nil when there is none (yet).
    static func ipv6Up(in entries: [TraceEntry]) -> TraceRecord.Station? {
        let associated = entries.lastIndex { $0.record.station?.action == "associated" }
        guard let associated else { return nil }
        return entries[associated...].last { $0.record.station?.action == "ipv6Up" }?.record.station
    }

    public func perform(in context: any StepContext) throws -> String {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        var entries = context.readTrace(from: 0)
        while Self.ipv6Up(in: entries) == nil, ContinuousClock.now < deadline {
            context.pause(0.05)
            entries = context.readTrace(from: 0)
        }
        guard let up = Self.ipv6Up(in: entries) else {
            let failed = entries.last { $0.record.station?.action == "ipv6Failed" }?.record.station?.status
            throw StepFailure("expected hotspotd to trace ipv6Up (a usable global IPv6 address and an IPv6 default route) for the "
                              + "current association within \(timeout) s" + (failed.map { "; it traced ipv6Failed: \($0)" } ?? ""))
        }
        return "IPv6 up: \((up.ipv6Addresses ?? []).joined(separator: ", ")) \(up.ipv6DefaultRoute ?? "")"
    }
}
