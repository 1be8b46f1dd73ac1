import Foundation
import LabServices
import LabTopology

/// A scenario checked against its topology before anything is built or booted: the station it acts as, every
/// hotspot, helper and access point its steps name. The first unknown one is a `TopologyError` at its
/// `file:line:column` in the scenario, with what the topology has instead.
public enum ScenarioCheck {
    /// The identifiers the reference helpers register with unless given `--identifier`.
    static let defaultIdentifiers = [
        "hotspot-helper-portal": "com.hotspotlab.portal",
        "hotspot-helper-voucher": "com.hotspotlab.voucher",
        "hotspot-helper-captive-api": "com.hotspotlab.captive-api",
    ]

    /// `helperOverride` (`run --helper CMD`): the helpers are the vendor's, whose identifiers are not known
    /// before they register; helper names are then not checked.
    public static func validate(_ scenario: Scenario, against topology: Topology, helperOverride: [String]? = nil) throws {
        guard let first = topology.stations.first else {
            throw TopologyError(file: topology.file, line: 1, column: 1, field: "stations", message: "scenario \(scenario.name) needs a station; the topology has none")
        }
        var station = first
        for reference in scenario.references where reference.kind == .station {
            guard let named = topology.stations.first(where: { $0.name == reference.name }) else {
                throw error(reference, "unknown station `\(reference.name)`; the topology \(topology.file) has: "
                            + topology.stations.map(\.name).joined(separator: ", "))
            }
            station = named
        }
        let helpers = helperOverride == nil ? (scenario.helpers ?? station.helperCommands).map(HelperName.init) : nil
        // A provider app is named by its bundle identifier where steps name helpers.
        let providerApps = station.apps.filter(\.hasProviders).map(\.bundleIdentifier)
        for reference in scenario.steps.flatMap(\.references) {
            switch reference.kind {
            case .station:
                guard topology.stations.contains(where: { $0.name == reference.name }) else {
                    throw error(reference, "unknown station `\(reference.name)`; the topology \(topology.file) has: "
                                + topology.stations.map(\.name).joined(separator: ", "))
                }
            case .hotspot:
                guard topology.hotspots.contains(where: { $0.name == reference.name }) else {
                    throw error(reference, "unknown hotspot `\(reference.name)`; the topology \(topology.file) has: "
                                + topology.hotspots.map(\.name).joined(separator: ", "))
                }
            case .helper:
                guard let helpers else { continue }
                // A helper whose identifier is only known once it registers may be named by one.
                let unknownIdentifier = helpers.contains { $0.identifier == nil } && reference.name.contains(".")
                guard helpers.contains(where: { $0.matches(reference.name) }) || unknownIdentifier || providerApps.contains(reference.name) else {
                    throw error(reference, "unknown helper `\(reference.name)` on station \(station.name); its helpers: "
                                + (helpers.isEmpty ? "none" : helpers.map(\.description).joined(separator: ", "))
                                + (providerApps.isEmpty ? "" : "; its provider apps: " + providerApps.joined(separator: ", ")))
                }
            case .accessPoint:
                let hotspots = topology.hotspots.filter { reference.hotspot == nil || $0.name == reference.hotspot }
                let known = hotspots.flatMap { h in h.accessPoints.map { (h.name, $0.bssid.text.lowercased()) } }
                guard known.contains(where: { $0.1 == reference.name.lowercased() }) else {
                    let list = known.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
                    throw error(reference, reference.hotspot.map { "hotspot \($0) has no access point `\(reference.name)`; its access points: \(list)" }
                                ?? "unknown access point `\(reference.name)`; the topology \(topology.file) has: \(list)")
                }
            }
        }
    }

    static func error(_ reference: ScenarioReference, _ message: String) -> TopologyError {
        TopologyError(file: reference.file, line: reference.line, column: reference.column, field: reference.field, message: message)
    }

    /// How a step may name a helper: its executable name (as `RunningStation.helper` matches it) or its identifier.
    struct HelperName: CustomStringConvertible {
        var executable: String
        /// nil: known only once it registers.
        var identifier: String?

        init(_ command: String) {
            let (environment, words) = RunningStation.environmentAndWords(command)
            executable = words.first ?? ""
            // The SDK's default identifier (a legacy helper app's command sets it to the app's bundle identifier).
            var identifier = ScenarioCheck.defaultIdentifiers[(executable as NSString).lastPathComponent]
                ?? environment.last { $0.0 == "HOTSPOT_HELPER_IDENTIFIER" }?.1
            for (i, word) in words.enumerated() {
                if ["--id", "--identifier"].contains(word), i + 1 < words.count { identifier = words[i + 1] }
                for flag in ["--id=", "--identifier="] where word.hasPrefix(flag) { identifier = String(word.dropFirst(flag.count)) }
            }
            self.identifier = identifier
        }

        func matches(_ name: String) -> Bool { identifier == name || executable.hasSuffix(name) }

        var description: String { (executable as NSString).lastPathComponent + (identifier.map { " (\($0))" } ?? "") }
    }
}
