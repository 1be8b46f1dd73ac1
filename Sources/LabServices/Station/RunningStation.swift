import Foundation
import PortalKinds
import HotspotCore
import HotspotClient
import HotspotProtocol
import HotspotSystem
import Netlink
import LabSandbox
import LabTopology

/// How the lab runs a topology's stations.
public struct StationLabOptions: Sendable {
    /// hotspotd's `--time-scale` (every deadline and interval multiplied).
    public var timeScale: Double
    /// hotspotd's `--maintain-interval` in seconds before scaling (300 on the platform; labs shorten it).
    public var maintainInterval: Double
    /// hotspotd's `--command-deadline` in seconds before scaling (nil: hotspotd's 45 s, scaled like the rest).
    public var commandDeadline: Double?
    /// Extra arguments for every helper, by helper executable name (e.g. a test helper's `--delay-ms`).
    public var helperArguments: [String: [String]]
    /// Replace the topology's helper commands for every station (`hotspot-lab run --helper CMD`).
    public var helperOverride: [String]?
    /// hotspotd's `--ipv6-timeout` in seconds, not scaled (nil: hotspotd's 60 s).
    public var ipv6Timeout: Double?
    /// When the lab gives up on a helper that is alive but has not registered (by what it does, not by the clock alone).
    public var registrationPatience: RegistrationPatience

    public init(timeScale: Double = 1, maintainInterval: Double = 300, commandDeadline: Double? = nil,
                helperArguments: [String: [String]] = [:], helperOverride: [String]? = nil, ipv6Timeout: Double? = nil,
                registrationPatience: RegistrationPatience = RegistrationPatience()) {
        self.timeScale = timeScale
        self.maintainInterval = maintainInterval
        self.commandDeadline = commandDeadline
        self.helperArguments = helperArguments
        self.helperOverride = helperOverride
        self.ipv6Timeout = ipv6Timeout
        self.registrationPatience = registrationPatience
    }
}

/// The station's DNS as every process in its namespace sees it. The DHCP client's script (hotspotd's
/// `WPAStation`) writes the lease's servers to `<hotspotd run folder>/resolv.conf`, in place; each process the lab
/// starts in the station's namespace (wpa_supplicant, hotspotd, the helpers) goes through
/// `hotspot-nsexec --resolv-conf` with that file (the lab's own requests, `StationTraffic`, read it), so its
/// /etc/resolv.conf is the station's (a private mount namespace per process). The file exists, empty (no
/// servers), before the first lease: names do not resolve before DHCP, and never through the machine's own DNS
/// (in the VM the host's resolv.conf points nowhere). docs/TOPOLOGY.md, "The station's DNS".
public enum StationResolver {
    /// The station's resolv.conf: the DHCP script's file in hotspotd's run folder (`HOTSPOT_RESOLV_CONF`).
    public static func file(runDirectory: String) -> String { runDirectory + "/resolv.conf" }

    /// Creates the run folder and an empty resolv.conf when there is none (a lease's file is kept); returns its path.
    @discardableResult
    public static func prepare(runDirectory: String) throws -> String {
        let path = file(runDirectory: runDirectory)
        do {
            try FileManager.default.createDirectory(atPath: runDirectory, withIntermediateDirectories: true)
        } catch {
            throw SystemError("create the station's run folder", runDirectory, reason: "\(error)")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemError.current("create the station's resolv.conf", path) }
        close(fd)
        return path
    }

    /// An application's HTTP GET from the station's namespace with the station's DNS (general traffic: no helper
    /// mark). Returns the HTTP status, or nil when the request failed (with the error). https:// trusts `caBundle`
    /// when given, else the system store. `StationTraffic`: in this process, no curl. 20 s for the whole exchange:
    /// "allowed" must not turn "blocked" on a loaded machine (CI run 18: a first TLS handshake with the vendor's
    /// backend, its certificate issued on demand, took over the 4 s this once allowed in the VM); a blocked request
    /// meets IP suppression's unreachable route, the gate's reset or its redirect at once.
    public static func application(_ url: String, namespace: NetworkNamespace, resolvConf: String, caBundle: String?,
                                   maxTime: Int = 20) throws -> (status: Int?, error: String) {
        let result = try StationTraffic.get(url, in: namespace, resolvConf: resolvConf, trust: caBundle.map { .caFile($0) } ?? .system,
                                            mark: nil, timeout: .seconds(maxTime))
        switch result {
        case .success(let response): return (response.status, "")
        case .failure(let error): return (nil, "\(error)")
        }
    }
}

/// A helper process a station runs.
public struct RunningHelper: Sendable {
    /// The command as the topology gives it (`hotspot-helper-portal --account guest:croissant`).
    public var command: String
    public var process: ChildProcess
    public var log: String
    /// Where the lab writes what the user types into this helper's UI (`HOTSPOT_HELPER_UI`).
    public var uiDirectory: String
    /// The identifier it registered with (from hotspotd's status, matched by pid).
    public var identifier: String?
}

/// A station as it runs: its namespace and radio, a real wpa_supplicant, hotspotd driving it
/// (`--wpa-supplicant`: association and IP come from wpa_supplicant and the DHCP client, IP suppression
/// by policy routing), and the helpers as processes. docs/STATION.md.
public final class RunningStation: @unchecked Sendable {  // @unchecked: hotspotd, helpers, the control and wpa connections and link change only on the one thread that drives its lab (steps run in order); the rest is lets
    public let station: Station
    public let index: Int
    public let namespace: NetworkNamespace
    public let interface: String
    public let directory: String
    public let hotspotdRunDirectory: String
    public let wpaControlPath: String
    public var hotspotdLog: String { directory + "/hotspotd.log" }
    public var wpaLog: String { directory + "/wpa_supplicant.log" }
    public var traceFile: String { hotspotdRunDirectory + "/trace.jsonl" }
    /// The trace, read incrementally (`TraceTail`).
    public let trace: TraceTail
    /// The station's resolv.conf: /etc/resolv.conf for every process the lab starts in its namespace (`StationResolver`).
    public var resolvConf: String { StationResolver.file(runDirectory: hotspotdRunDirectory) }
    public private(set) var hotspotd: ChildProcess
    public private(set) var helpers: [RunningHelper]
    let lab: Lab
    let options: StationLabOptions
    private let topology: Topology
    private var controlClient: ControlClient?
    private var wpa: WPACtrlSocket?
    /// The native tier: the lab's link controller for this station's Wi-Fi (nil: a radio and wpa_supplicant).
    public internal(set) var link: StationLink?

    init(station: Station, index: Int, namespace: NetworkNamespace, interface: String, directory: String, lab: Lab,
         options: StationLabOptions, topology: Topology, hotspotd: ChildProcess, helpers: [RunningHelper]) {
        self.station = station
        self.index = index
        self.namespace = namespace
        self.interface = interface
        self.directory = directory
        hotspotdRunDirectory = directory + "/hotspotd"
        trace = TraceTail(path: hotspotdRunDirectory + "/trace.jsonl")  // `traceFile`
        wpaControlPath = directory + "/wpa-ctrl/" + interface
        self.lab = lab
        self.options = options
        self.topology = topology
        self.hotspotd = hotspotd
        self.helpers = helpers
    }

    // MARK: building

    /// Builds one station inside `lab` (radio mode: needs mac80211_hwsim).
    static func build(_ station: Station, index: Int, lab: Lab, topology: Topology, logDirectory: String,
                      options: StationLabOptions) throws -> RunningStation {
        let dir = logDirectory + "/stations/" + station.name
        try FileManager.default.createDirectory(atPath: dir + "/ui", withIntermediateDirectories: true)
        let resolvConf = try StationResolver.prepare(runDirectory: dir + "/hotspotd")
        let ns = try lab.createNamespace("s\(index)")
        try ns.route.setUp("lo")
        let (_, interfaces) = try lab.createRadio("s\(index)r", in: ns)
        guard let interface = interfaces.first else {
            throw SystemError("create radio", "for station \(station.name)", reason: "the new radio has no interface")
        }
        // wpa_supplicant with the station's known networks, all disabled until the lab joins or auto-joins.
        let conf = dir + "/wpa_supplicant.conf"
        try WPASupplicantConfig.render(station, topology: topology, controlDirectory: dir + "/wpa-ctrl", labLogDirectory: logDirectory)
            .write(toFile: conf, atomically: true, encoding: .utf8)
        let wpaLog = dir + "/wpa_supplicant.log"
        let wpaChild = try lab.spawn(ProcessConfiguration(try RunningTopology.findTool("wpa_supplicant"),
                                                          ["-i", interface, "-c", conf, "-D", "nl80211", "-t"],
                                                          stdout: .file(wpaLog), stderr: .file(wpaLog)), in: ns, resolvConf: resolvConf)
        let wpaPath = dir + "/wpa-ctrl/" + interface
        // Its control socket, waited for while wpa_supplicant runs (readiness, not a fixed time).
        try Readiness.whileRunning({ try wpaChild.poll() }, what: "wpa_supplicant for station \(station.name)", log: wpaLog) {
            try WPACtrlSocket.connect(serverPath: wpaPath, timeout: .seconds(1)).close()
        }
        let hotspotd = try spawnHotspotd(lab: lab, namespace: ns, interface: interface, directory: dir, options: options, station: station,
                                         link: nil)
        let running = RunningStation(station: station, index: index, namespace: ns, interface: interface, directory: dir, lab: lab,
                                     options: options, topology: topology, hotspotd: hotspotd, helpers: [])
        try running.connectControl()
        try running.configureManagers()
        try running.startHelpers()
        return running
    }

    static func spawnHotspotd(lab: Lab, namespace: NetworkNamespace, interface: String, directory: String,
                              options: StationLabOptions, station: Station, link: StationLink?) throws -> ChildProcess {
        let binary = try BuildProducts.locate("hotspotd", environmentKey: "HOTSPOTD")
        let log = directory + "/hotspotd.log"
        let resolvConf = try StationResolver.prepare(runDirectory: directory + "/hotspotd")
        // Provider apps: the apps file, and the environment the providers hotspotd launches inherit.
        let apps = try writeAppsFile(station, directory: directory)
        return try lab.spawn(ProcessConfiguration(binary, [
            "--run-dir", directory + "/hotspotd", "--interface", interface,
        ] + (link.map { ["--link-control", $0.socketPath] } ?? ["--wpa-supplicant", directory + "/wpa-ctrl/" + interface]) + [
            "--time-scale", "\(options.timeScale)", "--maintain-interval", "\(options.maintainInterval)",
        ] + (options.commandDeadline.map { ["--command-deadline", "\($0)"] } ?? [])
          + (options.ipv6Timeout.map { ["--ipv6-timeout", "\($0)"] } ?? []) + apps, environment: apps.isEmpty ? nil : providerEnvironment(directory: directory), stdout: .file(log), stderr: .file(log)),
                             in: namespace, resolvConf: resolvConf)
    }

    func connectControl() throws {
        let path = hotspotdRunDirectory + "/control.sock"
        // hotspotd's control socket, waited for while hotspotd runs: under load it once took more than a fixed 15 s to
        // listen, and the lab failed with control.sock ENOENT (issue 25). A hotspotd that exits fails at once.
        let child = hotspotd
        controlClient = try Readiness.whileRunning({ try child.poll() }, what: "hotspotd for station \(station.name)", log: hotspotdLog) {
            let client = try ControlClient.connect(path: path, timeout: .seconds(1))
            _ = try client.status()
            return client
        }
    }

    /// The helper commands this station runs.
    var helperCommands: [String] { options.helperOverride ?? station.helperCommands }

    func startHelpers() throws {
        do {
            var started: [RunningHelper] = []
            for (number, command) in helperCommands.enumerated() {
                started.append(try startHelper(command, number: number))
            }
            helpers = started
            try awaitRegistrations(patience: options.registrationPatience)
            try checkHelperApps()
        } catch {
            throw HelperStartFailure(error)
        }
    }

    func startHelper(_ command: String, number: Int) throws -> RunningHelper {
        let (assignments, parsed) = Self.environmentAndWords(command)
        var words = parsed
        guard !words.isEmpty else { throw SystemError("start helper", "#\(number) of station \(station.name)", reason: "empty command") }
        let name = (words[0] as NSString).lastPathComponent
        let executable: String
        if words[0].contains("/") {
            executable = words[0]
        } else if let product = try? BuildProducts.locate(words[0]) {
            executable = product
        } else {
            executable = words[0]   // looked up in PATH by the spawn
        }
        words.removeFirst()
        words += options.helperArguments[name] ?? []
        let ui = directory + "/ui/\(number)-\(name)"
        try FileManager.default.createDirectory(atPath: ui, withIntermediateDirectories: true)
        let log = directory + "/helper-\(number)-\(name).log"
        var environment = ProcessInfo.processInfo.environment
        environment["HOTSPOT_HELPER_SOCKET"] = hotspotdRunDirectory + "/helper.sock"
        environment["HOTSPOT_RESOLV_CONF"] = resolvConf
        environment["HOTSPOT_DHCP_LEASE"] = hotspotdRunDirectory + "/lease.env"
        environment["HOTSPOT_HELPER_UI"] = ui
        // The lab CA (https-only portals); the station's folder is <lab logs>/stations/<name>.
        let caFile = PortalTLS.caFile(labLogDirectory: ((directory as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent)
        if FileManager.default.fileExists(atPath: caFile) { environment["HOTSPOT_CA_FILE"] = caFile }
        // The same CA for curl, OpenSSL and Python tools (lab CA plus the system store), docs/TOPOLOGY.md.
        let bundle = PortalTLS.caBundle(labLogDirectory: labLogDirectory)
        if FileManager.default.fileExists(atPath: bundle) {
            for name in PortalTLS.bundleVariables { environment[name] = bundle }
        }
        // `NAME=value` words before the executable set (or override) the helper's environment, as in a shell.
        for (name, value) in assignments { environment[name] = value }
        // In a process group of its own: the lab's teardown signals the group, so what a helper started (a wrapper
        // script's interpreter, a worker) ends with it instead of running on after the lab.
        let child = try lab.spawn(ProcessConfiguration(executable, words, environment: environment, stdout: .file(log), stderr: .file(log),
                                                       newProcessGroup: true),
                                  in: namespace, resolvConf: resolvConf)
        return RunningHelper(command: command, process: child, log: log, uiDirectory: ui, identifier: nil)
    }

    /// A helper command line split like a shell's simple command: leading `NAME=value` words are environment
    /// assignments for the helper (`HOTSPOT_CA_FILE=/x hotspot-helper-portal ...`), the rest its words.
    public static func environmentAndWords(_ command: String) -> (environment: [(String, String)], words: [String]) {
        var words = words(command)
        var assignments: [(String, String)] = []
        while let first = words.first, let eq = first.firstIndex(of: "=") {
            let name = first[..<eq]
            guard let head = name.first, head == "_" || head.isLetter,
                  name.allSatisfy({ $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }) else { break }
            assignments.append((String(name), String(first[first.index(after: eq)...])))
            words.removeFirst()
        }
        return (assignments, words)
    }

    /// The executable's name of a helper command line (after any `NAME=value` assignments).
    public static func executableName(_ command: String) -> String? {
        environmentAndWords(command).words.first.map { ($0 as NSString).lastPathComponent }
    }

    /// A helper command line as words: spaces separate, double quotes group (`--network "Cafe Lumiere"`).
    public static func words(_ command: String) -> [String] {
        CommandWords.split(command).words
    }

    /// Waits until every helper process registered (matched by pid in hotspotd's status: the helper's, or a
    /// descendant's). A helper that exits first
    /// is named at once; one that stays alive unregistered is given up on by `patience` (what it does, not the
    /// machine's speed: `RegistrationPatience`), from its tree's CPU time and run-queue wait sampled four times a
    /// second. hotspotd's status is asked when its trace has a new `helperRegistered` event, and at each sample
    /// (four times a second) in any case; the trace is looked at every 20 ms. Until stop 46 the status was asked every
    /// 20 ms, a JSON exchange that cost both hotspotd and the runner CPU under the VM's emulation
    /// (bench/README.md, stop 46).
    func awaitRegistrations(patience: RegistrationPatience = RegistrationPatience()) throws {
        let start = ContinuousClock.now
        var watches = [RegistrationPatience.Watch](repeating: .init(), count: helpers.count)
        var sampled = start - .seconds(1)
        var traceLines = 0
        func failIfExited(_ helper: RunningHelper) throws {
            if let exit = try? helper.process.poll() {
                throw SystemError("start helper", helper.command,
                                  reason: "exited (\(exit)) before registering; log \(helper.log): \(Readiness.tail(helper.log))")
            }
        }
        while true {
            let now = ContinuousClock.now
            let sample = now - sampled >= .milliseconds(250)
            let appended = trace.read(from: traceLines)
            traceLines = appended.lines
            let registrationTraced = appended.records.contains { $0.record.event?.event == "helperRegistered" }
            guard sample || registrationTraced else {
                for helper in helpers where helper.identifier == nil { try failIfExited(helper) }
                usleep(20_000)
                continue
            }
            let status = try control().status()
            if sample { sampled = now }
            let elapsed = (now - start).secondsDouble
            var allRegistered = true
            let registered = status["helpers"]?.arrayValue ?? []
            for i in helpers.indices {
                // The helper's own pid, or one below it: a wrapper script that starts the helper without exec.
                let pid = helpers[i].process.pid
                if let entry = registered.first(where: { $0["pid"]?.doubleValue.flatMap { pid_t(exactly: $0) }.map { ProcessTree.isInTree($0, of: pid) } ?? false }) {
                    helpers[i].identifier = entry["identifier"]?.stringValue
                    continue
                }
                try failIfExited(helpers[i])
                let usage = sample ? ProcessTree.treeUsage(pid) : nil
                if case .giveUp(let why) = patience.decide(elapsed: elapsed, usage: usage, watch: &watches[i]) {
                    throw SystemError("start helper", helpers[i].command,
                                      reason: "not registered with hotspotd: \(why); log \(helpers[i].log): \(Readiness.tail(helpers[i].log))")
                }
                allRegistered = false
            }
            if allRegistered { return }
            usleep(20_000)
        }
    }

    // MARK: talking to hotspotd and wpa_supplicant

    /// The control connection to this station's hotspotd.
    public func control() throws -> ControlClient {
        if let controlClient { return controlClient }
        try connectControl()
        return controlClient!
    }

    /// hotspotd answers at once; the 60 s bound is for one that never does (10 s could be reached by a starved hotspotd).
    @discardableResult
    public func request(_ request: ControlRequest, timeout: Duration = .seconds(60)) throws -> JSON {
        try control().request(request, timeout: timeout)
    }

    public func status() throws -> JSON { try control().status() }

    /// The user joins `ssid` by hand (the password: given, or the one a helper set in filterScanList).
    public func join(_ ssid: SSID, password: String? = nil) throws { try request(.join(ssid: ssid, password: password)) }
    public func join(_ ssid: String, password: String? = nil) throws { try join(SSID(ssid), password: password) }
    /// The device joins known networks on its own.
    public func autoJoin() throws { try request(.autoJoin) }
    /// The user leaves the network.
    public func leave() throws { try request(.leave) }
    /// The armed maintain timer fires now (hotspotd's error when none is armed).
    public func fireMaintainTimer() throws { try request(.fireMaintainTimer) }
    /// The user brings `helper` (identifier) to the foreground; nil: none.
    public func foreground(_ helper: String?) throws { try request(.foreground(helper: helper)) }

    /// `logoff(network)` on behalf of a helper; true when hotspotd accepted it.
    public func logoff(helper: String) throws -> Bool {
        try logoffAnswer(helper: helper).accepted
    }

    /// The user's logoff(network) for `helper`, and the state hotspotd met it in (nil from a hotspotd that does not say,
    /// or when the station was not associated).
    public func logoffAnswer(helper: String) throws -> (accepted: Bool, state: String?) {
        let reply = try request(.logoff(helper: helper, network: nil))
        return (reply["accepted"]?.boolValue ?? false, reply["state"]?.stringValue)
    }

    /// What the user types into a helper's UI: written where the helper reads it (`HOTSPOT_HELPER_UI/input`).
    public func type(_ text: String, into helper: RunningHelper) throws {
        let tmp = helper.uiDirectory + "/.input.tmp"
        try text.write(toFile: tmp, atomically: false, encoding: .utf8)
        guard rename(tmp, helper.uiDirectory + "/input") == 0 else {
            throw SystemError.current("write the user's input for", helper.command)
        }
    }

    /// The helper by identifier or by executable name.
    public func helper(_ name: String) -> RunningHelper? {
        helpers.first { $0.identifier == name } ?? helpers.first { (Self.environmentAndWords($0.command).words.first ?? "").hasSuffix(name) }
    }

    package func wpaControl() throws -> WPACtrlSocket {
        if let wpa { return wpa }
        let c = try WPACtrlSocket.connect(serverPath: wpaControlPath, timeout: .seconds(5))
        try c.attach()
        wpa = c
        return c
    }

    /// Scans with wpa_supplicant and returns what it found, as the networks the scan list presents.
    /// The 60 s bound is for a scan that never ends (the results end the wait at once), as `roam`'s (a one-channel
    /// scan takes 0.1-0.2 s under TCG; a starved machine must not turn that into a lab fault).
    public func scan(timeout: Duration = .seconds(60)) throws -> [HotspotNetwork] {
        if let link { return link.scanResults() }   // the native tier: the scan list comes from the topology
        let c = try wpaControl()
        // Only the lab's channels: a full scan of every 2.4 and 5 GHz channel takes about 3.8 s under TCG, the
        // lab's one or two channels about 0.1 s each (issue 19); no access point of the lab is anywhere else.
        let frequencies = Hotspot.uniqueFrequencies(topology.hotspots.flatMap(\.accessPoints))
        let reply = try c.request(frequencies.isEmpty ? "SCAN" : "SCAN freq=" + frequencies.map(String.init).joined(separator: ","))
        if !reply.hasPrefix("OK") && !reply.hasPrefix("FAIL-BUSY") {
            throw SystemError("scan on", interface, reason: "wpa_supplicant answered \(reply)")
        }
        _ = try c.waitForEvent(["CTRL-EVENT-SCAN-RESULTS"], timeout: timeout)
        return WPAText.visibleNetworks(try c.request("SCAN_RESULTS"))
    }

    /// Shows the scan list: scans, sends the list to hotspotd (filterScanList to every helper), waits for the
    /// annotated list and returns it (each entry: network, annotation, claimedBy, password). hotspotd traces the list
    /// once every helper answered filterScanList or its command deadline (iOS's 45 s, scaled by the run's time scale)
    /// passed, with an on-demand evaluation provider launched first: the default bound is above the longest deadline a
    /// correct helper may use, so that only a hotspotd that never traces the list ends it (it was 15 s, below a slow
    /// but correct answer).
    public func showScanList(timeout: Duration = .seconds(120)) throws -> [TraceScanListEntry] {
        let networks = try scan()
        let before = traceLineCount()
        try request(.showScanList(networks, repeating: false))
        let deadline = ContinuousClock.now + timeout
        repeat {  // at least one look, and one after the deadline's last pause (a starved thread must not miss it)
            if let list = readTrace(from: before).last(where: { $0.record.scanList != nil })?.record.scanList {
                return list.networks
            }
            if ContinuousClock.now >= deadline { break }
            usleep(20_000)
        } while true
        throw SystemError("show the scan list on", "station \(station.name)", reason: "no annotated list within \(timeout)")
    }

    // MARK: the trace

    /// hotspotd's trace records from line `from` (0-based) on.
    public func readTrace(from: Int = 0) -> [TraceEntry] { trace.records(from: from) }

    public func traceLineCount() -> Int { trace.lineCount() }

    /// The states entered (transition targets) from trace line `from` on.
    public func states(from: Int = 0) -> [String] {
        readTrace(from: from).compactMap { $0.record.transition?.to }
    }

    /// Waits for hotspotd to enter `state`: the first transition to it at trace line `cursor` or later, or,
    /// when nothing changed since `cursor`, the state it is in. Returns the cursor for the next wait (the line
    /// after that transition).
    @discardableResult
    public func waitForState(_ state: String, after cursor: Int = 0, timeout: Duration = .seconds(20), acceptCurrent: Bool = true) throws -> Int {
        let deadline = ContinuousClock.now + timeout
        var first = acceptCurrent
        while true {
            let records = readTrace(from: cursor)
            if let index = records.firstIndex(where: { $0.record.transition?.to == state }) {
                return cursor + index + 1
            }
            // Already there: asked once (every later change of state writes a transition record, found above).
            if first, !records.contains(where: { $0.record.transition != nil }), (try? status()["state"]?.stringValue) == state {
                return cursor
            }
            first = false
            if ContinuousClock.now > deadline {
                let current = (try? status()["state"]?.stringValue) ?? "unknown"
                let path = states(from: cursor).joined(separator: " -> ")
                throw SystemError("wait for state \(state) on", "station \(station.name)",
                                  reason: "still \(current ?? "?") after \(timeout) (states entered meanwhile: \(path.isEmpty ? "none" : path)); trace \(traceFile)")
            }
            usleep(10_000)
        }
    }

    /// The station's Wi-Fi MAC address.
    public func macAddress() throws -> String {
        guard let mac = try namespace.route.link(interface).mac else {
            throw SystemError("read the MAC address of", interface, reason: "the link has none")
        }
        return "\(mac)"
    }

    // MARK: general traffic

    /// An application's HTTP GET from the station (general traffic: no helper mark; names resolved by the
    /// station's DNS). Returns the HTTP status, or nil when the request failed (with the error).
    /// How long it may take: `StationResolver.application`'s (the one place it is set).
    public func application(_ url: String) throws -> (status: Int?, error: String) {
        // https:// trusts the lab CA bundle (the lab's internet issues its certificates), as the station's tools do.
        let bundle = PortalTLS.caBundle(labLogDirectory: labLogDirectory)
        return try StationResolver.application(url, namespace: namespace, resolvConf: resolvConf,
                                               caBundle: FileManager.default.fileExists(atPath: bundle) ? bundle : nil)
    }

    /// The lab's log folder (the station's folder is `<lab logs>/stations/<name>`).
    var labLogDirectory: String { ((directory as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent }

    /// The `probe` step's requests: each URL fetched once from the station with the SDK's client (`StationTraffic`),
    /// marked as the system's own probe traffic, names resolved by the station's DNS, https:// verified against the
    /// lab CA. No redirect is followed. 20 s per URL: a first HTTPS handshake for a name waits for its certificate to
    /// be issued, which in the VM on a loaded machine has taken over 4 s; a verdict must not turn on the machine's
    /// speed (a probe the lab answers nothing to meets a reset at once, dns-hijack).
    public func probe(_ urls: [String], timeoutSeconds: Int = 20) throws -> [ProbeObservation] {
        try StationTraffic.probe(urls, in: namespace, resolvConf: resolvConf,
                                 caFile: PortalTLS.caFile(labLogDirectory: labLogDirectory), timeout: .seconds(timeoutSeconds))
    }

    // MARK: faults of the system

    /// Kills a helper with `signal` (SIGKILL: the helper dies mid-command).
    public func kill(helper: RunningHelper, signal: Int32 = SIGKILL) throws {
        try helper.process.signal(signal)
        _ = try helper.process.wait(timeout: .seconds(30))
    }

    /// Restarts hotspotd (SIGKILL, then a new one over the same run directory: the persisted cache is kept), and
    /// the helpers after it, as the system relaunches helper apps (`helperDelay`: how long they take to come back).
    /// Returns the trace line count when the old daemon was gone (where the new run's records begin).
    @discardableResult
    public func restartHotspotd(kill signal: Int32 = SIGKILL, helperDelay: Duration = .zero) throws -> Int {
        controlClient = nil
        try hotspotd.signal(signal)
        _ = try hotspotd.wait(timeout: .seconds(30))
        let newRunStart = traceLineCount()
        for helper in helpers { _ = try? helper.process.terminate(grace: .seconds(1)) }
        hotspotd = try Self.spawnHotspotd(lab: lab, namespace: namespace, interface: interface, directory: directory, options: options,
                                          station: station, link: link)
        try connectControl()
        if helperDelay > .zero {
            let (s, a) = helperDelay.components
            usleep(UInt32(s * 1_000_000 + a / 1_000_000_000_000))
        }
        try startHelpers()
        return newRunStart
    }

    func close() {
        link?.stop()
        wpa?.close()
        wpa = nil
        controlClient = nil
    }
}

/// The station's helpers (or provider apps) did not start: one could not be spawned, exited before registering, or
/// never registered. Its description is the cause's. A lab that fails this way was built as asked: what failed is the
/// subject under test, so certify judges it instead of building the lab again (`Certifier.perform`).
public struct HelperStartFailure: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ cause: any Error) { description = "\(cause)" }
}
