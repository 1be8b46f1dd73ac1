import HotspotCore
import Testing

/// Issue 17: the per-network cache is bounded; storing past the limit drops the least recently used entry.
@Suite("cache limit")
struct CacheLimitTests {
    static func network(_ i: Int) -> HotspotNetwork {
        HotspotNetwork(ssid: "Net\(i)", bssid: "02:00:00:00:01:0\(i)", signalStrength: 0.5, didAutoJoin: true)
    }

    /// Joins, lets both helpers decline (not captive: cached), leaves.
    static func visit(_ d: inout Driver, _ i: Int) -> [Effect] {
        d.join(network(i))
        d.answer(Fixture.a, .success, confidence: .none)
        let effects = d.answer(Fixture.b, .success, confidence: .none)
        #expect(d.state == .authenticated, "visit \(i)")
        d.step(.disassociated)
        return effects
    }

    @Test("past cacheLimit the least recently used entry is evicted, with a cacheEvicted effect")
    func leastRecentlyUsedIsEvicted() {
        var d = Driver()
        d.machine.cacheLimit = 3
        for i in 0..<3 { _ = Self.visit(&d, i) }
        #expect(d.machine.cache.count == 3)
        _ = Self.visit(&d, 0)  // Net0 used again: Net1 is now the least recently used
        let effects = Self.visit(&d, 3)
        #expect(effects.contains(.cacheEvicted(Self.network(1).identity, limit: 3)), "\(effects)")
        #expect(Set(d.machine.cache.keys) == Set([0, 2, 3].map { Self.network($0).identity }))
        for i in 4..<20 { _ = Self.visit(&d, i) }
        #expect(d.machine.cache.count == 3)
        #expect(HotspotMachine.defaultCacheLimit == 1024)
    }
}
