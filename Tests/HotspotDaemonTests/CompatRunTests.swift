import Foundation
import HotspotCore
import HotspotDaemon
import HotspotProtocol
import Testing

@Suite("NEHotspotHelperCompat")
struct CompatRunTests {
    @Test("the article's handler, compiled against NEHotspotHelperCompat, runs against hotspotd")
    func articleHandler() throws {
        let d = try DaemonUnderTest(name: "compat")
        #expect(registerArticleHelper(socketPath: d.helperSocket))
        #expect(!registerArticleHelper(socketPath: d.helperSocket), "a second registration returns false")
        let s0 = try d.control.status()
        #expect(s0["helpers"]?.arrayValue?.first?["displayName"]?.stringValue == "Join this WIFI")
        // filterScanList: the secure network gets the password and the annotation.
        try d.control.request(.showScanList([cafe, cafeSecure], repeating: false))
        let scanned = try d.control.waitForStatus("annotated list") { $0["scanList"] != .null }
        let list = try #require(scanned["scanList"]?.arrayValue)
        #expect(list[0]["annotation"] == .null)
        #expect(list[1]["annotation"]?.stringValue == "Join this WIFI")
        #expect(list[1]["password"]?.stringValue == "password")
        // evaluate -> high, authenticate -> success.
        try d.join(cafeSecure)
        let s = try d.waitForState(.authenticated)
        #expect(s["bestHelper"]?.stringValue == "com.mobiarch")
        #expect(cacheEntry(s, "CafeSecure")?["helper"]?.stringValue == "com.mobiarch")
    }
}
