import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotStation
import HotspotSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// hotspotd: the Hotspot Helper daemon for one Wi-Fi interface (docs/PROTOCOL.md, docs/TRACE.md). Its command line is
/// read with `OptionReader` (not swift-argument-parser: a lab starts hotspotd once per station, and in the VM that
/// parser's reflection cost about 0.7 s of CPU per start; bench/README.md "Process starts in the VM").
@main
struct Hotspotd {
    var runDir: String
    var helperSocket: String?
    var controlSocket: String?
    var stateFile: String?
    var traceFile: String?
    var interface: String
    var timeScale: Double
    var maintainInterval: Double
    var scanListRefresh: Double
    var commandDeadline: Double
    var hook: String?
    var partialFrameTimeout: Double
    var apps: String?
    var providerIdleTimeout: Double
    var evaluationSandbox: String
    var echoTrace: Bool
    var wpaSupplicant: String?
    var linkControl: String?
    var ipSuppression: String
    var ipv6Timeout: Double

    static func main() {
        var options = OptionReader(
            command: "hotspotd",
            abstract: "Run the Hotspot Helper state machine for one interface; helpers and control clients connect over Unix sockets.")
        let daemon = Hotspotd(options: &options)
        options.finish()
        if let problem = daemon.validate() { options.usageError(problem) }
        daemon.run()
    }

    init(options o: inout OptionReader) {
        runDir = o.value("run-dir", default: "/run/hotspotd", help: "Directory for the sockets (mode 0700), the state file and the trace.")
        helperSocket = o.value("helper-socket", help: "Helper socket path (default RUN-DIR/helper.sock).")
        controlSocket = o.value("control-socket", help: "Control socket path (default RUN-DIR/control.sock).")
        stateFile = o.value("state-file", help: "Persistent state file (default RUN-DIR/state.json).")
        traceFile = o.value("trace-file", help: "Trace file, one JSON object per line (default RUN-DIR/trace.jsonl; '-' for none).")
        interface = o.value("interface", default: "wlan0", help: "The Wi-Fi interface this daemon manages.")
        timeScale = o.value("time-scale", default: 1.0, help: "Multiply every deadline and interval (0.001 turns 45 s into 45 ms).")
        maintainInterval = o.value("maintain-interval", default: 300.0, help: "Maintain interval in seconds before scaling.")
        scanListRefresh = o.value("scan-list-refresh", default: 5.0, help: "Scan list refresh in seconds before scaling.")
        commandDeadline = o.value("command-deadline", default: 45.0, help: "The deadline of every command with one (filterScanList, evaluate, authenticate, maintain, logoff) in seconds before scaling (45 on the platform; certify keeps it at 45 s after scaling).")
        hook = o.value("hook", help: "Command run for network actions: HOOK ACTION INTERFACE [SSID SECURITY].")
        partialFrameTimeout = o.value("partial-frame-timeout", default: 10.0, help: "Seconds a started frame may stay incomplete before the connection is closed (not scaled).")
        apps = o.value("apps", help: "The installed apps and their provider executables (JSON, docs/PROTOCOL.md \"The apps file\"); hotspotd refuses to start on a bad file.")
        providerIdleTimeout = o.value("provider-idle-timeout", default: 60.0, help: "Seconds before scaling a provider may stay idle before it is stopped (idleTimeout).")
        evaluationSandbox = o.value("evaluation-sandbox", default: "netns", help: "Run the evaluation provider in a fresh network namespace with only lo (netns) or as is (none).")
        echoTrace = o.flag("echo-trace", help: "Copy the trace to stderr.")
        wpaSupplicant = o.value("wpa-supplicant", help: "Run a real station: wpa_supplicant's control socket for --interface (association events in, DISCONNECT out; DHCP with hotspotd's own client; join/leave/autoJoin control requests).")
        linkControl = o.value("link-control", help: "Run a station on a link the lab attaches (the native tier, no radio): the lab's link controller socket (association events in, join/leave out; DHCP with hotspotd's own client).")
        ipv6Timeout = o.value("ipv6-timeout", default: 60.0, help: "With --wpa-supplicant or --link-control: seconds after an association the IPv6 side (Router Advertisement, SLAAC, DHCPv6) may take (not scaled); with no DHCPv4 lease either, the station has no address (traced ipv6Failed).")
        ipSuppression = o.value("ip-suppression", default: "policy-routing", help: "With --wpa-supplicant or --link-control: carry out IP suppression with policy routing (policy-routing) or only trace it (none).")
    }

    /// The first problem with the options' values, nil when there is none.
    func validate() -> String? {
        guard timeScale > 0, timeScale.isFinite else { return "--time-scale must be a positive number, got \(timeScale)" }
        guard maintainInterval > 0 else { return "--maintain-interval must be positive" }
        guard partialFrameTimeout > 0 else { return "--partial-frame-timeout must be positive" }
        guard scanListRefresh > 0 else { return "--scan-list-refresh must be positive" }
        guard commandDeadline > 0, commandDeadline.isFinite else { return "--command-deadline must be a positive number of seconds, got \(commandDeadline)" }
        guard ipv6Timeout > 0, ipv6Timeout.isFinite else { return "--ipv6-timeout must be a positive number of seconds, got \(ipv6Timeout)" }
        guard providerIdleTimeout > 0 else { return "--provider-idle-timeout must be positive" }
        guard ["netns", "none"].contains(evaluationSandbox) else {
            return "--evaluation-sandbox: expected netns or none, found `\(evaluationSandbox)`"
        }
        if wpaSupplicant != nil, linkControl != nil {
            return "--wpa-supplicant and --link-control: a station has one Wi-Fi link; give one of them"
        }
        guard ["policy-routing", "none"].contains(ipSuppression) else {
            return "--ip-suppression: expected policy-routing or none, found `\(ipSuppression)`"
        }
        return nil
    }

    func run() {
        var options = DaemonOptions(runDirectory: runDir, interface: interface, hook: hook, echoTrace: echoTrace)
        if let helperSocket { options.helperSocket = helperSocket }
        if let controlSocket { options.controlSocket = controlSocket }
        if let stateFile { options.stateFile = stateFile }
        if let traceFile { options.traceFile = traceFile == "-" ? nil : traceFile }
        options.partialFrameTimeout = .milliseconds(Int64(partialFrameTimeout * 1000))
        options.providerIdleTimeout = .milliseconds(Int64(providerIdleTimeout * 1000))
        if let apps {
            do {
                guard let bytes = try AtomicFile.read(apps) else { throw SystemError("read the apps file", apps, reason: "no such file") }
                options.apps = try AppsFile.parse(bytes, file: apps)
                options.appsFile = apps
                if evaluationSandbox == "netns", options.apps.contains(where: { $0.evaluationProvider != nil }) {
                    options.evaluationSandbox = [try NSExec.path(), "--new-netns", "--"]
                }
            } catch {
                logError("hotspotd: --apps \(apps): \(error)")
                exit(1)
            }
        }
        let deadline = Duration.milliseconds(Int64(commandDeadline * 1000))
        options.timing = Timing(
            filterScanListDeadline: deadline, evaluateDeadline: deadline, authenticateDeadline: deadline,
            maintainDeadline: deadline, logoffDeadline: deadline,
            maintainInterval: .milliseconds(Int64(maintainInterval * 1000)),
            scanListRefresh: .milliseconds(Int64(scanListRefresh * 1000)), scale: timeScale)

        // SIGTERM/SIGINT end the loop cleanly (the signal service; taken over even when inherited ignored); a write to a
        // closed socket fails with EPIPE instead of a SIGPIPE.
        do {
            try SignalService.install(stop: [SIGTERM, SIGINT], ignore: [SIGPIPE])
        } catch {
            logError("hotspotd: \(error)")
            exit(1)
        }
        let stopper = DaemonStopper()
        let registration = SignalService.onStop { _ in stopper.stop() }
        defer { registration.cancel() }

        // Both station backends (radio, native link) take the same options; only the radio has a wpa_supplicant socket.
        var stationOptions = StationOptions(interface: interface, wpaControlPath: "", runDirectory: runDir,
                                            suppressIP: ipSuppression == "policy-routing",
                                            ipv6Timeout: .milliseconds(Int64(ipv6Timeout * 1000)))
        let daemon: Daemon
        do {
            if let wpaSupplicant {
                stationOptions.wpaControlPath = wpaSupplicant
                let station = WPAStation(options: stationOptions)
                daemon = try Daemon(options: options, network: station, station: station)
            } else if let linkControl {
                let station = LinkStation(options: stationOptions, linkPath: linkControl)
                daemon = try Daemon(options: options, network: station, station: station)
            } else {
                daemon = try Daemon(options: options)
            }
            try daemon.start()
        } catch {
            logError("hotspotd: \(error)")
            exit(1)
        }
        stopper.set(daemon)
        daemon.run()
    }
}

/// Stops the daemon once it exists (a stop signal before that ends `run` as soon as the daemon is set).
final class DaemonStopper: Sendable {
    private let state = Synchronization.Mutex<(daemon: Daemon?, stopped: Bool)>((nil, false))

    func set(_ daemon: Daemon) {
        let stop = state.withLock { state in
            state.daemon = daemon
            return state.stopped
        }
        if stop { daemon.stop() }
    }

    func stop() {
        let daemon = state.withLock { state in
            state.stopped = true
            return state.daemon
        }
        daemon?.stop()
    }
}
