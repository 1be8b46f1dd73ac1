import Foundation
import HotspotClient
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import TestSupport
import Testing

/// Issue 27, "Bounded and exact everywhere", hotspotd's side: memory per peer, descriptors, state on load,
/// no silent loss, the close race (docs/RELIABILITY.md). Real hotspotd processes; memory is asserted as peak
/// RSS (VmHWM), which does not depend on the machine's speed.
@Suite("hotspotd bounds (issue 27)")
struct BoundsTests {
    /// hotspotd's peak resident set (VmHWM), in bytes.
    static func peakRSS(_ pid: Int32) -> Int {
        let text = readSmallFile("/proc/\(pid)/status") ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kb = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) } ?? 0
            return kb * 1024
        }
        return 0
    }

    @Test("50 stalled trace subscribers and 60 KB records: each is closed at its 4 MiB budget, peak RSS stays under 128 MB")
    func stalledSubscribersStayBounded() throws {
        let d = try DaemonUnderTest(name: "stalled")
        var stalled: [RawPeer] = []
        for _ in 0..<50 {
            let p = try RawPeer(path: d.controlSocket)
            try p.send(ControlRequest.subscribeTrace.json)
            #expect(try p.read()?["type"]?.stringValue == "ok")
            stalled.append(p)  // reads nothing more
        }
        let body = String(repeating: "x", count: 60_000)
        // 400 records of 60 KB: 24 MB of trace for each subscriber (more than any budget before issue 27 too),
        // 1.2 GB for 50 if each kept its own copy.
        for i in 0..<400 {
            try d.control.request(.record(["big": .string(body), "i": .number(Double(i))]))
        }
        let peakWhileStalled = Self.peakRSS(d.child.pid)
        for p in stalled { #expect(try p.readUntilClosed(timeout: .seconds(60)), "closed at its budget") }
        let peak = max(peakWhileStalled, Self.peakRSS(d.child.pid))
        #expect(peak > 0 && peak < 128 << 20, "peak RSS \(peak >> 20) MB with 50 stalled subscribers (was 1,040 MB before issue 27)")
        print("stalled subscribers: peak RSS \(peak >> 20) MB")
    }

    @Test("at a low descriptor limit, a flood of helper connections is refused past the cap and `status` is answered")
    func connectionCapAndDescriptorLimit() throws {
        let runDir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-hotspotd-emfile-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try UnixSocket.makeDirectory(runDir + "/logs", mode: 0o700)
        defer { try? FileManager.default.removeItem(atPath: runDir) }
        let daemon = try Child("/bin/sh", ["-c", "ulimit -n 100 && exec \"$0\" --run-dir \"$1\"", try Products.path("hotspotd"), runDir],
                               log: runDir + "/logs/hotspotd.log")
        defer { daemon.terminate() }
        let control = try ControlClient.connect(path: runDir + "/control.sock", timeout: .seconds(20))
        // 150 connections: more than the descriptors left (100 - the daemon's own), fewer than the listen backlog
        // could hold unaccepted (so connect(2) never blocks, whatever hotspotd does).
        var flood: [UnixSocket] = []
        for _ in 0..<150 { flood.append(try UnixSocket.connect(path: runDir + "/helper.sock")) }
        let late = try ControlClient.connect(path: runDir + "/control.sock", timeout: .seconds(20))
        let s = try late.request(.status, timeout: .seconds(20))
        #expect(s["type"]?.stringValue == "status", "a new control client is answered while helpers flood (before issue 27: no answer, accept(2) spun on EMFILE)")
        let refused = s["connections"]?["refused"]?["helper"]?.intValue ?? 0
        #expect(refused >= 100, "\(refused) helper connections refused")
        _ = try control.status()
        let trace = (readSmallFile(runDir + "/trace.jsonl") ?? "").split(separator: "\n").compactMap { try? JSON.parse(Array($0.utf8)) }
        let limitRecords = trace.filter { $0["kind"]?.stringValue == "connectionLimit" && $0["action"]?.stringValue == "refuse" }
        #expect(limitRecords.count == 1, "one record for the run of refusals, not one per connection")
        #expect(!trace.contains { $0["kind"]?.stringValue == "error" && $0["message"]?.stringValue?.contains("EMFILE") == true })
        _ = flood
    }

    @Test("descriptors run out under idle connections (RLIMIT_NOFILE lowered to 48): a new `ctl status` is answered, accept(2) fails a bounded number of times, helpers are accepted again when the connections close")
    func descriptorsExhausted() throws {
        let d = try DaemonUnderTest(name: "emfile")
        let pid = d.child.pid
        // A reply proves the control connection accepted: connect(2) returns once the kernel queued it, and a starved
        // hotspotd could accept it after the prlimit below, taking its cap from the lowered limit (CI run 120: every
        // helper connection refused by the cap, no accept(2) ever failing).
        _ = try d.control.request(.status, timeout: .seconds(60))
        // hotspotd took its connection cap from its limit at the first accept (the control connection above); lowered
        // now, the limit is below the cap, so idle helper connections take every descriptor (EMFILE), as anything else
        // holding descriptors would.
        let prlimit = try Child("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=48:48"], log: d.logDir + "/prlimit.log")
        prlimit.process.waitUntilExit()
        try #require(prlimit.process.terminationStatus == 0, "prlimit: \(prlimit.output)")
        // 80 connections: more than the descriptors left, fewer than the listen backlog holds (connect(2) never blocks).
        var flood: [UnixSocket] = []
        for _ in 0..<80 { flood.append(try UnixSocket.connect(path: d.helperSocket)) }
        func failures(_ s: JSON) -> Int {
            (s["connections"]?["acceptFailures"]?["helper"]?.intValue ?? 0) + (s["connections"]?["acceptFailures"]?["control"]?.intValue ?? 0)
        }
        let before = try d.control.waitForStatus(timeout: .seconds(60), "accept(2) to find no descriptor") { failures($0) > 0 }
        let start = SystemMonotonicClock.read()
        // A new control client at the limit gets the reserve descriptor: `ctl status` is answered.
        var late: ControlClient? = try ControlClient.connect(path: d.controlSocket, timeout: .seconds(20))
        let s = try #require(late).request(.status, timeout: .seconds(60))
        #expect(s["type"]?.stringValue == "status", "a new control client is answered with every other descriptor taken")
        // 200 requests on the first connection meanwhile: the loop turns, the listeners stay backed off.
        for _ in 0..<200 { _ = try d.control.status() }
        let after = try d.control.status()
        let elapsed = Double((SystemMonotonicClock.read() - start).components.seconds) + 1
        // The back-off (10 ms doubling to 1 s) allows about 8 failures and then one a second per listener; the loop
        // before issue 27 failed once per poll round (a busy loop: thousands here). Load can only lower the rate.
        let failed = failures(after) - failures(before)
        #expect(failed <= 2 * (10 + Int(elapsed)), "\(failed) failed accepts in \(elapsed) s while nothing closed")
        let trace = d.trace()
        let backOffs = trace.filter { $0["kind"]?.stringValue == "connectionLimit" && $0["action"]?.stringValue == "backOff" }
        #expect(backOffs.count >= 1 && backOffs.count <= 2, "one backOff record per listener for the run of failures, got \(backOffs.count)")
        #expect(!trace.contains { $0["kind"]?.stringValue == "error" && $0["message"]?.stringValue?.contains("Too many open files") == true })
        // Recovery: the connections close, the helper socket accepts again at once and a helper registers.
        late = nil
        for f in flood { f.close() }
        try d.control.waitForStatus(timeout: .seconds(60), "the flood's connections closed") { s in
            (s["connections"]?["open"]?.intValue ?? 99) == 1
        }
        try d.helper(.swift, id: "after-emfile")
        #expect(d.records("connectionLimit").contains { $0["action"]?.stringValue == "resume" && $0["socket"]?.stringValue == "helper" })
        _ = late
    }

    static func stateFile(cache: Int, autoJoinDisabled: Int) -> [UInt8] {
        var text = "{\"version\":1,\"cache\":["
        func six(_ n: Int) -> String { String(repeating: "0", count: max(0, 6 - String(n).count)) + String(n) }
        text += (0..<cache).map { "{\"ssid\":\"Network-\(six($0))\",\"security\":\"open\",\"helper\":\"com.example.helper\"}" }.joined(separator: ",")
        text += "],\"autoJoinDisabled\":["
        text += (0..<autoJoinDisabled).map { "{\"ssid\":\"Off-\($0)\",\"security\":\"open\"}" }.joined(separator: ",")
        text += "]}\n"
        return Array(text.utf8)
    }

    @Test("a state file over the limits is trimmed on load to 1,024 entries, said on stderr and in the trace, and written back")
    func stateFileTrimmedOnLoad() throws {
        let runDir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-hotspotd-bigstate-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try UnixSocket.makeDirectory(runDir, mode: 0o700)
        try AtomicFile.write(Self.stateFile(cache: 20_000, autoJoinDisabled: 3_000), to: runDir + "/state.json")
        let d = try DaemonUnderTest(name: "bigstate", runDir: runDir)
        let s = try d.control.status()
        #expect(s["cache"]?.arrayValue?.count == 1024, "the cache limit holds for a loaded file (before issue 27: 20,000 entries)")
        #expect(s["autoJoinDisabled"]?.arrayValue?.count == 1024)
        let trimmed = try #require(d.records("stateTrimmed").first)
        #expect(trimmed["cacheDropped"]?.intValue == 20_000 - 1024)
        #expect(trimmed["autoJoinDisabledDropped"]?.intValue == 3_000 - 1024)
        #expect(d.child.output.contains("dropped 18976 cache entries and 1976 auto-join-disabled networks"))
        // The first entries of the file's order are kept, and the trimmed state is what the file holds now.
        #expect(cacheEntry(s, "Network-000000") != nil && cacheEntry(s, "Network-001023") != nil && cacheEntry(s, "Network-001024") == nil)
        let saved = try PersistentState(json: JSON.parse(try #require(try AtomicFile.read(d.stateFile))), file: d.stateFile)
        #expect(saved.cache.count == 1024 && saved.autoJoinDisabled.count == 1024)
    }

    @Test("a state file larger than 2 MiB (128,000 entries) is moved aside unread, with a warning naming its size")
    func hugeStateFileMovedAside() throws {
        let runDir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-hotspotd-hugestate-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try UnixSocket.makeDirectory(runDir, mode: 0o700)
        let bytes = Self.stateFile(cache: 128_000, autoJoinDisabled: 0)
        #expect(bytes.count > StateStore.maximumBytes)
        try AtomicFile.write(bytes, to: runDir + "/state.json")
        let d = try DaemonUnderTest(name: "hugestate", runDir: runDir)
        let s = try d.control.status()
        #expect(s["cache"]?.arrayValue?.isEmpty == true)
        let warning = try #require(d.records("warning").first)
        #expect(warning["message"]?.stringValue?.contains("the file is \(bytes.count) bytes; the limit is \(StateStore.maximumBytes)") == true)
        let moved = try #require(warning["movedTo"]?.stringValue)
        #expect(FileManager.default.fileExists(atPath: moved), "the file is kept beside, not lost")
    }
}

/// Issue 27, the close race: a helper written from docs/PROTOCOL.md runs five abrupt closes (idle, inside a
/// frame, with an unread reply), then registers, takes `authenticate` and closes with a reply unread; the next
/// round registers the same identifier at once. hotspotd must have handled the close by then: never
/// `alreadyRegistered`, never a deadline (time scale 1: 45 s). 500 rounds alone, then 500 beside two CPU hogs.
@Suite("hotspotd close race (issue 27)")
struct CloseRaceTests {
    static func round(_ d: DaemonUnderTest, _ i: Int, tag: String) throws -> String? {
        let register = HelperMessage.register(identifier: "race", displayName: "Race", version: protocolVersion)
        let idle = try RawPeer(path: d.helperSocket)
        idle.socket.close()
        let header = try RawPeer(path: d.helperSocket)
        try header.sendBytes([0, 0, 1])
        header.socket.close()
        let body = try RawPeer(path: d.helperSocket)
        try body.sendBytes(Array(register.framed.prefix(20)))
        body.socket.close()
        let unread = try RawPeer(path: d.helperSocket)
        try unread.send(["type": "bogus"])
        unread.socket.close()
        let early = try RawPeer(path: d.helperSocket)
        try early.send(.supportedNetworkInterfaces(requestID: 1))
        early.socket.close()

        let h = try RawPeer(path: d.helperSocket)
        try h.send(register)
        guard let registered = try h.read(timeout: .seconds(30)) else { return "round \(i): no answer to register" }
        guard registered["type"]?.stringValue == "registered" else { return "round \(i): register answered \(registered.text)" }
        try d.control.request(.associate(HotspotNetwork(ssid: "Race-\(tag)-\(i)", bssid: "02:00:00:00:00:01", signalStrength: 0.8)))
        try d.control.request(.ipUp)
        while true {
            guard let m = try h.read(type: "command", timeout: .seconds(30)) else { return "round \(i): no authenticate" }
            let id = CommandID(try #require(m["id"]?.intValue))
            if m["commandName"]?.stringValue == "authenticate" { break }
            var network: HotspotNetwork?
            if m["commandName"]?.stringValue == "evaluate", let n = m["network"] {
                var net = try HotspotNetwork(wire: n)
                net.confidence = .high
                network = net
            }
            try h.send(.response(command: id, result: .success, network: network, networkList: nil))
        }
        // Close with hotspotd's answer to this unread: a reset, as the issue's helper did.
        try h.send(["type": "bogus"])
        h.socket.close()
        try d.control.request(.disassociate)
        return nil
    }

    static func run(_ d: DaemonUnderTest, rounds: Int, tag: String) throws -> [String] {
        var failures: [String] = []
        for i in 0..<rounds {
            if let failure = try round(d, i, tag: tag) { failures.append(failure) }
        }
        try d.control.waitForStatus(timeout: .seconds(30), "the last helper gone") { s in
            !(s["helpers"]?.arrayValue ?? []).contains { $0["identifier"]?.stringValue == "race" }
        }
        let deadlines = d.records("timer").filter { $0["timer"]?.stringValue == "deadline" }
        if !deadlines.isEmpty { failures.append("\(deadlines.count) command deadlines passed: a close noticed only then") }
        return failures
    }

    @Test("500 rounds of abrupt closes and a reset after authenticate, then 500 beside two CPU hogs: 0 refused re-registrations")
    func closeRace() throws {
        let quiet = try DaemonUnderTest(name: "race", timeScale: "1")
        let calm = try Self.run(quiet, rounds: 500, tag: "calm")
        #expect(calm.isEmpty, "\(calm.count) of 500 rounds failed: \(calm.prefix(5))")

        let loaded = try DaemonUnderTest(name: "race-hog", timeScale: "1")
        let hogs = try CPUHogs(2)
        defer { hogs.stop() }
        let busy = try Self.run(loaded, rounds: 500, tag: "hog")
        #expect(hogs.stopped().isEmpty, "CPU hogs (pids \(hogs.stopped())) stopped early: the load was not there")
        #expect(busy.isEmpty, "\(busy.count) of 500 rounds beside CPU hogs failed: \(busy.prefix(5))")
    }
}

/// The close race, forced (issue 27, item 6): a registered helper with a command pending closes with hotspotd's
/// reply unread (a reset) and its successor, already connected, sends `register` for the same identifier, both
/// while hotspotd is stopped (SIGSTOP), so that hotspotd finds both when it runs again. The cause: hotspotd handled
/// the successor's `register` before the holder's end of file although the close came first, in two ways. (1) The
/// loop reads each ready connection until EAGAIN: a frame that arrives while it is still reading that connection
/// (here SIGSTOP lands just after hotspotd answered the successor's first frame, before its next read(2)) is
/// handled in the same round, before the holder's hangup is even sampled by poll(2). (2) When one poll(2) round
/// reports both, the old loop took them in its dictionary's order. Ordering hangups first (the two-pass loop)
/// cures only (2): with it and without the check below, 36 and 39 of 40 rounds were still refused; the old code
/// refused 35 to 40 of 40. What cures both is causal: the holder's close happened before the successor's
/// `register` was written, so at that `register` the kernel already shows the holder's socket shut down
/// (`UnixSocket.peerHasClosed`, a poll with no wait), and hotspotd closes it first. Each round uses another pair
/// of descriptors (an idle connection is added first).
@Suite("hotspotd close race, one poll round (issue 27)")
struct CloseRaceOneRoundTests {
    /// hotspotd's scheduler state (`T` once SIGSTOP has taken effect).
    static func processState(_ pid: Int32) -> Character? {
        guard let text = readSmallFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ").first?.first
    }

    /// Registers `peer` as "race" (its first frame was answered, so hotspotd watches it).
    static func register(_ peer: RawPeer) throws -> JSON? {
        try peer.send(HelperMessage.register(identifier: "race", displayName: "Race", version: protocolVersion))
        return try peer.read(timeout: .seconds(30))
    }

    /// Drives `holder` to a pending `authenticate` (answering `evaluate` with high confidence).
    static func pendingAuthenticate(_ d: DaemonUnderTest, _ holder: RawPeer, _ i: Int) throws -> String? {
        try d.control.request(.associate(HotspotNetwork(ssid: "Round-\(i)", bssid: "02:00:00:00:00:01", signalStrength: 0.8)))
        try d.control.request(.ipUp)
        while true {
            guard let m = try holder.read(type: "command", timeout: .seconds(30)) else { return "round \(i): no authenticate" }
            let id = CommandID(try #require(m["id"]?.intValue))
            if m["commandName"]?.stringValue == "authenticate" { return nil }
            var network: HotspotNetwork?
            if m["commandName"]?.stringValue == "evaluate", let n = m["network"] {
                var net = try HotspotNetwork(wire: n)
                net.confidence = .high
                network = net
            }
            try holder.send(.response(command: id, result: .success, network: network, networkList: nil))
        }
    }

    @Test("a reset with a command pending and the successor's register in one poll round: registered, 40 of 40")
    func closeAndRegisterInOneRound() throws {
        let d = try DaemonUnderTest(name: "race-round", timeScale: "1")
        let pid = d.child.pid
        var spacers: [RawPeer] = []
        var failures: [String] = []
        var holder = try RawPeer(path: d.helperSocket)
        #expect(try Self.register(holder)?["type"]?.stringValue == "registered")
        for i in 0..<40 {
            spacers.append(try RawPeer(path: d.helperSocket))
            if let failure = try Self.pendingAuthenticate(d, holder, i) {
                failures.append(failure)
                break
            }
            // hotspotd's answer to this stays unread: the close below is a reset.
            try holder.send(["type": "bogus"])
            #expect(holder.socket.waitReadable(timeout: .seconds(30)))
            // The successor is accepted and watched before hotspotd stops: its first frame is answered.
            let successor = try RawPeer(path: d.helperSocket)
            try successor.send(["type": "bogus"])
            #expect(try successor.read(timeout: .seconds(30))?["type"]?.stringValue == "error")

            kill(pid, SIGSTOP)
            let stopBound = SystemMonotonicClock.read() + .seconds(30)
            while Self.processState(pid) != "T" {
                try #require(SystemMonotonicClock.read() < stopBound, "hotspotd never showed as stopped")
                usleep(500)
            }
            holder.socket.close()
            try successor.send(HelperMessage.register(identifier: "race", displayName: "Race", version: protocolVersion))
            kill(pid, SIGCONT)

            let answer = try successor.read(timeout: .seconds(30))
            if answer?["type"]?.stringValue != "registered" {
                failures.append("round \(i): register answered \(answer?.text ?? "nothing")")
                // Registered once the holder's close is handled: the next round starts from a registered helper.
                try d.control.waitForStatus(timeout: .seconds(30), "the holder gone") { s in
                    !(s["helpers"]?.arrayValue ?? []).contains { $0["identifier"]?.stringValue == "race" }
                }
                guard try Self.register(successor)?["type"]?.stringValue == "registered" else {
                    failures.append("round \(i): a second register was refused too")
                    break
                }
            }
            try d.control.request(.disassociate)
            holder = successor
        }
        #expect(failures.isEmpty, "\(failures.count) of 40 rounds failed: \(failures.prefix(5))")
        let deadlines = d.records("timer").filter { $0["timer"]?.stringValue == "deadline" }
        #expect(deadlines.isEmpty, "\(deadlines.count) command deadlines passed: a close noticed only then")
        _ = spacers
    }
}
