import ArgumentParser
import Glibc
import HotspotSystem
import LabKit
import Netlink

/// `hotspot-lab bench lab`: bring up and tear down N namespace pairs joined by veth with addresses, through
/// our netlink code and, in the same run, through the equivalent `ip` commands.
public struct LabBenchmark: Sendable {
    /// Comma-separated pair counts.
    public var sizes: String
    /// Only measure our netlink code.
    public var skipIP: Bool
    /// Test hook: build a lab pair by pair, start a sleeper in the first namespace after this many pairs,
    /// print `PAUSED <prefix>` and wait to be killed (used by the SIGKILL-halfway cleanup test).
    public var pauseAfter: Int?
    /// Test hook with `pauseAfter`: also create a radio in each pair's first namespace (needs mac80211_hwsim).
    public var withRadios: Bool

    public init(sizes: String = "1,10,100", skipIP: Bool = false, pauseAfter: Int? = nil, withRadios: Bool = false) {
        self.sizes = sizes
        self.skipIP = skipIP
        self.pauseAfter = pauseAfter
        self.withRadios = withRadios
    }

    public func run() throws {
        if let pauseAfter { try pauseHalfway(pairs: pauseAfter) }
        let counts = sizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 && $0 <= 4000 }) else {
            throw ValidationError("--sizes: expected comma-separated pair counts between 1 and 4000, got '\(sizes)'")
        }
        print("bench lab: N namespace pairs joined by veth, one address per side, links and lo up")
        print("N      ours up   ours down  ip up     ip down   up ratio  down ratio  left behind")
        for count in counts {
            let ours = try measureOurs(pairs: count)
            var line = pad("\(count)", 7) + pad(ms(ours.up), 10) + pad(ms(ours.down), 11)
            var left = ours.leftBehind
            if !skipIP {
                let ip = try measureIP(pairs: count)
                left += ip.leftBehind
                line += pad(ms(ip.up), 10) + pad(ms(ip.down), 10)
                line += pad(String(format1(ip.up / ours.up)) + "x", 10) + pad(String(format1(ip.down / ours.down)) + "x", 12)
            } else {
                line += pad("-", 10) + pad("-", 10) + pad("-", 10) + pad("-", 12)
            }
            print(line + "\(left)")
            if left != 0 { throw ExitCode(1) }
        }
    }

    struct Timing {
        var up: Double
        var down: Double
        var leftBehind: Int
    }

    static func addresses(_ index: Int) -> (IPPrefix, IPPrefix) {
        let base = index * 4
        let third = 0 + base / 256
        let fourth = base % 256
        return (IPPrefix("198.18.\(third).\(fourth + 1)/30")!, IPPrefix("198.18.\(third).\(fourth + 2)/30")!)
    }

    func measureOurs(pairs: Int) throws -> Timing {
        let clock = ContinuousClock()
        let start = clock.now
        let lab = try Lab.start()
        var suffixes: [String] = []
        for index in 0..<pairs { suffixes += ["a\(index)", "b\(index)"] }
        let namespaces = try lab.createNamespaces(suffixes)
        let namespacesReady = clock.now - start
        if getenv("HSL_BENCH_DEBUG") != nil { print("  namespaces ready after \(namespacesReady)") }
        // Two threads (the machine has two cores); each pair only touches its own two namespaces.
        let halves = [Array(stride(from: 0, to: pairs, by: 2)), Array(stride(from: 1, to: pairs, by: 2))].filter { !$0.isEmpty }
        let results = try DedicatedThread.runAll(halves.map { indices in
            { () throws -> Void in
                for index in indices {
                    let (left, right) = LabBenchmark.addresses(index)
                    try lab.connect(namespaces[2 * index], "x\(index)", addresses: [left], to: namespaces[2 * index + 1], "y\(index)", addresses: [right])
                }
            }
        })
        for result in results { try result.get() }
        let up = clock.now - start
        let prefix = lab.prefix
        let downStart = clock.now
        let errors = lab.teardown()
        let down = clock.now - downStart
        if let error = errors.first { throw error }
        return Timing(up: seconds(up), down: seconds(down), leftBehind: leftBehind(prefix))
    }

    func measureIP(pairs: Int) throws -> Timing {
        // A lab only reserves the prefix (state dir + owner) so a crash here is cleaned like any run.
        let lab = try Lab.start()
        let prefix = lab.prefix
        func ip(_ arguments: String...) throws {
            try ProcessRunner.check(ProcessConfiguration("ip", arguments), timeout: .seconds(30))
        }
        let clock = ContinuousClock()
        let start = clock.now
        for index in 0..<pairs {
            let (a, b) = (prefix + "a\(index)", prefix + "b\(index)")
            let (x, y) = (prefix + "x\(index)", prefix + "y\(index)")
            let (left, right) = LabBenchmark.addresses(index)
            try ip("netns", "add", a)
            try ip("netns", "add", b)
            try ip("-n", a, "link", "set", "lo", "up")
            try ip("-n", b, "link", "set", "lo", "up")
            try ip("-n", a, "link", "add", x, "type", "veth", "peer", "name", y, "netns", b)
            try ip("-n", a, "addr", "add", left.description, "dev", x)
            try ip("-n", b, "addr", "add", right.description, "dev", y)
            try ip("-n", a, "link", "set", x, "up")
            try ip("-n", b, "link", "set", y, "up")
        }
        let up = clock.now - start
        let downStart = clock.now
        for index in 0..<pairs {
            try ip("netns", "del", prefix + "a\(index)")
            try ip("netns", "del", prefix + "b\(index)")
        }
        let down = clock.now - downStart
        lab.teardown()
        return Timing(up: seconds(up), down: seconds(down), leftBehind: leftBehind(prefix))
    }

    /// Namespaces and root-namespace links with this prefix, and the state directory, still present.
    func leftBehind(_ prefix: String) -> Int {
        let namespaces = NetworkNamespace.list().filter { $0.hasPrefix(prefix) }.count
        let links = ((try? RouteNetlink.current().links()) ?? []).filter { $0.name.hasPrefix(prefix) }.count
        let state = access(LabState.root + "/" + prefix, F_OK) == 0 ? 1 : 0
        return namespaces + links + state
    }

    func pauseHalfway(pairs: Int) throws -> Never {
        let lab = try Lab.start()
        for index in 0..<pairs {
            let namespaces = try lab.createNamespaces(["a\(index)", "b\(index)"])
            let (left, right) = LabBenchmark.addresses(index)
            try lab.connect(namespaces[0], "x\(index)", addresses: [left], to: namespaces[1], "y\(index)", addresses: [right])
            if index == 0 {
                try lab.spawn(ProcessConfiguration("sleep", ["600"], stdout: .discard, stderr: .discard), in: namespaces[0])
            }
            if withRadios { _ = try lab.createRadio("w\(index)", in: namespaces[0]) }
        }
        print("PAUSED \(lab.prefix)")
        fflush(nil)
        while true { sleep(3600) }
    }
}

private func seconds(_ duration: Duration) -> Double {
    duration.secondsDouble
}

private func ms(_ seconds: Double) -> String {
    let value = (seconds * 10000).rounded() / 10
    return "\(value) ms"
}

private func format1(_ value: Double) -> Double { (value * 10).rounded() / 10 }

private func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
}
