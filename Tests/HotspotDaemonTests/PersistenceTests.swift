import Foundation
import HotspotClient
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import HotspotSystem
import Testing

@Suite("hotspotd persistence")
struct PersistenceTests {
    @Test("hotspotd killed with SIGKILL and restarted runs the cached sequence from the persisted cache")
    func killNineAndRestart() throws {
        let d = try DaemonUnderTest(name: "kill9")
        try d.helper(.swift, id: "persist.helper")
        try d.join(cafe)
        try d.waitForState(.authenticated)
        d.kill9()
        for h in d.helpers { h.kill9() }
        d.helpers.removeAll()
        // Same run directory: the stale sockets are replaced, the state file read back.
        try d.start()
        let s0 = try d.control.status()
        #expect(s0["state"]?.stringValue == "Inactive")
        #expect(cacheEntry(s0, "Cafe")?["helper"]?.stringValue == "persist.helper")
        try d.helper(.python, id: "persist.helper")
        try d.join(cafe)
        try d.waitForState(.authenticated)
        let starts = d.trace().enumerated().filter { $0.element["kind"]?.stringValue == "start" }
        #expect(starts.count == 2)
        let afterRestart = d.trace().dropFirst(starts.last!.offset)
        let types = afterRestart.filter { $0["kind"]?.stringValue == "command" }.compactMap { $0["commandType"]?.stringValue }
        #expect(types == ["maintain"], "the cached join sends maintain only, got \(types)")
        #expect(afterRestart.first { $0["kind"]?.stringValue == "command" }?["network"]?["didJustJoin"]?.boolValue == true)
    }

    @Test("SIGKILL at random moments while the cache changes never leaves a corrupt state file")
    func killNineAtRandomMoments() throws {
        let d = try DaemonUnderTest(name: "kill9loop")
        var rng = SplitMix64(seed: 77)
        for i in 0..<6 {
            let watcher = try ControlClient.connect(path: d.controlSocket, timeout: .seconds(5))
            try watcher.request(.subscribeTrace)
            let h = try d.helper(.swift, id: "k\(i)")
            try d.join(HotspotNetwork(ssid: "Net\(i)", bssid: "02:00:00:00:10:0\(i)"))
            // A random moment of the sequence: after 0 to 15 of its trace records (it writes more than that:
            // registration, association, evaluate, authenticate, cache, persist). Waits on records, not on time.
            for _ in 0..<Int(rng.next() % 16) {
                _ = try #require(try watcher.nextTraceRecord(timeout: .seconds(10)), "the next record of the sequence")
            }
            d.kill9()
            h.kill9()
            d.helpers.removeAll()
            try d.start()
        }
        #expect(d.records("warning").isEmpty, "no run found a corrupt state file")
        let starts = d.records("start")
        #expect(starts.count == 7)
        #expect(starts.dropFirst().allSatisfy { $0["state"]?.stringValue == "loaded" || $0["state"]?.stringValue == "none" })
        // Whatever was persisted is a helper from this test.
        let s = try d.control.status()
        for entry in s["cache"]?.arrayValue ?? [] {
            #expect(entry["helper"]?.stringValue?.hasPrefix("k") == true)
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: d.runDir).filter { $0.contains(".tmp.") }
        #expect(leftovers.isEmpty, "a restart removes the temp files of killed runs")
    }

    @Test("a corrupt state file is moved aside with a warning and the daemon starts clean")
    func corruptStateFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-hotspotd-corrupt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try UnixSocket.makeDirectory(dir, mode: 0o700)
        try Data("{\"version\":1,\"cache\":[{\"ssid\":".utf8).write(to: URL(fileURLWithPath: dir + "/state.json"))
        let d = try DaemonUnderTest(name: "corrupt", runDir: dir)
        let s = try d.control.status()
        #expect(s["state"]?.stringValue == "Inactive")
        #expect(s["cache"]?.arrayValue?.isEmpty == true)
        let warning = d.records("warning").first
        #expect(warning?["message"]?.stringValue?.contains("corrupt") == true)
        let moved = try #require(warning?["movedTo"]?.stringValue)
        #expect(FileManager.default.fileExists(atPath: moved))
        #expect(!FileManager.default.fileExists(atPath: d.stateFile))
        // The warning also went to stderr.
        #expect(d.child.output.contains("corrupt"))
    }

    @Test("state file round trip and field errors")
    func stateRoundTrip() throws {
        let state = PersistentState(
            cache: [cafe.identity: .helper("a.b"), cafeSecure.identity: .notCaptive],
            autoJoinDisabled: [NetworkIdentity(ssid: "X", security: .open)])
        let back = try PersistentState(json: JSON.parse(state.json.bytes), file: "f")
        #expect(back == state)
        #expect(throws: ProtocolError.self) { try PersistentState(json: ["version": 1, "cache": [["ssid": "A"]], "autoJoinDisabled": []], file: "f") }
        do {
            _ = try PersistentState(json: ["version": 1, "cache": [["ssid": "A"]], "autoJoinDisabled": []], file: "state.json")
        } catch {
            #expect(error.message.contains("state.json: cache[0]"))
        }
    }

    @Test("atomic write replaces the file whole; the directory holds no temp file afterwards")
    func atomicWrite() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-atomic-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try UnixSocket.makeDirectory(dir, mode: 0o700)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/f.json"
        try AtomicFile.write(Array("one".utf8), to: path)
        try AtomicFile.write(Array("two two".utf8), to: path)
        #expect(try AtomicFile.read(path) == Array("two two".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["f.json"])
        #expect(try AtomicFile.read(dir + "/missing") == nil)
        #expect(throws: SystemError.self) { try AtomicFile.write([1], to: dir + "/no/such/dir/f") }
        // A temp file left by a killed writer is removed at the next start.
        try AtomicFile.write([1], to: dir + "/f.json.tmp.123")
        #expect(StateStore(path: path).removeStaleTemporaries() == ["f.json.tmp.123"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["f.json"])
    }
}
