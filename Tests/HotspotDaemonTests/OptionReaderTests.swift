import HotspotSystem
import Testing

/// `OptionReader`: the command line of hotspotd and hotspot-portal (the programs a lab starts per station and per
/// hotspot). The reader itself, then the real programs' usage errors and help.
@Suite("OptionReader: hotspotd's and hotspot-portal's command line")
struct OptionReaderTests {
    @Test("both spellings, defaults, repeats, flags and typed values")
    func values() {
        var reader = OptionReader(command: "t", abstract: "a", arguments: [
            "--run-dir", "/tmp/x", "--time-scale=0.5", "--setting", "a=1", "--setting=b=2", "--echo",
        ])
        let runDir = reader.value("run-dir", default: "/run/x", help: "")
        let interface = reader.value("interface", default: "wlan0", help: "")
        let scale = reader.value("time-scale", default: 1.0, help: "")
        let port = reader.value("port", default: UInt16(80), help: "")
        let settings = reader.values("setting", help: "")
        let echo = reader.flag("echo", help: "")
        let quiet = reader.flag("quiet", help: "")
        let hook: String? = reader.value("hook", help: "")
        #expect(runDir == "/tmp/x")
        #expect(interface == "wlan0")
        #expect(scale == 0.5)
        #expect(port == 80)
        #expect(settings == ["a=1", "b=2"])
        #expect(echo)
        #expect(!quiet)
        #expect(hook == nil)
        #expect(reader.errors.isEmpty)
    }

    @Test("a bad number, a missing value and a value given to a flag are errors naming the option")
    func errors() {
        var reader = OptionReader(command: "t", abstract: "a", arguments: ["--time-scale", "fast", "--port", "-1", "--echo", "yes", "--interface"])
        let scale: Double = reader.value("time-scale", default: 1.0, help: "")
        let port: UInt16 = reader.value("port", default: 80, help: "")
        _ = reader.flag("echo", help: "")
        _ = reader.value("interface", default: "wlan0", help: "")
        #expect(scale == 1.0)
        #expect(port == 80)
        #expect(reader.errors == [
            "--time-scale: expected a number, found `fast`",
            "--port: expected a whole number, found `-1`",
            "unexpected argument `yes` (--echo takes no value)",
            "--interface: expected a value",
        ])
    }

    @Test("help lists every declared option with its default")
    func help() {
        var reader = OptionReader(command: "hotspotd", abstract: "Run it.", arguments: [])
        _ = reader.value("run-dir", default: "/run/hotspotd", help: "Where.")
        _ = reader.flag("echo-trace", help: "Copy.")
        #expect(reader.help.contains("OVERVIEW: Run it."))
        #expect(reader.help.contains("--run-dir <run-dir>"))
        #expect(reader.help.contains("Where. (default: /run/hotspotd)"))
        #expect(reader.help.contains("--echo-trace"))
    }

    static let usageCases: [(program: String, arguments: [String], message: String)] = [
        ("hotspotd", ["--bogus", "1"], "hotspotd: error: unknown option --bogus"),
        ("hotspotd", ["--time-scale", "x"], "hotspotd: error: --time-scale: expected a number, found `x`"),
        ("hotspotd", ["--time-scale", "0"], "hotspotd: error: --time-scale must be a positive number, got 0.0"),
        ("hotspotd", ["--wpa-supplicant", "/a", "--link-control", "/b"], "a station has one Wi-Fi link"),
        ("hotspot-portal", ["--kind", "click-through"], "hotspot-portal: error: missing --listen IPV4:PORT"),
        ("hotspot-portal", ["--listen", "198.51.100.1:80"], "give exactly one of --kind KIND or --internet"),
        ("hotspot-portal", ["--listen", "198.51.100.1:80", "--kind", "nope"], "--kind: unknown portal kind `nope`"),
    ]

    @Test("the programs refuse bad command lines with exit status 64 and the problem on stderr", arguments: usageCases)
    func programUsageErrors(_ c: (program: String, arguments: [String], message: String)) throws {
        let result = try ProcessRunner.run(ProcessConfiguration(try BuildProducts.locate(c.program), c.arguments), timeout: .seconds(60))
        #expect(result.status == .exited(64))
        #expect(result.stderr.contains(c.message), "\(result.stderr)")
        #expect(result.stderr.contains("Usage: \(c.program)"))
    }

    @Test("--help prints the options and exits 0", arguments: ["hotspotd", "hotspot-portal"])
    func programHelp(_ program: String) throws {
        let result = try ProcessRunner.run(ProcessConfiguration(try BuildProducts.locate(program), ["--help"]), timeout: .seconds(60))
        #expect(result.status == .exited(0))
        #expect(result.stdout.contains("USAGE: \(program)"))
        #expect(result.stdout.contains(program == "hotspotd" ? "--link-control <link-control>" : "--setting <setting>"))
    }
}
