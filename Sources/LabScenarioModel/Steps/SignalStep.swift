import Foundation
import HotspotProtocol
import HotspotSystem
import LabTopology

/// `signal: {hotspot: H, bssid: B, dbm: -50}` / `{..., dbm: normal}`: what stations receive from the hotspot's
/// access points (or the one with `bssid`), in dBm; nil: normal. When the acting station is associated with one of
/// them, waits until hotspotd's association carries the new strength (the station polls wpa_supplicant's
/// SIGNAL_POLL), so the next command is known to carry it.
public struct SignalStep: ScenarioStepAction {
    public var hotspot: String?
    public var bssid: String?
    public var dbm: Int?

    static let kind = StepKind("signal", example: "signal: {dbm: -40}", replay: .asWritten) { args in
        let keys = try args.keys(allowed: ["hotspot", "bssid", "dbm"], required: ["dbm"])
        let field = try keys.required("dbm")
        let range = RadioSignal.range
        var dbm: Int?
        if case .scalar(let s) = field.node, s.string == "normal" {
            dbm = nil
        } else {
            guard case .scalar(let s) = field.node, s.style == .plain, let value = Int(s.string), range.contains(value) else {
                throw field.error("expected a received signal in \(range.lowerBound)...\(range.upperBound) dBm (mac80211_hwsim gives "
                                  + "-50 dBm + the access point's tx power, 0 to 20 dBm) or `normal`, found \(field.kindName)")
            }
            dbm = value
        }
        let hotspot = try args.hotspot(keys["hotspot"])
        return SignalStep(hotspot: hotspot, bssid: try keys["bssid"].map { try args.accessPoint($0, hotspot: hotspot) }, dbm: dbm)
    }

    public func perform(in context: any StepContext) throws -> String {
        let hotspot = try context.hotspotFor(hotspot)
        let did = try context.setSignal(hotspot: hotspot.name, bssid: bssid, dbm: dbm)
        let affected = hotspot.accessPoints.map { $0.bssid.text.lowercased() }.filter { bssid == nil || $0 == bssid }
        guard let current = try context.status()["association"]?["bssid"]?.stringValue?.lowercased(), affected.contains(current) else {
            return did + " (the station is not associated with it)"
        }
        let rssi = Double(dbm ?? RadioSignal.range.upperBound)
        let expected = WPAText.strength(rssi: rssi)
        let start = ContinuousClock.now
        var seen: Double?
        // 60 s at most: the new signal ends the wait at once, so the bound only decides how long a lab that never
        // carries it takes to say so; 15 s was a verdict a loaded machine under TCG could come near.
        let matched = try context.poll(within: .seconds(60), every: 0.1) { () -> String? in
            seen = try context.status()["association"]?["signalStrength"]?.doubleValue
            guard let seen, abs(seen - expected) < 0.02 else { return nil }
            return did + String(format: "; hotspotd's association: signalStrength %.3f (RSSI %.0f dBm) after %.1f s", seen, rssi,
                                (ContinuousClock.now - start).secondsDouble)
        }
        if let matched { return matched }
        throw StepFailure(did + String(format: "; hotspotd's association still has signalStrength %@ after 60 s, expected %.3f (RSSI %.0f dBm)",
                                       seen.map { String(format: "%.3f", $0) } ?? "none", expected, rssi))
    }
}
