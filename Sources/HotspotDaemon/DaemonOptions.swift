import HotspotCore
import HotspotProtocol

/// hotspotd's configuration.
public struct DaemonOptions: Sendable {
    /// Holds the sockets (mode 0700), the state file and the trace unless given elsewhere.
    public var runDirectory: String
    public var helperSocket: String
    public var controlSocket: String
    public var stateFile: String
    /// nil: no trace file (subscribers still get every record).
    public var traceFile: String?
    /// The size at which the trace file rotates (`TraceWriter`; docs/RELIABILITY.md).
    public var traceMaximumBytes: Int = TraceWriter.defaultMaximumBytes
    /// The one Wi-Fi interface this daemon manages.
    public var interface: String
    public var timing: Timing
    /// See `HookNetworkControl`.
    public var hook: String?
    /// Copy every trace record to stderr.
    public var echoTrace: Bool
    /// How long a started frame may stay incomplete before the connection is closed (not scaled).
    public var partialFrameTimeout: Duration = .seconds(10)
    /// The installed apps (`--apps`); empty: legacy helpers only.
    public var apps: [AppDeclaration] = []
    /// Where `apps` came from (named in errors).
    public var appsFile: String?
    /// A running provider with no command for this long is stopped (`idleTimeout`); scaled by `timing`.
    public var providerIdleTimeout: Duration = .seconds(60)
    /// After `stop`, how long a provider has to answer `stopped` before its connection is closed (not scaled).
    public var providerStopGrace: Duration = .seconds(5)
    /// After its connection closed, how long a provider process has to exit before SIGKILL (not scaled).
    public var providerKillGrace: Duration = .seconds(2)
    /// The argv prefix that runs the evaluation provider in its sandbox (e.g. `hotspot-nsexec --new-netns --`);
    /// nil: no sandbox.
    public var evaluationSandbox: [String]?

    public init(runDirectory: String, interface: String = "wlan0", timing: Timing = .standard, hook: String? = nil,
                echoTrace: Bool = false)
    {
        self.runDirectory = runDirectory
        helperSocket = runDirectory + "/helper.sock"
        controlSocket = runDirectory + "/control.sock"
        stateFile = runDirectory + "/state.json"
        traceFile = runDirectory + "/trace.jsonl"
        self.interface = interface
        self.timing = timing
        self.hook = hook
        self.echoTrace = echoTrace
    }
}
