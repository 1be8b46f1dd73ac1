import ArgumentParser
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotStation
import HotspotSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// hotspotd: the Hotspot Helper daemon for one Wi-Fi interface (docs/PROTOCOL.md, docs/TRACE.md).
@main
struct Hotspotd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hotspotd",
        abstract: "Run the Hotspot Helper state machine for one interface; helpers and control clients connect over Unix sockets.")

    @Option(help: "Directory for the sockets (mode 0700), the state file and the trace.")
    var runDir: String = "/run/hotspotd"
    @Option(help: "Helper socket path (default RUN-DIR/helper.sock).")
    var helperSocket: String?
    @Option(help: "Control socket path (default RUN-DIR/control.sock).")
    var controlSocket: String?
    @Option(help: "Persistent state file (default RUN-DIR/state.json).")
    var stateFile: String?
    @Option(help: "Trace file, one JSON object per line (default RUN-DIR/trace.jsonl; '-' for none).")
    var traceFile: String?
    @Option(help: "The Wi-Fi interface this daemon manages.")
    var interface: String = "wlan0"
    @Option(help: "Multiply every deadline and interval (0.001 turns 45 s into 45 ms).")
    var timeScale: Double = 1.0
    @Option(help: "Maintain interval in seconds before scaling.")
    var maintainInterval: Double = 300
    @Option(help: "Scan list refresh in seconds before scaling.")
    var scanListRefresh: Double = 5
    @Option(help: "The deadline of every command with one (filterScanList, evaluate, authenticate, maintain, logoff) in seconds before scaling (45 on the platform; certify keeps it at 45 s after scaling).")
    var commandDeadline: Double = 45
    @Option(help: "Command run for network actions: HOOK ACTION INTERFACE [SSID SECURITY].")
    var hook: String?
    @Option(help: "Seconds a started frame may stay incomplete before the connection is closed (not scaled).")
    var partialFrameTimeout: Double = 10
    @Option(help: "The installed apps and their provider executables (JSON, docs/PROTOCOL.md \"The apps file\"); hotspotd refuses to start on a bad file.")
    var apps: String?
    @Option(help: "Seconds before scaling a provider may stay idle before it is stopped (idleTimeout).")
    var providerIdleTimeout: Double = 60
    @Option(help: "Run the evaluation provider in a fresh network namespace with only lo (netns) or as is (none).")
    var evaluationSandbox: String = "netns"
    @Flag(help: "Copy the trace to stderr.")
    var echoTrace = false
    @Option(help: "Run a real station: wpa_supplicant's control socket for --interface (association events in, DISCONNECT out; DHCP with hotspotd's own client; join/leave/autoJoin control requests).")
    var wpaSupplicant: String?
    @Option(help: "Run a station on a link the lab attaches (the native tier, no radio): the lab's link controller socket (association events in, join/leave out; DHCP with hotspotd's own client).")
    var linkControl: String?
    @Option(help: "With --wpa-supplicant or --link-control: carry out IP suppression with policy routing (policy-routing) or only trace it (none).")
    var ipSuppression: String = "policy-routing"

    func validate() throws {
        guard timeScale > 0, timeScale.isFinite else { throw ValidationError("--time-scale must be a positive number, got \(timeScale)") }
        guard maintainInterval > 0 else { throw ValidationError("--maintain-interval must be positive") }
        guard partialFrameTimeout > 0 else { throw ValidationError("--partial-frame-timeout must be positive") }
        guard scanListRefresh > 0 else { throw ValidationError("--scan-list-refresh must be positive") }
        guard commandDeadline > 0, commandDeadline.isFinite else { throw ValidationError("--command-deadline must be a positive number of seconds, got \(commandDeadline)") }
        guard providerIdleTimeout > 0 else { throw ValidationError("--provider-idle-timeout must be positive") }
        guard ["netns", "none"].contains(evaluationSandbox) else {
            throw ValidationError("--evaluation-sandbox: expected netns or none, found `\(evaluationSandbox)`")
        }
        if wpaSupplicant != nil, linkControl != nil {
            throw ValidationError("--wpa-supplicant and --link-control: a station has one Wi-Fi link; give one of them")
        }
        guard ["policy-routing", "none"].contains(ipSuppression) else {
            throw ValidationError("--ip-suppression: expected policy-routing or none, found `\(ipSuppression)`")
        }
    }

    func run() throws {
        var options = DaemonOptions(runDirectory: runDir, interface: interface, hook: hook, echoTrace: echoTrace)
        if let helperSocket { options.helperSocket = helperSocket }
        if let controlSocket { options.controlSocket = controlSocket }
        if let stateFile { options.stateFile = stateFile }
        if let traceFile { options.traceFile = traceFile == "-" ? nil : traceFile }
        options.partialFrameTimeout = .milliseconds(Int64(partialFrameTimeout * 1000))
        options.providerIdleTimeout = .milliseconds(Int64(providerIdleTimeout * 1000))
        if let apps {
            do {
                guard let bytes = try AtomicFile.read(apps) else { throw ValidationError("--apps \(apps): no such file") }
                options.apps = try AppsFile.parse(bytes, file: apps)
                options.appsFile = apps
                if evaluationSandbox == "netns", options.apps.contains(where: { $0.evaluationProvider != nil }) {
                    options.evaluationSandbox = [try NSExec.path(), "--new-netns", "--"]
                }
            } catch {
                logError("hotspotd: --apps \(apps): \(error)")
                throw ExitCode(1)
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
            throw ExitCode(1)
        }
        let stopper = DaemonStopper()
        let registration = SignalService.onStop { _ in stopper.stop() }
        defer { registration.cancel() }

        let daemon: Daemon
        do {
            if let wpaSupplicant {
                let station = WPAStation(options: StationOptions(
                    interface: interface, wpaControlPath: wpaSupplicant, runDirectory: runDir, suppressIP: ipSuppression == "policy-routing"))
                daemon = try Daemon(options: options, network: station, station: station)
            } else if let linkControl {
                let station = LinkStation(options: StationOptions(
                    interface: interface, wpaControlPath: "", runDirectory: runDir, suppressIP: ipSuppression == "policy-routing"),
                    linkPath: linkControl)
                daemon = try Daemon(options: options, network: station, station: station)
            } else {
                daemon = try Daemon(options: options)
            }
            try daemon.start()
        } catch {
            logError("hotspotd: \(error)")
            throw ExitCode(1)
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
