import HotspotCore

/// hotspotd's configuration.
public struct DaemonOptions: Sendable {
    /// Holds the sockets (mode 0700), the state file and the trace unless given elsewhere.
    public var runDirectory: String
    public var helperSocket: String
    public var controlSocket: String
    public var stateFile: String
    /// nil: no trace file (subscribers still get every record).
    public var traceFile: String?
    /// The one Wi-Fi interface this daemon manages.
    public var interface: String
    public var timing: Timing
    /// See `HookNetworkControl`.
    public var hook: String?
    /// Copy every trace record to stderr.
    public var echoTrace: Bool
    /// How long a started frame may stay incomplete before the connection is closed (not scaled).
    public var partialFrameTimeout: Duration = .seconds(10)

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
