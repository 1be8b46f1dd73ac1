import Foundation
import Testing
import TestSupport
@testable import LabKit
@testable import LabVM

/// Runs inside the VM (VMSuiteTests boots it once and runs every `InVM*` suite), or on a host whose
/// kernel has mac80211_hwsim. Elsewhere it is reported as skipped.
@Suite("InVM: mac80211_hwsim radios (root)", .tags(.inVM), .serialized, .enabled(if: InVM.hwsimAvailable, "needs mac80211_hwsim: runs inside the hotspot-lab VM (see VMSuiteTests)"))
struct InVMHwsimTests {
    @Test("root: two hwsim radios in two namespaces; hostapd (open, ch 6) and wpa_supplicant associate; dnsmasq leases with option 114")
    func associateAndLease() throws {
        try #require(TestHost.isRoot, "needs root")
        var selftest = HwsimSelftest()
        let pcap = "\(InVM.resultsDirectory ?? "/tmp")/hwsim-selftest-\(getpid()).pcap"
        selftest.pcapPath = pcap
        defer { unlink(pcap) }
        let report = try selftest.run { print($0) }
        #expect(report.providerName == "NetlinkRadioProvider", "radios must come from our netlink code")
        #expect(report.radios.count == 2)
        #expect(Set(report.radios.map(\.phy)).count == 2)
        #expect(report.hwsimReady > 0 && report.hwsimReady <= report.radiosReady)
        #expect(report.apEnabled > report.radiosReady)
        #expect(report.associated > report.apEnabled)
        #expect(report.leased >= report.associated)
        let octets = report.leaseAddress.split(separator: ".").compactMap { Int($0) }
        #expect(octets.count == 4 && octets[0...2] == [192, 0, 2] && (10...50).contains(octets[3]), "lease \(report.leaseAddress) outside 192.0.2.10-50")
        #expect(report.leaseOption114 == selftest.portalAPI)
        #expect(report.pinged >= report.leased)
        #expect(report.capturedFrames > 0, "the capture of the air (hwsim0) saw \(report.capturedFrames) frames")
    }
}
