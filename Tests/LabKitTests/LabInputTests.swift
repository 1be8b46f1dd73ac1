import Foundation
import Glibc
import HotspotSystem
import Testing
@testable import LabKit
@testable import LabSandbox
@testable import LabScenarioModel
@testable import LabScenarios
@testable import LabTopology

/// Issue 27 item 5: lab files are read exactly. Bytes that are not UTF-8, tags outside the core schema and unclosed
/// quotes in command lines are refused with file:line:column and the field; a byte-order mark is accepted; a FIFO
/// is refused without blocking; reader errors name their real position.
@Suite("Lab file inputs (issue 27)")
struct LabInputTests {
    static var root: String { TopologyParserTests.root }

    /// A fresh folder for files of one test.
    static func folder() throws -> String {
        let dir = NSTemporaryDirectory() + "hsl-inputs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func write(_ bytes: [UInt8], _ path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static func captiveBytes() throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: root + "/topologies/captive.yaml")))
    }

    /// The captive topology with its `ssid: Cafe Lumiere` line replaced.
    static func captive(ssidLine: [UInt8]) throws -> [UInt8] {
        let text = try captiveBytes()
        let needle = Array("    ssid: Cafe Lumiere\n".utf8)
        let start = try #require((0...(text.count - needle.count)).first { Array(text[$0..<($0 + needle.count)]) == needle })
        return Array(text[..<start]) + ssidLine + Array(text[(start + needle.count)...])
    }

    static func line(of needle: String, in bytes: [UInt8]) -> Int {
        let text = String(decoding: bytes, as: UTF8.self)
        return (text.components(separatedBy: "\n").firstIndex { $0.contains(needle) } ?? -1) + 1
    }

    @Test("an SSID of Latin-1 bytes is refused at its line and column, naming the field and ssid_hex (not turned into U+FFFD)")
    func latin1NameRefused() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = try Self.captive(ssidLine: Array("    ssid: Caf".utf8) + [0xE9] + Array(" Lumi".utf8) + [0xE8] + Array("re\n".utf8))
        let file = dir + "/latin1.yaml"
        try Self.write(bytes, file)
        let error = #expect(throws: TopologyError.self) { try TopologyParser.load(path: file) }
        let line = Self.line(of: "ssid: Caf", in: bytes)
        #expect(error?.line == line && error?.column == 14, "\(String(describing: error))")
        #expect(error?.field == "hotspots[0].ssid", "\(String(describing: error))")
        #expect(error?.message.contains("byte 0xE9 is not UTF-8") == true, "\(String(describing: error))")
        #expect(error?.message.contains("`ssid_hex: 436166e9204c756d69e87265`") == true, "\(String(describing: error))")
        #expect(error?.description.hasPrefix("\(file):\(line):14: hotspots[0].ssid: ") == true)
    }

    @Test("a scenario joining `Caf\\xe9` is refused before anything runs")
    func latin1ScenarioJoinRefused() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/join.yaml"
        try Self.write(Array("topology: \(Self.root)/topologies/captive.yaml\nsteps:\n  - join: Caf".utf8) + [0xE9] + [0x0A]
                       + Array("  - wait-state: Authenticated\n".utf8), file)
        let error = #expect(throws: TopologyError.self) { try ScenarioParser.load(path: file) }
        #expect(error?.line == 3 && error?.column == 14, "\(String(describing: error))")
        #expect(error?.field == "steps[0].join", "\(String(describing: error))")
        #expect(error?.message.contains("ssid_hex: 436166e9") == true, "\(String(describing: error))")
    }

    @Test("a comment with bytes that are not UTF-8 is refused too (the file is not UTF-8 text)")
    func latin1CommentRefused() throws {
        let error = #expect(throws: TopologyError.self) {
            _ = try LabYAML.text(Array("# caf".utf8) + [0xE9] + Array("\nhotspots: []\n".utf8), file: "c.yaml")
        }
        #expect(error?.line == 1 && error?.column == 6, "\(String(describing: error))")
    }

    @Test("YAML tags outside the core schema are refused; the core schema's are accepted",
          arguments: [("    ssid: !!binary Q2FmZQ==\n", "!!binary", 11), ("    ssid: !custom Cafe\n", "!custom", 11),
                      ("    ssid: !<tag:example.com,2026:x> Cafe\n", "tag:example.com,2026:x", 11)])
    func nonCoreTagsRefused(line: String, tag: String, column: Int) throws {
        let bytes = try Self.captive(ssidLine: Array(line.utf8))
        let error = #expect(throws: TopologyError.self) { try TopologyParser.parse(String(decoding: bytes, as: UTF8.self), file: "t.yaml") }
        #expect(error?.message.contains("YAML tag `\(tag)` is not supported") == true, "\(String(describing: error))")
        #expect(error?.field == "hotspots[0].ssid" && error?.line == Self.line(of: line.trimmingCharacters(in: .newlines), in: bytes)
                && error?.column == column, "\(String(describing: error))")
    }

    @Test("a tag on a mapping or a list is checked too, and `!!str` stays allowed")
    func tagsOnCollections() throws {
        let channel = try Self.captive(ssidLine: Array("    ssid: Cafe Lumiere\n    channel: !custom 6\n".utf8))
        let error = #expect(throws: TopologyError.self) { try TopologyParser.parse(String(decoding: channel, as: UTF8.self), file: "t.yaml") }
        #expect(error?.field == "hotspots[0].channel" && error?.message.contains("`!custom`") == true, "\(String(describing: error))")
        let mapping = #expect(throws: TopologyError.self) { try TopologyParser.parse("hotspots: !!omap [{a: 1}]\n", file: "t.yaml") }
        #expect(mapping?.message.contains("`!!omap`") == true, "\(String(describing: mapping))")
        let plain = try Self.captive(ssidLine: Array("    ssid: !!str Cafe Lumiere\n".utf8))
        #expect(try TopologyParser.parse(String(decoding: plain, as: UTF8.self), file: "t.yaml").hotspots[0].ssid == "Cafe Lumiere")
    }

    @Test("a helper command line with a quote left open is refused (topology, scenario and app providers)")
    func unclosedQuoteRefused() throws {
        let text = String(decoding: try Self.captiveBytes(), as: UTF8.self)
        let open = text.replacingOccurrences(of: #"--network "Cafe Lumiere"']"#, with: #"--network "Cafe Lumiere']"#)
        #expect(open != text)
        let error = #expect(throws: TopologyError.self) { try TopologyParser.parse(open, file: "t.yaml") }
        #expect(error?.field == "stations[0].helpers[0]", "\(String(describing: error))")
        #expect(error?.message.contains("never closed") == true, "\(String(describing: error))")
        #expect(error?.line == Self.line(of: "helpers: ['hotspot-helper-portal", in: Array(open.utf8)))

        let scenario = #expect(throws: TopologyError.self) {
            try ScenarioParser.parse("topology: captive.yaml\nhelpers: ['hotspot-helper-portal --network \"Cafe']\nsteps:\n  - wait-state: Authenticated\n", file: "s.yaml")
        }
        #expect(scenario?.field == "helpers[0]" && scenario?.line == 2, "\(String(describing: scenario))")
        // Balanced quotes (and an empty quoted word) still split as before.
        #expect(CommandWords.split(#"x --n "" --network "Cafe Lumiere""#).words == ["x", "--n", "", "--network", "Cafe Lumiere"])
        #expect(CommandWords.split(#"x "open"#).unclosedQuote == 2)
    }

    @Test("a UTF-8 byte-order mark is accepted: the same topology as without it, `---` and `%YAML` included",
          arguments: ["", "---\n", "%YAML 1.1\n---\n"])
    func byteOrderMarkAccepted(prefix: String) throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plain = Array(prefix.utf8) + (try Self.captiveBytes())
        let file = dir + "/bom.yaml"
        try Self.write([0xEF, 0xBB, 0xBF] + plain, file)
        let withMark = try TopologyParser.load(path: file)
        let without = try TopologyParser.parse(String(decoding: plain, as: UTF8.self), file: file)
        #expect(withMark == without)
        #expect(withMark.hotspots[0].ssid == "Cafe Lumiere")
    }

    @Test("a FIFO (or a device) given as a topology or scenario is refused at once, without blocking")
    func fifoRefusedWithoutBlocking() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fifo = dir + "/fifo.yaml"
        #expect(mkfifo(fifo, 0o600) == 0)
        // Run on a thread: if the open blocked, a writer opened here releases it, and the test fails instead of hanging.
        let result = LockedResult()
        let thread = Thread {
            let topology = Result { try TopologyParser.load(path: fifo) }.map { _ in "" }
            let scenario = Result { try ScenarioParser.load(path: fifo) }.map { _ in "" }
            result.set([topology, scenario])
        }
        thread.start()
        let deadline = ContinuousClock.now + .seconds(10)
        while result.get() == nil && ContinuousClock.now < deadline { usleep(1000) }
        let finished = result.get() != nil
        if !finished {
            for _ in 0..<2 {
                let fd = open(fifo, O_WRONLY | O_NONBLOCK)
                if fd >= 0 { close(fd) }
            }
        }
        #expect(finished, "loading a FIFO blocked")
        for outcome in result.get() ?? [] {
            guard case .failure(let error as TopologyError) = outcome else {
                Issue.record("a FIFO was read: \(outcome)")
                continue
            }
            #expect(error.message.contains("it is a FIFO (named pipe); expected a regular YAML file"), "\(error)")
        }
        let device = #expect(throws: TopologyError.self) { try TopologyParser.load(path: "/dev/null") }
        #expect(device?.message.contains("a character device") == true, "\(String(describing: device))")
    }

    @Test("a reader error (a control character) names its real line and column, once")
    func readerErrorPosition() throws {
        let bytes = try Self.captive(ssidLine: Array("    ssid: Ca".utf8) + [0x01] + Array("fe\n".utf8))
        let error = #expect(throws: TopologyError.self) { try TopologyParser.parse(String(decoding: bytes, as: UTF8.self), file: "t.yaml") }
        #expect(error?.line == Self.line(of: "ssid: Ca", in: bytes) && error?.column == 13, "\(String(describing: error))")
        #expect(error?.message.hasPrefix("YAML: control characters are not allowed (0x01)") == true, "\(String(describing: error))")
        #expect(error?.message.contains(":1:1") == false && error?.message.contains("\n") == false, "\(String(describing: error))")
        // The same after several lines of multi-byte characters: the column counts characters, as libyaml's marks.
        let later = #expect(throws: TopologyError.self) { try TopologyParser.parse("# é\n# ü\nname: \u{1}x\n", file: "t.yaml") }
        #expect(later?.line == 3 && later?.column == 7, "\(String(describing: later))")
    }
}

private final class LockedResult: @unchecked Sendable {  // the lock guards `value`, for the FIFO thread
    private let lock = HotspotSystem.Mutex()
    private var value: [Result<String, any Error>]?
    func set(_ new: [Result<String, any Error>]) { lock.lock(); value = new; lock.unlock() }
    func get() -> [Result<String, any Error>]? { lock.lock(); defer { lock.unlock() }; return value }
}
