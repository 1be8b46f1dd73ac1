import HotspotCore

// The payload of every kind of trace record (docs/TRACE.md, "Kinds"), in the JSON form hotspotd has always
// written. Field names are the JSON names; an optional field is left out when nil, except where a custom
// `encode(to:)` writes `null` as hotspotd does (`bestHelper`, `deadline_ms`, ...). Decoding is lenient as the
// readers it replaced were: an optional field that is absent, null or of another type is nil.
//
// A new kind: copy the struct of a similar kind (say `LogoffAnswer`), rename it and its `kind`, set its fields
// and `example`, then add its case and its `payloadTypes` entry in TraceRecord.swift.

extension TraceRecord {
    /// The daemon started.
    public struct Start: TracePayload {
        public static let kind = "start"
        public var record: TraceRecord { .start(self) }
        /// The trace format (`traceFormatVersion`; a replay refuses a newer one).
        public var traceVersion: Int?
        public var pid: Int?
        public var interface: String?
        public var helperSocket: String?
        public var controlSocket: String?
        public var stateFile: String?
        public var timeScale: Double?
        public var maintainInterval_ms: Double?
        public var protocolVersion: Int?
        /// CLOCK_REALTIME seconds.
        public var wallclock_s: Double?
        /// `none`, `loaded`, `corrupt`.
        public var state: String?
        /// The loaded cache, auto-join list and manager configurations, when at most 16 KiB.
        public var persisted: JSON?
        public var persistedSummary: PersistedSummary?
        public var removedTemporaries: [String]?
        public var appsFile: String?
        public var apps: [JSON]?

        public struct PersistedSummary: Codable, Sendable, Hashable {
            public var cacheEntries: Int
            public var autoJoinDisabled: Int
            public var bytes: Int
            public var limit: Int
            public init(cacheEntries: Int, autoJoinDisabled: Int, bytes: Int, limit: Int) {
                self.cacheEntries = cacheEntries
                self.autoJoinDisabled = autoJoinDisabled
                self.bytes = bytes
                self.limit = limit
            }
        }

        public init(traceVersion: Int? = nil, pid: Int? = nil, interface: String? = nil, helperSocket: String? = nil,
                    controlSocket: String? = nil, stateFile: String? = nil, timeScale: Double? = nil,
                    maintainInterval_ms: Double? = nil, protocolVersion: Int? = nil, wallclock_s: Double? = nil,
                    state: String? = nil, persisted: JSON? = nil, persistedSummary: PersistedSummary? = nil,
                    removedTemporaries: [String]? = nil, appsFile: String? = nil, apps: [JSON]? = nil) {
            self.traceVersion = traceVersion
            self.pid = pid
            self.interface = interface
            self.helperSocket = helperSocket
            self.controlSocket = controlSocket
            self.stateFile = stateFile
            self.timeScale = timeScale
            self.maintainInterval_ms = maintainInterval_ms
            self.protocolVersion = protocolVersion
            self.wallclock_s = wallclock_s
            self.state = state
            self.persisted = persisted
            self.persistedSummary = persistedSummary
            self.removedTemporaries = removedTemporaries
            self.appsFile = appsFile
            self.apps = apps
        }

        public static let example = Start(
            traceVersion: 1, pid: 6205, interface: "wlan0", helperSocket: "/run/hotspotd/helper.sock",
            controlSocket: "/run/hotspotd/control.sock", stateFile: "/run/hotspotd/state.json", timeScale: 0.01,
            maintainInterval_ms: 3000, protocolVersion: 1, wallclock_s: 1764172800.5, state: "loaded",
            persisted: ["cache": [], "autoJoinDisabled": []], removedTemporaries: ["/run/hotspotd/state.json.tmp.1"],
            appsFile: "/run/hotspotd/apps.json", apps: [["bundleIdentifier": "com.example.app"]])
    }

    /// The daemon stopped (SIGTERM/SIGINT).
    public struct Stop: TracePayload {
        public static let kind = "stop"
        public var record: TraceRecord { .stop(self) }
        public init() {}
        public static let example = Stop()
    }

    /// The state file was corrupt and moved aside.
    public struct Warning: TracePayload {
        public static let kind = "warning"
        public var record: TraceRecord { .warning(self) }
        public var message: String
        /// Written as null when the file could not be moved.
        public var movedTo: String?
        public init(message: String, movedTo: String?) {
            self.message = message
            self.movedTo = movedTo
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(message, forKey: .message)
            try c.encode(movedTo, forKey: .movedTo)
        }
        public static let example = Warning(message: "warning: state file /run/hotspotd/state.json is corrupt (bad JSON); moved to /run/hotspotd/state.json.corrupt; starting clean",
                                            movedTo: "/run/hotspotd/state.json.corrupt")
    }

    /// The loaded state file held more than `limit` cache entries or auto-join-disabled networks: the first
    /// `limit` of each in the file's order were kept and the trimmed state written back.
    public struct StateTrimmed: TracePayload {
        public static let kind = "stateTrimmed"
        public var record: TraceRecord { .stateTrimmed(self) }
        public var file: String
        public var limit: Int
        public var cacheDropped: Int
        public var autoJoinDisabledDropped: Int
        public init(file: String, limit: Int, cacheDropped: Int, autoJoinDisabledDropped: Int) {
            self.file = file
            self.limit = limit
            self.cacheDropped = cacheDropped
            self.autoJoinDisabledDropped = autoJoinDisabledDropped
        }
        public static let example = StateTrimmed(file: "/run/hotspotd/state.json", limit: 1024, cacheDropped: 18_976,
                                                 autoJoinDisabledDropped: 0)
    }

    /// The first record written after trace writes failed: `records` records, `firstSeq` to `lastSeq`, are not
    /// in the file, none of them in part.
    public struct TraceLoss: TracePayload {
        public static let kind = "traceLoss"
        public var record: TraceRecord { .traceLoss(self) }
        public var file: String
        /// The first failure's error (operation, file, errno text).
        public var error: String
        public var records: Int
        public var firstSeq: Int
        public var lastSeq: Int
        public init(file: String, error: String, records: Int, firstSeq: Int, lastSeq: Int) {
            self.file = file
            self.error = error
            self.records = records
            self.firstSeq = firstSeq
            self.lastSeq = lastSeq
        }
        public static let example = TraceLoss(file: "/run/hotspotd/trace.jsonl",
                                              error: "append to /run/hotspotd/trace.jsonl: No space left on device (ENOSPC)",
                                              records: 12, firstSeq: 340, lastSeq: 351)
    }

    /// The connection cap or the descriptor limit was reached on a socket, or that run ended.
    public struct ConnectionLimit: TracePayload {
        public static let kind = "connectionLimit"
        public var record: TraceRecord { .connectionLimit(self) }
        /// `helper` or `control`.
        public var socket: String
        /// `refuse` (the first of a run of connections refused at the cap) and `accept` (the run ended), with
        /// `limit` and `refused`; `backOff` (accept(2) found no descriptor) with `error` and `open`; `resume`
        /// with `open`.
        public var action: String
        public var limit: Int?
        /// Connections refused at the cap since hotspotd started.
        public var refused: Int?
        public var error: String?
        /// Connections open on the socket.
        public var open: Int?
        public init(socket: String, action: String, limit: Int? = nil, refused: Int? = nil, error: String? = nil, open: Int? = nil) {
            self.socket = socket
            self.action = action
            self.limit = limit
            self.refused = refused
            self.error = error
            self.open = open
        }
        public static let example = ConnectionLimit(socket: "helper", action: "refuse", limit: 768, refused: 1)
    }

    /// A peer connected.
    public struct Connect: TracePayload {
        public static let kind = "connect"
        public var record: TraceRecord { .connect(self) }
        public var peer: TracePeer
        /// `helper` or `control`.
        public var socket: String
        public init(peer: TracePeer, socket: String) {
            self.peer = peer
            self.socket = socket
        }
        public static let example = Connect(peer: TracePeer(connection: 1, pid: 6208, uid: 0, gid: 0), socket: "helper")
    }

    /// A connection ended.
    public struct Disconnect: TracePayload {
        public static let kind = "disconnect"
        public var record: TraceRecord { .disconnect(self) }
        public var peer: TracePeer
        public var socket: String
        public var reason: String
        public var helper: String?
        public init(peer: TracePeer, socket: String, reason: String, helper: String?) {
            self.peer = peer
            self.socket = socket
            self.reason = reason
            self.helper = helper
        }
        public static let example = Disconnect(peer: TracePeer(connection: 1, pid: 6208, uid: 0, gid: 0), socket: "helper", reason: "end of file", helper: "py.one")
    }

    /// An event fed to the state machine, with its detail and its source.
    public struct Event: TracePayload {
        public static let kind = "event"
        public var record: TraceRecord { .event(self) }
        /// The event's name (docs/TRACE.md, "Event names").
        public var event: String
        public var detail: Detail?
        /// Where the event came from (its fields sit in the record).
        public var origin: EventSource
        /// `scanListHidden` (control only) carries its source as an object under `source`.
        public var source: JSON?

        enum CodingKeys: String, CodingKey { case event, detail, origin, source }

        public init(event: String, detail: Detail? = nil, origin: EventSource = EventSource(), source: JSON? = nil) {
            self.event = event
            self.detail = detail
            self.origin = origin
            self.source = source
        }

        /// The event's own fields (each event has some of them).
        public struct Detail: Codable, Sendable, Hashable {
            /// `associated`: the network with all its properties; `logoffRequested`: its identity.
            public var network: TraceNetwork?
            /// `signalChanged`: 0.0-1.0.
            public var signalStrength: Double?
            /// `helperRegistered`, `helperGone`, `response`, `logoffRequested`, `foreground` (null: no helper).
            public var helper: String?
            public var displayName: String?
            /// `response`, `deadlinePassed`.
            public var command: Int?
            /// `response`.
            public var result: String?
            /// `scanListShown`.
            public var networks: [TraceNetwork]?
            /// `foreground` of no helper: `helper` is written as null.
            public var helperIsNull = false

            enum CodingKeys: String, CodingKey { case network, signalStrength, helper, displayName, command, result, networks }

            public init(network: TraceNetwork? = nil, signalStrength: Double? = nil, helper: String? = nil, displayName: String? = nil,
                        command: Int? = nil, result: String? = nil, networks: [TraceNetwork]? = nil, helperIsNull: Bool = false) {
                self.network = network
                self.signalStrength = signalStrength
                self.helper = helper
                self.displayName = displayName
                self.command = command
                self.result = result
                self.networks = networks
                self.helperIsNull = helperIsNull
            }

            public init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                network = try c.decodeIfPresent(TraceNetwork.self, forKey: .network)
                signalStrength = try c.decodeIfPresent(Double.self, forKey: .signalStrength)
                helper = try c.decodeIfPresent(String.self, forKey: .helper)
                helperIsNull = try c.contains(.helper) && c.decodeNil(forKey: .helper)
                displayName = try c.decodeIfPresent(String.self, forKey: .displayName)
                command = try c.decodeIfPresent(Int.self, forKey: .command)
                result = try c.decodeIfPresent(String.self, forKey: .result)
                networks = try c.decodeIfPresent([TraceNetwork].self, forKey: .networks)
            }

            public func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encodeIfPresent(network, forKey: .network)
                try c.encodeIfPresent(signalStrength, forKey: .signalStrength)
                if helperIsNull && helper == nil { try c.encodeNil(forKey: .helper) } else { try c.encodeIfPresent(helper, forKey: .helper) }
                try c.encodeIfPresent(displayName, forKey: .displayName)
                try c.encodeIfPresent(command, forKey: .command)
                try c.encodeIfPresent(result, forKey: .result)
                try c.encodeIfPresent(networks, forKey: .networks)
            }
        }

        public static let example = Event(
            event: "associated", detail: Detail(network: TraceNetwork(HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:01:00"))),
            origin: EventSource(via: "control", peer: TracePeer(connection: 2, pid: 6210, uid: 0, gid: 0)))
    }

    /// Where an event came from: `via` (`control`, `timer`, `manager`, `provider`, `evaluatedSSIDs`,
    /// `wpa_supplicant`, `dhcp`, ...) with the control peer, or the helper (and its connection when it
    /// registers), or the app. Inline.
    public struct EventSource: JSONInlineFields, Sendable, Hashable {
        public var via: String?
        public var peer: TracePeer
        public var helper: String?
        public var displayName: String?
        public var app: String?
        public init(via: String? = nil, peer: TracePeer = TracePeer(), helper: String? = nil, displayName: String? = nil, app: String? = nil) {
            self.via = via
            self.peer = peer
            self.helper = helper
            self.displayName = displayName
            self.app = app
        }
    }

    /// The state changed.
    public struct Transition: TracePayload {
        public static let kind = "transition"
        public var record: TraceRecord { .transition(self) }
        public var from: String
        public var to: String
        /// Written as null when there is none.
        public var bestHelper: String?
        public init(from: String, to: String, bestHelper: String?) {
            self.from = from
            self.to = to
            self.bestHelper = bestHelper
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(from, forKey: .from)
            try c.encode(to, forKey: .to)
            try c.encode(bestHelper, forKey: .bestHelper)
        }
        public static let example = Transition(from: "Evaluating", to: "Authenticating", bestHelper: "py.one")
    }

    /// A command was sent.
    public struct Command: TracePayload {
        public static let kind = "command"
        public var record: TraceRecord { .command(self) }
        public var id: Int
        public var commandType: String
        public var helper: String
        public var network: TraceNetwork?
        public var networkList: [TraceNetwork]?
        /// Written as null when the command has no deadline.
        public var deadline_ms: Double?
        public init(id: Int, commandType: String, helper: String, network: TraceNetwork?, networkList: [TraceNetwork]?, deadline_ms: Double?) {
            self.id = id
            self.commandType = commandType
            self.helper = helper
            self.network = network
            self.networkList = networkList
            self.deadline_ms = deadline_ms
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(commandType, forKey: .commandType)
            try c.encode(helper, forKey: .helper)
            try c.encodeIfPresent(network, forKey: .network)
            try c.encodeIfPresent(networkList, forKey: .networkList)
            try c.encode(deadline_ms, forKey: .deadline_ms)
        }
        public static let example = Command(id: 1, commandType: "evaluate", helper: "py.one",
                                            network: TraceNetwork(HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:01:00")), networkList: nil, deadline_ms: 450)
    }

    /// A helper's answer was read (before the machine judged it).
    public struct Response: TracePayload {
        public static let kind = "response"
        public var record: TraceRecord { .response(self) }
        public var helper: String
        public var command: Int
        public var result: String
        public var resultCode: Int?
        /// Set while the command is outstanding.
        public var commandType: String?
        /// From sending the command to reading the answer.
        public var latency_us: Double?
        public var network: TraceNetwork?
        public var networkList: [TraceNetwork]?
        public init(helper: String, command: Int, result: String, resultCode: Int?, commandType: String?, latency_us: Double?,
                    network: TraceNetwork?, networkList: [TraceNetwork]?) {
            self.helper = helper
            self.command = command
            self.result = result
            self.resultCode = resultCode
            self.commandType = commandType
            self.latency_us = latency_us
            self.network = network
            self.networkList = networkList
        }
        public static let example = Response(helper: "py.one", command: 1, result: "success", resultCode: 0, commandType: "evaluate", latency_us: 472,
                                             network: TraceNetwork(HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:01:00", confidence: .high)), networkList: nil)
    }

    /// A command was withdrawn.
    public struct Cancel: TracePayload {
        public static let kind = "cancel"
        public var record: TraceRecord { .cancel(self) }
        public var command: Int
        public var helper: String
        public init(command: Int, helper: String) {
            self.command = command
            self.helper = helper
        }
        public static let example = Cancel(command: 3, helper: "py.one")
    }

    /// A message was rejected; it changed nothing.
    public struct Rejected: TracePayload {
        public static let kind = "rejected"
        public var record: TraceRecord { .rejected(self) }
        /// `unknownCommand`, `notYourCommand`, `duplicateResponse`, `lateResponse`, `withdrawnCommand`,
        /// `duplicateRegistration`, `invalidDisplayName`, `notRegistered`.
        public var reason: String
        public var command: Int?
        public var helper: String?
        public var sentTo: String?
        public var displayName: String?
        public var role: String?
        public var message: String?
        public init(reason: String, command: Int? = nil, helper: String? = nil, sentTo: String? = nil, displayName: String? = nil,
                    role: String? = nil, message: String? = nil) {
            self.reason = reason
            self.command = command
            self.helper = helper
            self.sentTo = sentTo
            self.displayName = displayName
            self.role = role
            self.message = message
        }
        public init(_ r: Rejection, message: String?) {
            switch r {
            case .unknownCommand(let id, let h): self.init(reason: "unknownCommand", command: Int(id), helper: h)
            case .notYourCommand(let id, let h, let to): self.init(reason: "notYourCommand", command: Int(id), helper: h, sentTo: to)
            case .duplicateResponse(let id, let h): self.init(reason: "duplicateResponse", command: Int(id), helper: h)
            case .lateResponse(let id, let h): self.init(reason: "lateResponse", command: Int(id), helper: h)
            case .withdrawnCommand(let id, let h): self.init(reason: "withdrawnCommand", command: Int(id), helper: h)
            case .duplicateRegistration(let h): self.init(reason: "duplicateRegistration", helper: h)
            case .invalidDisplayName(let h, let n): self.init(reason: "invalidDisplayName", helper: h, displayName: n)
            case .notRegistered(let h): self.init(reason: "notRegistered", helper: h)
            }
            self.message = message
        }
        public static let example = Rejected(.duplicateResponse(1, from: "py.one"), message: "second response from py.one to command 1")
    }

    /// An answer counted other than meant, or part of it was dropped.
    public struct Irregular: TracePayload {
        public static let kind = "irregular"
        public var record: TraceRecord { .irregular(self) }
        /// `noAnswer`, `invalidResult`, `unlistedNetwork`, `securedWithoutPassword`, `wrongNetwork`.
        public var irregularity: String
        public var command: Int
        public var helper: String
        public var message: String?
        public var commandType: String?
        public var result: String?
        public var ssid: TraceSSID
        public var bssid: String?
        public init(irregularity: String, command: Int, helper: String, message: String?, commandType: String? = nil, result: String? = nil,
                    ssid: TraceSSID = TraceSSID(text: nil), bssid: String? = nil) {
            self.irregularity = irregularity
            self.command = command
            self.helper = helper
            self.message = message
            self.commandType = commandType
            self.result = result
            self.ssid = ssid
            self.bssid = bssid
        }
        public init(_ i: Irregularity, message: String?) {
            switch i {
            case .invalidResult(let id, let t, let r, let h):
                self.init(irregularity: "invalidResult", command: Int(id), helper: h, message: message, commandType: t.description, result: r.description)
            case .noAnswer(let id, let t, let h):
                self.init(irregularity: "noAnswer", command: Int(id), helper: h, message: message, commandType: t.description)
            case .unlistedNetwork(let id, let s, let b, let h):
                self.init(irregularity: "unlistedNetwork", command: Int(id), helper: h, message: message, ssid: TraceSSID(s), bssid: b)
            case .wrongNetwork(let id, let s, let h):
                self.init(irregularity: "wrongNetwork", command: Int(id), helper: h, message: message, ssid: TraceSSID(s))
            case .securedWithoutPassword(let id, let s, let b, let h):
                self.init(irregularity: "securedWithoutPassword", command: Int(id), helper: h, message: message, ssid: TraceSSID(s), bssid: b)
            }
        }
        public static let example = Irregular(.noAnswer(2, .authenticate, from: "py.one"), message: "py.one gave no answer to authenticate command 2: counted as failure")
    }

    /// A frame was malformed or not allowed.
    public struct ProtocolErrorRecord: TracePayload {
        public static let kind = "protocolError"
        public var record: TraceRecord { .protocolError(self) }
        public var peer: TracePeer
        public var socket: String
        public var code: String
        public var message: String
        public var helper: String?
        /// The first 200 bytes of the frame.
        public var offending: String?
        public var offendingBytes: Int?
        public init(peer: TracePeer, socket: String, code: String, message: String, helper: String?, offending: String?, offendingBytes: Int?) {
            self.peer = peer
            self.socket = socket
            self.code = code
            self.message = message
            self.helper = helper
            self.offending = offending
            self.offendingBytes = offendingBytes
        }
        public static let example = ProtocolErrorRecord(peer: TracePeer(connection: 1, pid: 6208, uid: 0, gid: 0), socket: "helper", code: "malformedJSON",
                                                        message: "invalid literal at byte 1", helper: "py.one", offending: "{x", offendingBytes: 2)
    }

    /// A timer fired.
    public struct Timer: TracePayload {
        public static let kind = "timer"
        public var record: TraceRecord { .timer(self) }
        /// `deadline` (+ `command`), `maintain`, `scanListRefresh`, `providerIdle` (+ `app`, `role`).
        public var timer: String
        public var command: Int?
        public var app: String?
        public var role: String?
        public init(timer: String, command: Int? = nil, app: String? = nil, role: String? = nil) {
            self.timer = timer
            self.command = command
            self.app = app
            self.role = role
        }
        public static let example = Timer(timer: "deadline", command: 2)
    }

    /// The maintain timer was armed or cancelled.
    public struct MaintainTimer: TracePayload {
        public static let kind = "maintainTimer"
        public var record: TraceRecord { .maintainTimer(self) }
        /// `arm` (+ `after_ms`) or `cancel`.
        public var action: String
        public var after_ms: Double?
        public init(action: String, after_ms: Double? = nil) {
            self.action = action
            self.after_ms = after_ms
        }
        public static let example = MaintainTimer(action: "arm", after_ms: 3000)
    }

    /// A network action was carried out.
    public struct NetworkAction: TracePayload {
        public static let kind = "network"
        public var record: TraceRecord { .network(self) }
        /// `suppressIP`, `releaseIP`, `disassociate`.
        public var action: String
        public var interface: String
        public init(action: String, interface: String) {
            self.action = action
            self.interface = interface
        }
        public static let example = NetworkAction(action: "releaseIP", interface: "wlan0")
    }

    /// The hook command ended.
    public struct Hook: TracePayload {
        public static let kind = "hook"
        public var record: TraceRecord { .hook(self) }
        public var argv: [String]
        /// The wait status.
        public var status: Int?
        public var error: String?
        public init(argv: [String], status: Int?, error: String?) {
            self.argv = argv
            self.status = status
            self.error = error
        }
        public static let example = Hook(argv: ["/etc/hotspotd/hook", "releaseIP", "wlan0"], status: 0, error: nil)
    }

    /// Auto-join changed.
    public struct AutoJoin: TracePayload {
        public static let kind = "autoJoin"
        public var record: TraceRecord { .autoJoin(self) }
        /// `disable` or `enable`.
        public var action: String
        /// `{ssid, security}`.
        public var network: TraceNetwork
        public init(action: String, network: TraceNetwork) {
            self.action = action
            self.network = network
        }
        public static let example = AutoJoin(action: "disable", network: TraceNetwork(NetworkIdentity(rawSSID: SSID("Cafe"), security: .open)))
    }

    /// The cache changed.
    public struct Cache: TracePayload {
        public static let kind = "cache"
        public var record: TraceRecord { .cache(self) }
        /// `set` (+ `helper` or `notCaptive`), `remove`, `evict` (+ `limit`, `reason`).
        public var action: String
        public var network: TraceNetwork
        public var helper: String?
        public var notCaptive: Bool?
        public var limit: Int?
        public var reason: String?
        public init(action: String, network: TraceNetwork, helper: String? = nil, notCaptive: Bool? = nil, limit: Int? = nil, reason: String? = nil) {
            self.action = action
            self.network = network
            self.helper = helper
            self.notCaptive = notCaptive
            self.limit = limit
            self.reason = reason
        }
        public static let example = Cache(action: "set", network: TraceNetwork(NetworkIdentity(rawSSID: SSID("Cafe"), security: .open)), helper: "py.one")
    }

    /// The first record of a trace file after rotation.
    public struct TraceRotated: TracePayload {
        public static let kind = "traceRotated"
        public var record: TraceRecord { .traceRotated(self) }
        public var previous: String
        public var maximumBytes: Int
        public var keep: Int
        public var rotations: Int
        public init(previous: String, maximumBytes: Int, keep: Int, rotations: Int) {
            self.previous = previous
            self.maximumBytes = maximumBytes
            self.keep = keep
            self.rotations = rotations
        }
        public static let example = TraceRotated(previous: "/run/hotspotd/trace.jsonl.1", maximumBytes: 8_388_608, keep: 3, rotations: 1)
    }

    /// The state file was rewritten.
    public struct Persist: TracePayload {
        public static let kind = "persist"
        public var record: TraceRecord { .persist(self) }
        public var file: String
        public var state: JSON
        public init(file: String, state: JSON) {
            self.file = file
            self.state = state
        }
        public static let example = Persist(file: "/run/hotspotd/state.json", state: ["cache": [], "autoJoinDisabled": []])
    }

    /// logoff(network) was called.
    public struct LogoffRequest: TracePayload {
        public static let kind = "logoffRequest"
        public var record: TraceRecord { .logoffRequest(self) }
        public var helper: String
        /// Written as null when the device is not associated.
        public var network: TraceNetwork?
        /// `helper` or `control`.
        public var via: String
        public init(helper: String, network: TraceNetwork?, via: String) {
            self.helper = helper
            self.network = network
            self.via = via
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(helper, forKey: .helper)
            try c.encode(network, forKey: .network)
            try c.encode(via, forKey: .via)
        }
        public static let example = LogoffRequest(helper: "py.one", network: TraceNetwork(NetworkIdentity(rawSSID: SSID("Cafe"), security: .open)), via: "control")
    }

    /// The answer to a logoff request.
    public struct LogoffAnswer: TracePayload {
        public static let kind = "logoffAnswer"
        public var record: TraceRecord { .logoffAnswer(self) }
        public var helper: String
        public var accepted: Bool
        public init(helper: String, accepted: Bool) {
            self.helper = helper
            self.accepted = accepted
        }
        public static let example = LogoffAnswer(helper: "py.one", accepted: true)
    }

    /// A helper posted a user notification.
    public struct Notification: TracePayload {
        public static let kind = "notification"
        public var record: TraceRecord { .notification(self) }
        public var helper: String
        public var title: String
        public var body: String
        public init(helper: String, title: String, body: String) {
            self.helper = helper
            self.title = title
            self.body = body
        }
        public static let example = Notification(helper: "py.one", title: "Signed in", body: "Welcome to Cafe")
    }

    /// A helper's SDK reported what it refused on its side.
    public struct HelperReport: TracePayload {
        public static let kind = "helperReport"
        public var record: TraceRecord { .helperReport(self) }
        public var helper: String
        /// The refusal's kind: `secondDelivery`, `withdrawnCommand`, `invalidField`, `deliverCalledByProvider`, ...
        public var report: String
        public var message: String
        /// A provider's app.
        public var app: String?
        public var command: Int?
        public var commandType: String?
        public init(helper: String, report: String, message: String, app: String? = nil, command: Int? = nil, commandType: String? = nil) {
            self.helper = helper
            self.report = report
            self.message = message
            self.app = app
            self.command = command
            self.commandType = commandType
        }
        public static let example = HelperReport(helper: "py.one", report: "secondDelivery", message: "command 1 was already delivered", command: 1, commandType: "evaluate")
    }

    /// A filterScanList round finished: the list as shown.
    public struct ScanList: TracePayload {
        public static let kind = "scanList"
        public var record: TraceRecord { .scanList(self) }
        public var networks: [TraceScanListEntry]
        public init(networks: [TraceScanListEntry]) { self.networks = networks }
        public static let example = ScanList(networks: [TraceScanListEntry(network: TraceNetwork(HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:01:00")),
                                                                           annotation: "PyOne", claimedBy: "py.one")])
    }

    /// A peer stopped reading.
    public struct Overloaded: TracePayload {
        public static let kind = "overloaded"
        public var record: TraceRecord { .overloaded(self) }
        public var peer: TracePeer
        public var queued: Int
        public init(peer: TracePeer, queued: Int) {
            self.peer = peer
            self.queued = queued
        }
        public static let example = Overloaded(peer: TracePeer(connection: 3, pid: 6300, uid: 0, gid: 0), queued: 1_048_600)
    }

    /// A system call or a reply failed.
    public struct Error: TracePayload {
        public static let kind = "error"
        public var record: TraceRecord { .error(self) }
        public var message: String
        public var via: String?
        /// The control request that failed (a station request).
        public var request: JSON?
        public init(message: String, via: String? = nil, request: JSON? = nil) {
            self.message = message
            self.via = via
            self.request = request
        }
        public static let example = Error(message: "write state file /run/hotspotd/state.json: No space left on device (ENOSPC)")
    }

    /// What wpa_supplicant (hotspotd with `--wpa-supplicant`) or the lab's link controller (`--link-control`, the
    /// native tier) and the DHCP client did.
    public struct Station: TracePayload {
        public static let kind = "station"
        public var record: TraceRecord { .station(self) }
        /// `attached`, `join`, `leave`, `autoJoin`, `associated`, `roamed`, `signal`, `disassociated`, `dhcpStart`,
        /// `dhcpLease`, `dhcpFailed`, `wpaEvent`, `linkRejected` (the native tier's link controller refused a join).
        public var action: String
        public var ssid: TraceSSID
        public var bssid: String?
        public var rssi: Double?
        /// `signal`: written as null for the first one.
        public var previousRSSI: Double?
        public var signalStrength: Double?
        public var keyMgmt: String?
        public var frequency: String?
        /// `roamed`: the old and new BSSID.
        public var from: String?
        public var to: String?
        /// `join`.
        public var networkID: String?
        public var passwordFrom: String?
        /// `autoJoin`: SSIDs as text, or `{ssid, ssid_hex}` objects.
        public var enabled: [JSON]?
        public var notAutoJoined: [JSON]?
        /// `disassociated`, `wpaEvent`: wpa_supplicant's event line.
        public var event: String?
        /// `dhcpStart`.
        public var pid: Int?
        /// `dhcpLease`: the lease's fields.
        public var lease: [String: String]?
        public var latency_ms: Double?
        public var client_ms: Double?
        /// `dhcpFailed`.
        public var status: String?
        public var log: String?
        /// `attached`.
        public var wpaControl: String?
        public var wpaState: String?
        public var ipSuppression: Bool?
        /// `dhcpLease`: the interface's addresses ("ADDRESS/LEN") and default routes ("via GW") per family, and whether
        /// IPv6 is up (a global address and a default route; docs/DECISIONS.md "IPv6 hotspots").
        public var ipv4Addresses: [String]?
        public var ipv6Addresses: [String]?
        public var ipv4DefaultRoute: String?
        public var ipv6DefaultRoute: String?
        public var ipv6Up: Bool?
        /// `attached` (native tier): the lab's link controller socket.
        public var linkControl: String?
        /// `associated` (native tier): the topology's hotspot the link was attached to.
        public var hotspot: String?
        /// `associated`, `disassociated` (native tier): `link`.
        public var via: String?
        /// `linkRejected`: why the link controller refused.
        public var reason: String?

        public init(action: String, ssid: TraceSSID = TraceSSID(text: nil), bssid: String? = nil, rssi: Double? = nil, previousRSSI: Double? = nil,
                    signalStrength: Double? = nil, keyMgmt: String? = nil, frequency: String? = nil, from: String? = nil, to: String? = nil,
                    networkID: String? = nil, passwordFrom: String? = nil, enabled: [JSON]? = nil, notAutoJoined: [JSON]? = nil,
                    event: String? = nil, pid: Int? = nil, lease: [String: String]? = nil, latency_ms: Double? = nil, client_ms: Double? = nil,
                    status: String? = nil, log: String? = nil, wpaControl: String? = nil, wpaState: String? = nil, ipSuppression: Bool? = nil,
                    ipv4Addresses: [String]? = nil, ipv6Addresses: [String]? = nil, ipv4DefaultRoute: String? = nil,
                    ipv6DefaultRoute: String? = nil, ipv6Up: Bool? = nil, linkControl: String? = nil, hotspot: String? = nil,
                    via: String? = nil, reason: String? = nil) {
            self.action = action
            self.ssid = ssid
            self.bssid = bssid
            self.rssi = rssi
            self.previousRSSI = previousRSSI
            self.signalStrength = signalStrength
            self.keyMgmt = keyMgmt
            self.frequency = frequency
            self.from = from
            self.to = to
            self.networkID = networkID
            self.passwordFrom = passwordFrom
            self.enabled = enabled
            self.notAutoJoined = notAutoJoined
            self.event = event
            self.pid = pid
            self.lease = lease
            self.latency_ms = latency_ms
            self.client_ms = client_ms
            self.status = status
            self.log = log
            self.wpaControl = wpaControl
            self.wpaState = wpaState
            self.ipSuppression = ipSuppression
            self.ipv4Addresses = ipv4Addresses
            self.ipv6Addresses = ipv6Addresses
            self.ipv4DefaultRoute = ipv4DefaultRoute
            self.ipv6DefaultRoute = ipv6DefaultRoute
            self.ipv6Up = ipv6Up
            self.linkControl = linkControl
            self.hotspot = hotspot
            self.via = via
            self.reason = reason
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(action, forKey: .action)
            try c.encode(ssid, forKey: .ssid)
            try c.encodeIfPresent(bssid, forKey: .bssid)
            try c.encodeIfPresent(rssi, forKey: .rssi)
            // The `signal` action writes previousRSSI, null for the first signal.
            if action == "signal" { try c.encode(previousRSSI, forKey: .previousRSSI) } else { try c.encodeIfPresent(previousRSSI, forKey: .previousRSSI) }
            try c.encodeIfPresent(signalStrength, forKey: .signalStrength)
            try c.encodeIfPresent(keyMgmt, forKey: .keyMgmt)
            try c.encodeIfPresent(frequency, forKey: .frequency)
            try c.encodeIfPresent(from, forKey: .from)
            try c.encodeIfPresent(to, forKey: .to)
            try c.encodeIfPresent(networkID, forKey: .networkID)
            try c.encodeIfPresent(passwordFrom, forKey: .passwordFrom)
            try c.encodeIfPresent(enabled, forKey: .enabled)
            try c.encodeIfPresent(notAutoJoined, forKey: .notAutoJoined)
            try c.encodeIfPresent(event, forKey: .event)
            try c.encodeIfPresent(pid, forKey: .pid)
            try c.encodeIfPresent(lease, forKey: .lease)
            try c.encodeIfPresent(latency_ms, forKey: .latency_ms)
            try c.encodeIfPresent(client_ms, forKey: .client_ms)
            try c.encodeIfPresent(status, forKey: .status)
            try c.encodeIfPresent(log, forKey: .log)
            try c.encodeIfPresent(wpaControl, forKey: .wpaControl)
            try c.encodeIfPresent(wpaState, forKey: .wpaState)
            try c.encodeIfPresent(ipSuppression, forKey: .ipSuppression)
            try c.encodeIfPresent(ipv4Addresses, forKey: .ipv4Addresses)
            try c.encodeIfPresent(ipv6Addresses, forKey: .ipv6Addresses)
            try c.encodeIfPresent(ipv4DefaultRoute, forKey: .ipv4DefaultRoute)
            try c.encodeIfPresent(ipv6DefaultRoute, forKey: .ipv6DefaultRoute)
            try c.encodeIfPresent(ipv6Up, forKey: .ipv6Up)
            try c.encodeIfPresent(linkControl, forKey: .linkControl)
            try c.encodeIfPresent(hotspot, forKey: .hotspot)
            try c.encodeIfPresent(via, forKey: .via)
            try c.encodeIfPresent(reason, forKey: .reason)
        }

        public static let example = Station(action: "associated", ssid: TraceSSID(SSID("Cafe")), bssid: "02:00:00:00:01:00", rssi: -45,
                                            keyMgmt: "NONE", frequency: "2412")
    }

    /// A `join`, `leave` or `autoJoin` request.
    public struct UserAction: TracePayload {
        public static let kind = "userAction"
        public var record: TraceRecord { .userAction(self) }
        /// The control request as sent.
        public var request: JSON
        public var via: String?
        public var peer: TracePeer
        public init(request: JSON, via: String?, peer: TracePeer) {
            self.request = request
            self.via = via
            self.peer = peer
        }
        /// The request's `type` (`join`, `leave`, `autoJoin`).
        public var requestType: String? { request["type"]?.stringValue }
        /// A `join` request's SSID (`ssid_hex` first).
        public var requestSSID: SSID? { SSID(wire: request) }
        public static let example = UserAction(request: ["type": "join", "ssid": "Cafe"], via: "control", peer: TracePeer(connection: 2, pid: 6210, uid: 0, gid: 0))
    }

    /// A control `record` request: what the lab recorded (a scenario's header or step, a certify mark).
    public struct LabActionRecord: TracePayload {
        public static let kind = "labAction"
        public var record: TraceRecord { .labAction(self) }
        public var action: LabAction
        public var via: String?
        public var peer: TracePeer
        public init(action: LabAction, via: String?, peer: TracePeer) {
            self.action = action
            self.via = via
            self.peer = peer
        }
        public static let example = LabActionRecord(action: LabAction(json: ["step": "join: Cafe", "stepKind": "join", "line": 7, "index": 0]), via: "control",
                                                    peer: TracePeer(connection: 2, pid: 6210, uid: 0, gid: 0))
    }

    /// A `setManager` request was accepted.
    public struct ManagerSet: TracePayload {
        public static let kind = "managerSet"
        public var record: TraceRecord { .managerSet(self) }
        public var app: String
        public var isEnabled: Bool
        public var evaluatedSSIDs: [String]
        /// Written as null when unset.
        public var evaluationProviderBundleIdentifier: String?
        public init(app: String, isEnabled: Bool, evaluatedSSIDs: [String], evaluationProviderBundleIdentifier: String?) {
            self.app = app
            self.isEnabled = isEnabled
            self.evaluatedSSIDs = evaluatedSSIDs
            self.evaluationProviderBundleIdentifier = evaluationProviderBundleIdentifier
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(app, forKey: .app)
            try c.encode(isEnabled, forKey: .isEnabled)
            try c.encode(evaluatedSSIDs, forKey: .evaluatedSSIDs)
            try c.encode(evaluationProviderBundleIdentifier, forKey: .evaluationProviderBundleIdentifier)
        }
        public static let example = ManagerSet(app: "com.example.app", isEnabled: true, evaluatedSSIDs: ["Cafe"], evaluationProviderBundleIdentifier: nil)
    }

    /// hotspotd answered an app's evaluate itself (a pre-evaluated SSID).
    public struct EvaluatedSSID: TracePayload {
        public static let kind = "evaluatedSSID"
        public var record: TraceRecord { .evaluatedSSID(self) }
        public var app: String
        public var ssid: TraceSSID
        public var command: Int
        public init(app: String, ssid: TraceSSID, command: Int) {
            self.app = app
            self.ssid = ssid
            self.command = command
        }
        public static let example = EvaluatedSSID(app: "com.example.app", ssid: TraceSSID(SSID("Cafe")), command: 1)
    }

    /// hotspotd spawned a provider.
    public struct ProviderLaunched: TracePayload {
        public static let kind = "providerLaunched"
        public var record: TraceRecord { .providerLaunched(self) }
        public var app: String
        public var role: String
        public var pid: Int
        public var identifier: String
        public init(app: String, role: String, pid: Int, identifier: String) {
            self.app = app
            self.role = role
            self.pid = pid
            self.identifier = identifier
        }
        public static let example = ProviderLaunched(app: "com.example.app", role: "evaluationProvider", pid: 6400, identifier: "com.example.app.evaluation")
    }

    /// A provider registered (`start` follows).
    public struct ProviderRegistered: TracePayload {
        public static let kind = "providerRegistered"
        public var record: TraceRecord { .providerRegistered(self) }
        public var app: String
        public var role: String
        public var identifier: String
        public var peer: TracePeer
        public init(app: String, role: String, identifier: String, peer: TracePeer) {
            self.app = app
            self.role = role
            self.identifier = identifier
            self.peer = peer
        }
        public static let example = ProviderRegistered(app: "com.example.app", role: "evaluationProvider", identifier: "com.example.app.evaluation",
                                                       peer: TracePeer(connection: 4, pid: 6400, uid: 0, gid: 0))
    }

    /// A provider answered `start`.
    public struct ProviderStarted: TracePayload {
        public static let kind = "providerStarted"
        public var record: TraceRecord { .providerStarted(self) }
        public var app: String
        public var role: String
        public var ok: Bool
        public var latencyMs: Double?
        public init(app: String, role: String, ok: Bool, latencyMs: Double?) {
            self.app = app
            self.role = role
            self.ok = ok
            self.latencyMs = latencyMs
        }
        public static let example = ProviderStarted(app: "com.example.app", role: "evaluationProvider", ok: true, latencyMs: 12.5)
    }

    /// hotspotd sent `stop` (or killed a provider that never started).
    public struct ProviderStopped: TracePayload {
        public static let kind = "providerStopped"
        public var record: TraceRecord { .providerStopped(self) }
        public var app: String
        public var role: String
        /// `idleTimeout`, `configurationDisabled`, `noNetworkAvailable`, `providerFailed`.
        public var reason: String
        public init(app: String, role: String, reason: String) {
            self.app = app
            self.role = role
            self.reason = reason
        }
        public static let example = ProviderStopped(app: "com.example.app", role: "evaluationProvider", reason: "idleTimeout")
    }

    /// The provider answered `stopped`.
    public struct ProviderStoppedAck: TracePayload {
        public static let kind = "providerStoppedAck"
        public var record: TraceRecord { .providerStoppedAck(self) }
        public var app: String
        public var role: String
        public init(app: String, role: String) {
            self.app = app
            self.role = role
        }
        public static let example = ProviderStoppedAck(app: "com.example.app", role: "evaluationProvider")
    }

    /// The provider process was still there 2 s after its connection closed: SIGKILL.
    public struct ProviderKilled: TracePayload {
        public static let kind = "providerKilled"
        public var record: TraceRecord { .providerKilled(self) }
        public var app: String
        public var role: String
        public var pid: Int
        public init(app: String, role: String, pid: Int) {
            self.app = app
            self.role = role
            self.pid = pid
        }
        public static let example = ProviderKilled(app: "com.example.app", role: "evaluationProvider", pid: 6400)
    }

    /// The provider process ended, or could not be spawned (`error`).
    public struct ProviderExited: TracePayload {
        public static let kind = "providerExited"
        public var record: TraceRecord { .providerExited(self) }
        public var app: String
        public var role: String
        public var pid: Int?
        /// The exit status; null when killed (or not spawned).
        public var status: Int?
        /// The signal; null when it exited. Not written when it could not be spawned.
        public var signal: Int?
        /// Why it could not be spawned.
        public var error: String?
        public init(app: String, role: String, pid: Int?, status: Int?, signal: Int?, error: String? = nil) {
            self.app = app
            self.role = role
            self.pid = pid
            self.status = status
            self.signal = signal
            self.error = error
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(app, forKey: .app)
            try c.encode(role, forKey: .role)
            try c.encode(status, forKey: .status)
            if let error {
                try c.encode(error, forKey: .error)
            } else {
                try c.encodeIfPresent(pid, forKey: .pid)
                try c.encode(signal, forKey: .signal)
            }
        }
        public static let example = ProviderExited(app: "com.example.app", role: "evaluationProvider", pid: 6400, status: 0, signal: nil)
    }

    /// Commands that count as not answered at once (their provider crashed, disconnected, failed to start).
    public struct ProviderNoAnswer: TracePayload {
        public static let kind = "providerNoAnswer"
        public var record: TraceRecord { .providerNoAnswer(self) }
        public var app: String
        public var role: String
        public var commands: [Int]
        public var cause: String
        public init(app: String, role: String, commands: [Int], cause: String) {
            self.app = app
            self.role = role
            self.commands = commands
            self.cause = cause
        }
        public static let example = ProviderNoAnswer(app: "com.example.app", role: "authenticationProvider", commands: [3], cause: "the provider disconnected")
    }
}

/// What the lab recorded in a `labAction` record (a control `record` request): a scenario's header
/// (`scenario`, `file`, `topology`, `station`, `maintainInterval`, `timeScale`, `helpers`), a step (`step`,
/// `line`, `index`) or a certify mark (`certify`, with the mark's own fields). hotspotd keeps it as sent.
public struct LabAction: Codable, Sendable, Hashable {
    public var json: JSON

    public init(json: JSON) { self.json = json }

    public init(from decoder: any Decoder) throws { json = try JSON(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }

    // A scenario's header.
    public var scenario: String? { json["scenario"]?.stringValue }
    public var file: String? { json["file"]?.stringValue }
    public var topology: String? { json["topology"]?.stringValue }
    public var station: String? { json["station"]?.stringValue }
    public var maintainInterval: Double? { json["maintainInterval"]?.doubleValue }
    public var timeScale: Double? { json["timeScale"]?.doubleValue }
    /// The scenario's helpers: each one's command and the identifier it registered with (nil: unknown).
    public var helpers: [(command: String?, identifier: String?)]? {
        json["helpers"]?.arrayValue?.map { ($0["command"]?.stringValue, $0["identifier"]?.stringValue) }
    }

    /// A scenario's end: its steps are done; what the trace holds after it is the lab going down (a replay stops here).
    public var scenarioEnded: String? { json["scenarioEnded"]?.stringValue }

    // A step.
    public var step: String? { json["step"]?.stringValue }
    /// The step's kind (`dns`, `wait-state`, ...), as the scenario parser named it.
    public var stepKind: String? { json["stepKind"]?.stringValue }
    public var line: Int? { json["line"]?.intValue }
    public var index: Int? { json["index"]?.intValue }

    // A certify mark: its name, and the fields of the gate and portal marks.
    public var certify: String? { json["certify"]?.stringValue }
    public var label: String? { json["label"]?.stringValue }
    public var authenticated: Bool? { json["authenticated"]?.boolValue }
    public var kind: String? { json["kind"]?.stringValue }
    public var settings: [String: String]? { json["settings"]?.objectValue?.compactMapValues(\.stringValue) }
    /// The lines of a certify mark that quotes a log (the cookie portal's refusals).
    public var lines: [String]? { json["lines"]?.arrayValue?.compactMap(\.stringValue) }
}
