import Foundation
import HotspotProtocol
import HotspotSystem

/// `roam: BSSID` / `roam: {bssid: B, timeout: 30}`: the station's wpa_supplicant moves to the access point `bssid`
/// of the same SSID (a scan of its channel first: ROAM needs the BSS in its table); passes when hotspotd records
/// the association with `bssid` as a roam.
public struct RoamStep: ScenarioStepAction {
    public var bssid: String
    public var timeout: Double

    static let kind = StepKind("roam", example: "roam: \"02:00:00:00:01:00\"", replay: .asWritten) { args in
        if args.isScalar { return RoamStep(bssid: try args.accessPoint(args.value), timeout: 30) }
        let keys = try args.keys(allowed: ["bssid", "timeout"], required: ["bssid"])
        return RoamStep(bssid: try args.accessPoint(keys.required("bssid")),
                        timeout: try keys["timeout"].map { try ScenarioParser.number($0, in: 1...600) } ?? 30)
    }

    public func perform(in context: any StepContext) throws -> String {
        let cursor = context.traceLineCount()
        let from = try context.status()["association"]?["bssid"]?.stringValue
        // A scan of the target's channel only (a full scan takes seconds under TCG).
        guard let target = context.topology.hotspots.flatMap(\.accessPoints).first(where: { $0.bssid.text.lowercased() == bssid }) else {
            throw StepFailure("no access point \(bssid) in \(context.topology.file)")
        }
        let scanStart = ContinuousClock.now
        let scan = try context.wpaRequest("SCAN freq=\(target.frequency)")
        guard scan.hasPrefix("OK") || scan.hasPrefix("FAIL-BUSY") else { throw StepFailure("wpa_supplicant answered SCAN freq=\(target.frequency) with \(scan)") }
        // A scan of one channel takes well under a second even under TCG; its results end the wait at once.
        _ = try context.wpaWaitForEvent(["CTRL-EVENT-SCAN-RESULTS"], timeout: .seconds(60))
        let scanned = WPAText.visibleNetworks(try context.wpaRequest("SCAN_RESULTS"))
        guard scanned.contains(where: { $0.bssid.lowercased() == bssid }) else {
            throw StepFailure("\(bssid) is not in the station's scan results (\(scanned.map { "\($0.ssid) \($0.bssid)" }.joined(separator: ", ")))")
        }
        let scanSeconds = (ContinuousClock.now - scanStart).secondsDouble
        let start = ContinuousClock.now
        let reply = try context.wpaRequest("ROAM \(bssid)")
        guard reply.hasPrefix("OK") else { throw StepFailure("wpa_supplicant answered ROAM \(bssid) with \(reply)") }
        let roamed = try context.poll(within: .milliseconds(Int64(timeout * 1000)), every: 0.05) { () -> String? in
            let station = context.readTrace(from: cursor).compactMap(\.record.station)
            guard station.contains(where: { $0.action == "associated" && $0.bssid?.lowercased() == bssid }) else { return nil }
            // hotspotd must have seen a roam (CONNECTED to the new BSSID without a disconnection) and traced both BSSIDs.
            guard let roamed = station.first(where: { $0.action == "roamed" }),
                  roamed.to?.lowercased() == bssid, from == nil || roamed.from?.lowercased() == from?.lowercased() else {
                let disconnected = station.first { $0.action == "disassociated" }
                throw StepFailure("the station associated with \(bssid), but hotspotd's trace has no `roamed` record from \(from ?? "?") to it"
                                  + (disconnected.map { " (it saw a disconnection: \($0.event ?? "?"))" } ?? ""))
            }
            return String(format: "roamed from %@ to %@: hotspotd saw the new association %.2f s after ROAM (scan of %d MHz before: %.2f s)",
                          roamed.from ?? "?", bssid, (ContinuousClock.now - start).secondsDouble, target.frequency, scanSeconds)
        }
        if let roamed { return roamed }
        throw StepFailure("the station did not associate with \(bssid) within \(timeout) s (associated with \(try context.status()["association"]?["bssid"]?.stringValue ?? "nothing")); "
                          + "wpa_supplicant log \(context.wpaLog)")
    }
}
