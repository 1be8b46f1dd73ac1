import Foundation
import HotspotProtocol
import HotspotSystem
import LabTopology

/// A station's apps (topology `apps:`, docs/TOPOLOGY.md "Apps"): the providers go to hotspotd's `--apps` file,
/// each manager configuration is set once hotspotd is up, legacy helper apps run as helpers.
extension RunningStation {
    /// Where the lab writes hotspotd's apps file for a station folder.
    static func appsFile(directory: String) -> String { directory + "/apps.json" }

    /// The folder an app's providers read the user's input from (`HOTSPOT_HELPER_UI`; the `type` step writes there).
    static func appUIDirectory(directory: String, app: String) -> String { directory + "/ui/app-" + app }

    /// Writes the apps file when the station declares provider apps; returns hotspotd's `--apps` arguments.
    static func writeAppsFile(_ station: Station, directory: String) throws -> [String] {
        let apps = station.apps.filter(\.hasProviders)
        guard !apps.isEmpty else { return [] }
        let declarations = try apps.map { app in
            let ui = appUIDirectory(directory: directory, app: app.bundleIdentifier)
            try FileManager.default.createDirectory(atPath: ui, withIntermediateDirectories: true)
            return try app.declaration { command in try providerArgv(command, ui: ui, app: app.bundleIdentifier, station: station.name) }
        }
        let path = appsFile(directory: directory)
        try AtomicFile.write(AppsFile.render(declarations), to: path)
        return ["--apps", path]
    }

    /// A provider's command line as the argv hotspotd runs: `env HOTSPOT_HELPER_UI=<the app's folder> [NAME=value ...]
    /// EXECUTABLE ARGS...`, a product name found in the build folder (hotspotd gives no shell).
    static func providerArgv(_ command: String, ui: String, app: String, station: String) throws -> [String] {
        let (assignments, words) = environmentAndWords(command)
        guard let first = words.first else {
            throw SystemError("declare a provider of", "app \(app) on station \(station)", reason: "empty command")
        }
        let executable = first.contains("/") ? first : ((try? BuildProducts.locate(first)) ?? first)
        let env = try RunningTopology.findTool("env")
        return [env, "HOTSPOT_HELPER_UI=" + ui] + assignments.map { "\($0.0)=\($0.1)" } + [executable] + words.dropFirst()
    }

    /// What hotspotd's environment adds for the providers it launches (they inherit it): the station's resolver and
    /// lease, the lab CA and the CA bundle, as `startHelper` gives helpers.
    static func providerEnvironment(directory: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        let run = directory + "/hotspotd"
        environment["HOTSPOT_RESOLV_CONF"] = run + "/resolv.conf"
        environment["HOTSPOT_DHCP_LEASE"] = run + "/lease.env"
        let labLogs = ((directory as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
        let caFile = PortalTLS.caFile(labLogDirectory: labLogs)
        if FileManager.default.fileExists(atPath: caFile) { environment["HOTSPOT_CA_FILE"] = caFile }
        let bundle = PortalTLS.caBundle(labLogDirectory: labLogs)
        if FileManager.default.fileExists(atPath: bundle) {
            for name in PortalTLS.bundleVariables { environment[name] = bundle }
        }
        return environment
    }

    /// Sets every app's manager configuration the topology gives (`setManager`), as the app would with
    /// `NEHotspotManager.saveToPreferences()`.
    func configureManagers() throws {
        for app in station.apps {
            guard let manager = app.manager else { continue }
            do {
                try request(.setManager(app: app.bundleIdentifier, manager))
            } catch {
                throw SystemError("set the manager of", "app \(app.bundleIdentifier) on station \(station.name)",
                                  reason: "\(error); log \(hotspotdLog): \(Readiness.tail(hotspotdLog))")
            }
        }
    }

    /// A legacy helper app's helper must register as the app (its bundle identifier).
    func checkHelperApps() throws {
        guard options.helperOverride == nil else { return }
        for app in station.apps {
            guard let command = app.helper, let running = helpers.first(where: { $0.command == app.helperCommand }) else { continue }
            if let identifier = running.identifier, identifier != app.bundleIdentifier {
                throw SystemError("start the helper app", "\(app.bundleIdentifier) on station \(station.name)",
                                  reason: "its helper `\(command)` registered as \(identifier); expected the app's bundle identifier (give the helper `--identifier \(app.bundleIdentifier)`, or name the app \(identifier))")
            }
        }
    }

    // MARK: apps as steps name them

    /// The station's app with this bundle identifier.
    public func app(_ bundleIdentifier: String) -> StationApp? { station.apps.first { $0.bundleIdentifier == bundleIdentifier } }

    /// The pid of the app's running provider (the authentication provider's first), from hotspotd's status.
    public func providerPID(app: String, role: ProviderRole? = nil) -> Int32? {
        guard let entry = (try? status())?["apps"]?.arrayValue?.first(where: { $0["bundleIdentifier"]?.stringValue == app }) else { return nil }
        let providers = entry["providers"]?.arrayValue ?? []
        let order: [ProviderRole] = role.map { [$0] } ?? [.authenticationProvider, .evaluationProvider]
        for r in order {
            if let pid = providers.first(where: { $0["role"]?.stringValue == r.rawValue })?["pid"]?.doubleValue { return Int32(pid) }
        }
        return nil
    }

    /// What the user types into a provider app's UI (`HOTSPOT_HELPER_UI/input` of the app).
    public func type(_ text: String, intoApp app: String) throws {
        let ui = Self.appUIDirectory(directory: directory, app: app)
        let tmp = ui + "/.input.tmp"
        try text.write(toFile: tmp, atomically: false, encoding: .utf8)
        guard rename(tmp, ui + "/input") == 0 else { throw SystemError.current("write the user's input for", "app \(app)") }
    }
}
