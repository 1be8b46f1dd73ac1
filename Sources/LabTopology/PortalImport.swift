import Foundation
import PortalKinds

/// `hotspot-lab portal import`: reads a HAR capture, writes the recorded portal's definition (`portal.json`) and a
/// topology to try it in (`topology.yaml`), and reports the personal values it found and what replaced them.
public enum PortalImport {
    public struct Output: Sendable {
        public var result: HARImportResult
        public var definitionPath: String
        public var topologyPath: String
        /// What to print: the personal values, the exchanges, the warnings, the next steps.
        public var report: String
    }

    /// The default output folder for `FILE.har`: `portals-local/FILE` (kept out of git: captures are the venue's and
    /// its guests' data).
    public static func defaultOutput(for har: String) -> String {
        "portals-local/" + ((har as NSString).lastPathComponent as NSString).deletingPathExtension
    }

    public static func run(har: String, out: String?, keep: Set<String>) throws -> Output {
        let document = try HARDocument.read(path: har)
        let result = try HARImport.convert(document, source: har, keep: keep)
        let folder = out ?? defaultOutput(for: har)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw RecordedDefinitionError(file: folder, field: "", message: "create the output folder: \(error.localizedDescription)")
        }
        let definitionPath = folder + "/portal.json"
        let topologyPath = folder + "/topology.yaml"
        do {
            try result.definition.encoded().write(to: URL(fileURLWithPath: definitionPath), options: .atomic)
            try Data(topology(result, name: (folder as NSString).lastPathComponent).utf8).write(to: URL(fileURLWithPath: topologyPath), options: .atomic)
        } catch {
            throw RecordedDefinitionError(file: definitionPath, field: "", message: "write: \(error.localizedDescription)")
        }
        return Output(result: result, definitionPath: definitionPath, topologyPath: topologyPath,
                      report: report(result, har: har, definitionPath: definitionPath, topologyPath: topologyPath))
    }

    /// A one-hotspot topology around the recorded portal (the café's addresses), with the reference helper.
    public static func topology(_ result: HARImportResult, name: String) -> String {
        let user = result.settings["username"] ?? ""
        let password = result.settings["password"] ?? ""
        let account = user.isEmpty && password.isEmpty ? "" : " --account \(user):\(password)"
        return """
            # The portal recorded in \(result.definition.source), imported by `hotspot-lab portal import`.
            # Schema: docs/TOPOLOGY.md; walk-through: docs/FIELD-FAILURES.md
            name: venue
            description: the portal recorded in \(result.definition.source)
            internet:
              address: 198.18.0.1
              uplinks: 203.0.113.0/24
            hotspots:
              - name: venue
                ssid: Recorded Venue
                bssid: "02:00:00:00:18:00"
                channel: 6
                security: open
                gateway:
                  subnet: 198.51.100.0/24
                  address: 198.51.100.1
                  dhcp-range: [198.51.100.10, 198.51.100.200]
                  dns: 198.51.100.1
                  portal:
                    kind: recorded
                    definition: portal.json
                    username: "\(user)"
                    password: "\(password)"
            stations:
              - name: phone
                helpers: ['hotspot-helper-portal\(account) --network "Recorded Venue"']
                known-networks:
                  - ssid: Recorded Venue
                    auto-join: true

            """
    }

    public static func report(_ result: HARImportResult, har: String, definitionPath: String, topologyPath: String) -> String {
        var lines: [String] = []
        let d = result.definition
        lines.append("imported \(har): probe log.entries[\(result.probeEntry)], portal host(s) \(d.portalHosts.joined(separator: ", "))")
        lines.append("sign-in: " + (result.signInEntry.map { "log.entries[\($0)]" } ?? "none")
            + "; refusal: " + (result.refusalEntry.map { "log.entries[\($0)]" } ?? "none (a wrong sign-in gets 403)"))
        lines.append("exchanges (\(d.exchanges.count)):")
        for e in d.exchanges {
            lines.append("  \(e.role.padding(toLength: 8, withPad: " ", startingAt: 0)) \(e.request.method) \(e.request.path) -> \(e.response.status)   (log.entries[\(e.entry)])")
        }
        lines.append("personal values found (\(result.personal.count)); none of the replaced ones is in \(definitionPath):")
        for p in result.personal {
            lines.append("  \(p.kind): `\(p.value)` -> " + (p.kept ? "kept (--keep)" : "`\(p.replacement)`") + "   at \(p.location)")
        }
        if !result.settings.isEmpty {
            lines.append("settings of the recorded portal (stand-ins for the captured credentials): "
                + result.settings.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
        }
        for warning in result.warnings { lines.append("warning: \(warning)") }
        lines.append("wrote \(definitionPath) and \(topologyPath); try it: hotspot-lab up \(topologyPath)")
        return lines.joined(separator: "\n") + "\n"
    }
}

/// The `recorded` kind's `definition:` setting at topology parse time: a relative path is from the topology's
/// folder (made absolute, so the portal server finds it wherever it runs), and the file is read and checked now.
enum RecordedPortalSetting {
    static func resolve(_ path: String, topologyFile: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        let folder = (topologyFile as NSString).deletingLastPathComponent
        let joined = folder.isEmpty ? path : folder + "/" + path
        let absolute = joined.hasPrefix("/") ? joined : FileManager.default.currentDirectoryPath + "/" + joined
        return (absolute as NSString).standardizingPath
    }

    /// Resolves `definition` in `settings` of a recorded portal and checks the file; the problem in words, or nil.
    static func check(_ settings: inout [String: String], kind: String, topologyFile: String) -> String? {
        guard kind == RecordedPortal.name, let path = settings["definition"] else { return nil }
        let absolute = resolve(path, topologyFile: topologyFile)
        settings["definition"] = absolute
        do { _ = try RecordedPortalDefinition.load(path: absolute) } catch { return "\(error)" }
        return nil
    }
}
