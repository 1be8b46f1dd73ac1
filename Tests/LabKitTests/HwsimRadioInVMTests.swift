import Glibc
import HotspotSystem
import LabKit
import Netlink
import Testing
import TestSupport

/// True when the MAC80211_HWSIM family answers. Inside the lab VM, loads the module first
/// (`modprobe mac80211_hwsim radios=0`) if nothing loaded it yet.
func hwsimReady() -> Bool {
    if Hwsim.isAvailable() { return true }
    guard TestHost.isRoot, InVM.isActive else { return false }
    _ = try? ProcessRunner.run(ProcessConfiguration("modprobe", ["mac80211_hwsim", "radios=0"]), timeout: .seconds(30))
    return Hwsim.isAvailable()
}

let hwsimSkipReason: Comment = "mac80211_hwsim generic netlink family MAC80211_HWSIM is not present (this kernel has no wireless); these tests run inside the lab VM"

/// Radios: only where mac80211_hwsim exists (inside the lab VM). Elsewhere they are reported as skipped.
@Suite("mac80211_hwsim radios (root, VM)", .tags(.root, .inVM), .enabled(if: TestHost.isRoot && hwsimReady(), hwsimSkipReason), .serialized)
struct InVMHwsimRadioTests {
    @Test func hwsimTwoRadiosNamedMovedVisibleDeleted() throws {
        let prefix = testPrefix("w")
        let hwsim = try Hwsim()
        let nl80211 = try Nl80211()
        let root = try RouteNetlink.current()
        let namespaces = try NetworkNamespace.createMany([prefix + "a", prefix + "b"])
        defer { for ns in namespaces { try? ns.delete() } }

        var radios: [SimulatedRadio] = []
        var owners: [Hwsim] = []
        defer { for (radio, owner) in zip(radios, owners) { try? owner.deleteRadio(name: radio.name) } }
        for (index, ns) in namespaces.enumerated() {
            let radio = try hwsim.createRadio(name: prefix + "r\(index)", permanentAddress: MACAddress.local(0x5e1100, UInt8(index)))
            radios.append(radio)
            owners.append(hwsim)
            #expect(radio.id >= 0)
            #expect(try hwsim.radio(id: radio.id)?.name == radio.name)
            let wiphy = try nl80211.wiphy(named: radio.name)
            let interfaces = try nl80211.interfaces(ofWiphy: wiphy)
            #expect(!interfaces.isEmpty)
            for interface in interfaces { try root.setUp(interface.name, false) }
            try nl80211.moveWiphy(wiphy, to: ns)
            // Gone from the root namespace, present in the lab namespace (hwsim answers per namespace).
            let inside = try Hwsim.inside(ns)
            owners[index] = inside
            #expect(try hwsim.radio(id: radio.id) == nil)
            #expect(try inside.radio(id: radio.id)?.name == radio.name)
            for interface in interfaces {
                #expect(throws: SystemError.self) { try root.link(interface.name) }
                #expect(try ns.route.link(interface.name).index > 0)
            }
        }
        #expect(radios[0].id != radios[1].id)
        for (radio, owner) in zip(radios, owners) {
            try owner.deleteRadio(name: radio.name)
            #expect(try owner.radio(id: radio.id) == nil)
        }
        radios.removeAll()
    }

    /// The floor of the lab's `signal` step: mac80211 takes a fixed tx power from 0 dBm in whole dBm, so
    /// hwsim's received signal (-50 dBm + tx power) cannot go below -50 dBm.
    @Test func hwsimTxPowerWholeDBmFromZero() throws {
        let prefix = testPrefix("p")
        let hwsim = try Hwsim()
        let radio = try hwsim.createRadio(name: prefix + "r0", permanentAddress: MACAddress.local(0x5e1200, 1), destroyOnClose: true)
        defer { try? hwsim.deleteRadio(name: radio.name) }
        let nl80211 = try Nl80211()
        let interface = try #require(try nl80211.interfaces(ofWiphy: try nl80211.wiphy(named: radio.name)).first)
        try nl80211.setTxPower(interface: interface, mBm: 0)
        try nl80211.setTxPower(interface: interface, mBm: 1000)
        try nl80211.setTxPower(interface: interface, mBm: nil)
        for refused: Int32 in [-100, 150] {
            let error = try #require(throws: SystemError.self) { try nl80211.setTxPower(interface: interface, mBm: refused) }
            #expect(error.errno == EOPNOTSUPP, "\(refused) mBm: \(error)")
            #expect("\(error)".contains("set tx power \(refused) mBm of \(interface.name)"), "\(error)")
        }
    }

    @Test func hwsimClosingCreatingSocketDestroysRadio() throws {
        let prefix = testPrefix("d")
        let creator = try Hwsim()
        let radio = try creator.createRadio(name: prefix + "r0", destroyOnClose: true)
        let observer = try Hwsim()
        #expect(try observer.radio(id: radio.id)?.name == radio.name)
        creator.socket.close()
        // The kernel removes the radio on its own schedule: a bound for a hang (30 s under TCG), not a pace.
        var gone = false
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if try observer.radio(id: radio.id) == nil { gone = true; break }
            usleep(20_000)
        }
        #expect(gone)
    }
}

/// The crash case with radios: only where mac80211_hwsim exists (inside the lab VM).
@Suite("mac80211_hwsim lab crash cleanup (root, VM)", .tags(.root, .inVM), .enabled(if: TestHost.isRoot && hwsimReady(), hwsimSkipReason), .serialized)
struct InVMLabCrashRadioTests {
    @Test func hwsimSigkillHalfwayThenCleanLeavesNoRadios() throws {
        let hotspotLab = try BuildProducts.locate("hotspot-lab")
        let child = try ChildProcess.spawn(ProcessConfiguration(hotspotLab, ["bench", "lab", "--pause-after", "2", "--with-radios"],
                                                                stdout: .pipe, stderr: .pipe))
        let line = readFirstLine(fd: child.stdoutFD!, timeout: .seconds(60))
        #expect(line.hasPrefix("PAUSED hsl"), "bench lab --pause-after --with-radios printed: \(line)")
        let prefix = String(line.dropFirst("PAUSED ".count).prefix(7))
        // Halfway: two radios live in the first namespaces of the two pairs.
        var found = 0
        for index in 0..<2 {
            let ns = try NetworkNamespace.open(prefix + "a\(index)")
            found += try Hwsim.inside(ns).radios().filter { $0.name.hasPrefix(prefix) }.count
            ns.release()
        }
        #expect(found == 2)

        try child.signal(SIGKILL)
        #expect(try child.wait(timeout: .seconds(5)) == .signaled(SIGKILL))
        let clean = try ProcessRunner.run(ProcessConfiguration(hotspotLab, ["clean"]), timeout: .seconds(60))
        #expect(clean.status == .exited(0), "clean: \(clean.stdout) \(clean.stderr)")

        #expect(NetworkNamespace.list().filter { $0.hasPrefix(prefix) }.isEmpty)
        // Radios of deleted namespaces would return to the root namespace: none of ours may be there.
        var leftover: [SimulatedRadio] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            leftover = try Hwsim().radios().filter { $0.name.hasPrefix(prefix) }
            if leftover.isEmpty { break }
            usleep(20_000)
        }
        #expect(leftover.isEmpty, "radios left: \(leftover)")
        #expect(try RouteNetlink.current().links().filter { $0.name.hasPrefix(prefix) }.isEmpty)
    }
}
