import HotspotCore
import Testing
@testable import HotspotHelper

/// Issue 17: the SDK's `ssid` is lossy like Apple's, its identity is the bytes, and an answer carries them back.
@Suite("SDK: SSIDs as bytes")
struct SSIDHelperTests {
    @Test("ssid is lossy text, ssidData the bytes; setConfidence keeps the bytes in the answer")
    func lossyTextBytesIdentity() {
        let bytes: [UInt8] = [0x43, 0x61, 0x66, 0xE9]
        let network = SDKNetwork(HotspotCore.HotspotNetwork(rawSSID: SSID(bytes: bytes), bssid: "02:00:00:00:00:01"))
        #expect(network.ssid == "Caf\u{FFFD}")
        #expect(network.ssidData == bytes)
        network.setConfidence(HotspotHelperConfidence.high)
        #expect(network.snapshot.rawSSID.bytes == bytes)
        #expect(network.description == #""Caf\xe9" (02:00:00:00:00:01)"#)
        let plain = SDKNetwork(HotspotCore.HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:00:02"))
        #expect(plain.description == "Cafe (02:00:00:00:00:02)")
    }
}
