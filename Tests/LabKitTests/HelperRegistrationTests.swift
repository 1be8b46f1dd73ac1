import Foundation
import HotspotSystem
import Testing
import TestSupport
@testable import LabKit
@testable import LabSandbox
@testable import LabServices
@testable import LabTopology

/// When the lab gives up on a helper that has not registered: by what the helper does (idle, or computing without
/// registering), never by the clock alone (issue 25: a verdict may depend only on what the helper did).
@Suite("Registration patience (no root): what the helper does, not the machine's speed")
struct RegistrationPatienceTests {
    let patience = RegistrationPatience(floor: 20, quiet: 5, cpuBudget: 10, cap: 180)

    /// Samples every 0.25 s of a virtual clock up to `until`, the tree's CPU given by `cpu(elapsed)` (nil: not
    /// sampled); the first give-up, and when.
    func firstGiveUp(until: Double = 400, _ cpu: (Double) -> Double?) -> (at: Double, why: String)? {
        firstGiveUp(until: until, usage: { cpu($0).map { ProcessTree.Usage(cpu: $0) } })
    }

    /// The same with the tree's whole usage (CPU, run-queue wait, runnable) given by `usage(elapsed)`.
    func firstGiveUp(until: Double = 400, usage: (Double) -> ProcessTree.Usage?) -> (at: Double, why: String)? {
        var watch = RegistrationPatience.Watch()
        var t = 0.0
        while t <= until {
            if case .giveUp(let why) = patience.decide(elapsed: t, usage: usage(t), watch: &watch) { return (t, why) }
            t += 0.25
        }
        return nil
    }

    @Test("a helper slowed by a busy machine keeps spending CPU and is waited for past the fixed 20 s of old")
    func slowButComputing() throws {
        // 0.02 CPU-seconds per second (a fiftieth of a core): registers at 90 s; nothing gives up before.
        #expect(firstGiveUp(until: 90) { $0 * 0.02 } == nil)
    }

    @Test("an idle helper is given up on once the floor has passed and it spent nothing for 5 s; the text says so")
    func idle() throws {
        let started = try #require(firstGiveUp { $0 < 0.5 ? $0 * 0.4 : 0.2 })
        #expect(started.at == 20)
        #expect(started.why.hasPrefix("not registered within 20 s, idle (neither computing nor waiting for a CPU) for the last 19.5 s (0.2 s of CPU in all)"), "\(started.why)")
        // Computing until 18 s, then idle: 5 s of quiet after its last CPU.
        let late = try #require(firstGiveUp { min($0, 18) * 0.05 })
        #expect(late.at == 23, "\(late)")
    }

    @Test("a helper that computes without registering is given up on at its CPU budget, however long that takes")
    func busy() throws {
        let fullCore = try #require(firstGiveUp { $0 })
        #expect(fullCore.at == 10 && fullCore.why.hasPrefix("spent 10 s of CPU in 10 s without registering"), "\(fullCore)")
        // Half a core (a loaded machine): the same budget, twice the wall time; past the floor, never idle.
        let halfCore = try #require(firstGiveUp { $0 / 2 })
        #expect(halfCore.at == 20 && halfCore.why.hasPrefix("spent 10 s of CPU in 20 s"), "\(halfCore)")
    }

    @Test("a helper that polls lightly forever is never idle for 5 s: the cap ends the wait")
    func lightPoller() throws {
        let poller = try #require(firstGiveUp { ($0 / 4).rounded(.down) * 0.01 })
        #expect(poller.at == 180 && poller.why.hasPrefix("not registered within 180 s, though it kept computing"), "\(poller)")
    }

    @Test("samples not taken (nil) are neither progress nor idleness")
    func unsampled() throws {
        // Sampled once a second only: between samples nothing changes the watch.
        let sparse = try #require(firstGiveUp { $0.truncatingRemainder(dividingBy: 1) == 0 ? min($0, 10) * 0.01 : nil })
        #expect(sparse.at == 20, "\(sparse)")
        var watch = RegistrationPatience.Watch()
        _ = patience.decide(elapsed: 1, usage: .init(cpu: 0.5), watch: &watch)
        _ = patience.decide(elapsed: 2, usage: nil, watch: &watch)
        #expect(watch.cpu == 0.5 && watch.grewAt == 1)
    }

    @Test("a helper starved by a busy machine (runnable, waiting on a run queue, no CPU for seconds) is never idle")
    func starved() throws {
        // CI's loaded cgroup: a spinning helper computed until 3 s, then got no CPU for 30 s while it waited for one.
        // Its wait grows (the kernel adds it when the thread runs again) or the thread reads as runnable.
        #expect(firstGiveUp(until: 33, usage: { t in ProcessTree.Usage(cpu: min(t, 3) * 0.3, waited: t * 0.7) }) == nil)
        #expect(firstGiveUp(until: 33, usage: { t in ProcessTree.Usage(cpu: min(t, 3) * 0.3, waited: 2.1, runnable: t > 3) }) == nil)
        // Blocked on I/O in the kernel (state D at every read: a page fault over a busy disk) is not idle either.
        #expect(firstGiveUp(until: 33, usage: { t in ProcessTree.Usage(cpu: min(t, 3) * 0.3, waited: 2.1, blockedOnIO: t > 3) }) == nil)
        // Control: the same CPU with neither wait nor a runnable thread is idle after 5 s of quiet past the floor.
        let control = try #require(firstGiveUp(until: 33, usage: { t in ProcessTree.Usage(cpu: min(t, 3) * 0.3, waited: 2.1) }))
        #expect(control.at == 20 && control.why.contains("idle (neither computing nor waiting for a CPU) for the last 17 s"), "\(control)")
        // Waiting for a CPU is not computing: the CPU budget counts CPU only, the cap still ends the wait.
        let waitsOnly = try #require(firstGiveUp(usage: { t in ProcessTree.Usage(cpu: 0.5, waited: t) }))
        #expect(waitsOnly.at == 180 && waitsOnly.why.hasPrefix("not registered within 180 s, though it kept computing or waiting for a CPU"), "\(waitsOnly)")
    }
}

/// The same rules on real helpers in a native lab (root: namespaces, veth): a helper that sleeps, one that computes,
/// and a wrapper script whose child computes (its CPU is the tree's). The budgets are short so the suite is quick;
/// each case's verdict depends on what its helper does, not on how fast it runs. A wrapper whose child registers is
/// the control that the tree, not only the helper's own pid, is matched, and that what it started ends with the lab.
@Suite("Helper registration in a lab (root, host kernel, veth)", .serialized, .requiresRoot)
struct HelperRegistrationRootTests {
    static let patience = RegistrationPatience(floor: 2, quiet: 1.5, cpuBudget: 1, cap: 60)

    /// Brings the open hotspot up with `helper` for its station; the error of the bring-up, or nil when it came up.
    static func bringUp(_ helper: String, marker: String, patience: RegistrationPatience = Self.patience) throws
        -> (error: String?, leftRunning: [pid_t]) {
        let topology = try TopologyParser.load(path: "topologies/open.yaml")
        var failure: String?
        do {
            let lab = try RunningTopology.up(topology, options: RunningTopologyOptions(
                linkMode: .veth, stations: StationLabOptions(helperOverride: [helper], registrationPatience: patience)))
            let registered = lab.station()?.helpers.first?.identifier
            #expect(registered != nil, "the lab came up with the helper registered")
            let errors = lab.down()
            #expect(errors.isEmpty, "teardown: \(errors)")
        } catch {
            failure = "\(error)"
        }
        return (failure, Self.processes(containing: marker))
    }

    /// The pids whose command line contains `marker` (the helpers' own words; nothing else has them).
    static func processes(containing marker: String) -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { pid_t($0) }.filter { pid in
            guard pid != getpid(), let line = readSmallFile("/proc/\(pid)/cmdline") else { return false }
            return line.contains(marker)
        }
    }

    @Test("root: a helper that sleeps without registering is given up on as idle, named with its command")
    func sleeper() throws {
        let (error, left) = try Self.bringUp("sleep 601.25", marker: "601.25")
        let text = try #require(error, "the lab came up with a helper that never registers")
        #expect(text.contains("start helper sleep 601.25: not registered with hotspotd: not registered within")
                && text.contains("idle (neither computing nor waiting for a CPU)"), "\(text)")
        #expect(left.isEmpty, "left running: \(left)")
    }

    @Test("root: a helper that computes without registering is given up on at its CPU budget")
    func spinner() throws {
        let (error, left) = try Self.bringUp("sh -c \"while :; do :; done; : hsl-spin-602\"", marker: "hsl-spin-602")
        let text = try #require(error)
        #expect(text.contains("not registered with hotspotd: spent") && text.contains("s of CPU"), "\(text)")
        #expect(left.isEmpty, "left running: \(left)")
    }

    @Test("root: a wrapper whose child computes: the child's CPU counts, and the child ends with the lab")
    func wrapperWithBusyChild() throws {
        // The inner shell is a child (the `:` after it keeps the outer one from exec'ing it): the outer one is idle.
        let (error, left) = try Self.bringUp("sh -c \"sh -c 'while :; do :; done; : hsl-inner-603'; :\"", marker: "hsl-inner-603")
        let text = try #require(error)
        #expect(text.contains("not registered with hotspotd: spent") && text.contains("s of CPU"), "idle would mean the child's CPU was not counted: \(text)")
        #expect(left.isEmpty, "the wrapper's child outlived the lab: \(left)")
    }

    @Test("root: control: a wrapper script that starts the helper as its child registers (matched below its pid)")
    func wrapperWithHelperChild() throws {
        let helper = try BuildProducts.locate("hotspot-helper-portal")
        // The lab's own patience: a helper that registers must not meet the short budgets of the cases above, which a
        // loaded machine could stretch its registration past (it waits on hotspotd's answer without computing).
        let (error, left) = try Self.bringUp("sh -c \"\(helper) --account guest:croissant --network hsl-child-604; :\"", marker: "hsl-child-604",
                                             patience: RegistrationPatience())
        #expect(error == nil, "\(error ?? "")")
        #expect(left.isEmpty, "the wrapper's helper outlived the lab: \(left)")
    }
}
