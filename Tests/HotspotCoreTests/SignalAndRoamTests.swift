import HotspotCore
import Testing

/// The associated network's signal strength changes (no transition), and a roam within one SSID
/// (docs/DECISIONS.md: a new association, so Inactive and the cached sequence).
@Suite("signal strength and roaming")
struct SignalAndRoamTests {
    @Test("A signal change in every resting state: no transition, no effect; the association keeps the new strength",
          arguments: [HotspotState.inactive, .evaluating, .authenticating, .presentingUI, .authenticated, .maintaining])
    func signalChangeChangesNothingElse(_ state: HotspotState) {
        var d = Driver()
        if state == .inactive { d.step(.associated(Fixture.coffee)) } else { d.to(state) }
        let before = d.machine
        d.step(.signalChanged(0.25))
        #expect(d.last.isEmpty)
        #expect(d.state == state)
        #expect(d.machine.association?.signalStrength == 0.25)
        #expect(d.machine.association?.bssid == before.association?.bssid)
        #expect(d.machine.pending.map(\.id) == before.pending.map(\.id))
        #expect(d.machine.ipReleased == before.ipReleased && d.machine.maintainTimerArmed == before.maintainTimerArmed)
    }

    @Test("The next command carries the new strength; a command already sent keeps the one it was sent with")
    func nextCommandCarriesIt() {
        var d = Driver()
        d.toAuthenticating()
        let sent = d.outstanding(Fixture.a)
        #expect(sent.network?.signalStrength == Fixture.coffee.signalStrength)
        d.step(.signalChanged(0.3))
        #expect(d.outstanding(Fixture.a).network?.signalStrength == Fixture.coffee.signalStrength)
        d.answer(Fixture.a, .success)
        #expect(d.state == .authenticated)
        d.step(.maintainTimerFired)
        #expect(d.the(.maintain).network?.signalStrength == 0.3)
        #expect(d.machine.supportedNetworkInterfaces(for: Fixture.a).first?.signalStrength == 0.3)
    }

    @Test("A signal change without an association is ignored; strengths are clamped to 0...1; NaN is ignored")
    func edges() {
        var d = Driver()
        d.step(.signalChanged(0.5))
        #expect(d.last.isEmpty && d.machine.association == nil)
        d.step(.associated(Fixture.coffee))
        d.step(.signalChanged(-3))
        #expect(d.machine.association?.signalStrength == 0)
        d.step(.signalChanged(7))
        #expect(d.machine.association?.signalStrength == 1)
        d.step(.signalChanged(.nan))
        #expect(d.machine.association?.signalStrength == 1)
    }

    @Test("A roam (another BSSID of the same SSID) from Authenticated: Inactive, then IP up -> Maintaining(didJustJoin) -> Authenticated, no evaluate")
    func roamFollowsTheCachedSequence() {
        var d = Driver()
        d.toAuthenticated()
        var second = Fixture.coffee
        second.bssid = "02:00:00:00:00:11"
        second.signalStrength = 0.9
        d.step(.associated(second))
        #expect(d.last.transitions == [.inactive])
        #expect(d.machine.association?.bssid == "02:00:00:00:00:11")
        d.step(.ipUp)
        #expect(d.last.transitions == [.maintaining])
        #expect(d.sent(.evaluate).isEmpty)
        let maintain = d.the(.maintain)
        #expect(maintain.helper == Fixture.a)
        #expect(maintain.network?.didJustJoin == true)
        #expect(maintain.network?.bssid == "02:00:00:00:00:11" && maintain.network?.signalStrength == 0.9)
        #expect(!d.machine.ipReleased)
        d.answer(maintain, .success)
        #expect(d.state == .authenticated && d.machine.ipReleased)
    }
}
