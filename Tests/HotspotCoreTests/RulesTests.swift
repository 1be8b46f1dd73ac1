import HotspotCore
import Testing

/// docs/SPEC.md "logoff(network)".
@Suite("logoff(network)")
struct LogoffRulesTests {
    @Test("logoff(network): current authenticated network, the helper that authenticated it, in the foreground -> true, LoggingOff")
    func accepted() {
        var d = Driver()
        d.toAuthenticated()
        d.step(.foreground(Fixture.a))
        d.step(.logoffRequested(Fixture.a, network: Fixture.coffee.identity))
        #expect(d.last.first == .logoffAnswer(Fixture.a, accepted: true))
        #expect(d.state == .loggingOff)
    }

    enum Refusal: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case wrongHelper = "the caller is not the helper that authenticated it"
        case notForeground = "the caller is not in the foreground"
        case otherNetwork = "the network is not the current network"
        case otherSecurity = "the network has the same SSID but another security type"
        case notAuthenticated = "the network is not authenticated yet (Authenticating)"
        case maintaining = "the machine is Maintaining"
        case notCaptive = "the network was not captive (no helper authenticated it)"
        case unregistered = "the caller is not registered"
        var testDescription: String { rawValue }
    }

    @Test("logoff(network) returns false and nothing changes when", arguments: Refusal.allCases)
    func refused(_ refusal: Refusal) {
        var d = Driver()
        var caller = Fixture.a
        var network = Fixture.coffee.identity
        switch refusal {
        case .notAuthenticated:
            d.toAuthenticating()
            d.step(.foreground(Fixture.a))
        case .maintaining:
            d.toMaintaining()
            d.step(.foreground(Fixture.a))
        case .notCaptive:
            d.toEvaluating()
            d.answer(Fixture.a, .success)
            d.answer(Fixture.b, .success)
            #expect(d.state == .authenticated)
            d.step(.foreground(Fixture.a))
        default:
            d.toAuthenticated()
            d.step(.foreground(Fixture.a))
        }
        switch refusal {
        case .wrongHelper:
            caller = Fixture.b
            d.step(.foreground(Fixture.b))
        case .notForeground: d.step(.foreground(Fixture.b))
        case .otherNetwork: network = Fixture.airport.identity
        case .otherSecurity: network = NetworkIdentity(ssid: Fixture.coffee.ssid, security: .wpa2Personal)
        case .unregistered:
            caller = "com.example.stranger"
            d.step(.foreground(caller))
        default: break
        }
        let before = d.machine
        d.step(.logoffRequested(caller, network: network))
        #expect(d.last == [.logoffAnswer(caller, accepted: false)])
        #expect(d.machine == before)
    }
}

/// docs/SPEC.md "filterScanList".
@Suite("filterScanList")
struct FilterScanListTests {
    static func respond(_ d: inout Driver, _ command: Command, _ networks: [HotspotNetwork]?) {
        d.step(.response(Response(helper: command.helper, command: command.id, result: .success, networkList: networks)))
    }

    static var annotated: (Driver) -> [AnnotatedNetwork]? {
        { d in
            for case .scanListAnnotated(let list) in d.last { return list }
            return nil
        }
    }

    @Test("filterScanList: each claimed network is annotated with that helper's display name")
    func annotation() {
        var d = Driver()
        d.step(.scanListShown([Fixture.coffee, Fixture.airport]))
        let commands = d.sent(.filterScanList)
        Self.respond(&d, commands[0], [Fixture.airport])
        Self.respond(&d, commands[1], nil)  // handles none: no list
        #expect(Self.annotated(d) == [
            AnnotatedNetwork(network: Fixture.coffee),
            AnnotatedNetwork(network: Fixture.airport, annotation: "Alpha", claimedBy: Fixture.a),
        ])
    }

    @Test("filterScanList: a secure network is annotated only when a password was set; that password is used to join")
    func securePassword() {
        var d = Driver()
        let open2 = HotspotNetwork(ssid: "Open2", bssid: "02:00:00:00:00:09")
        d.step(.scanListShown([Fixture.hotel, open2]))
        let commands = d.sent(.filterScanList)
        var noPassword = Fixture.hotel
        noPassword.password = nil
        var openWithPassword = open2
        openWithPassword.password = "ignored"
        Self.respond(&d, commands[0], [noPassword, openWithPassword])  // a: no password for the secure one
        #expect(d.last.irregularities == [.securedWithoutPassword(commands[0].id, ssid: "Hotel", bssid: Fixture.hotel.bssid, from: Fixture.a)])
        var withPassword = Fixture.hotel
        withPassword.password = "s3cret"
        Self.respond(&d, commands[1], [withPassword])
        #expect(Self.annotated(d) == [
            AnnotatedNetwork(network: Fixture.hotel, annotation: "Beta", claimedBy: Fixture.b, password: "s3cret"),
            AnnotatedNetwork(network: open2, annotation: "Alpha", claimedBy: Fixture.a),
        ])
    }

    @Test("filterScanList: a secure network claimed without a password (none or empty) is ignored and traced as irregular")
    func securedWithoutPasswordIsIrregular() {
        var d = Driver(helpers: [Fixture.a])
        d.step(.scanListShown([Fixture.hotel, Fixture.coffee]))
        let command = d.the(.filterScanList)
        var noPassword = Fixture.hotel
        noPassword.password = nil
        var emptyPassword = Fixture.hotel
        emptyPassword.password = ""
        Self.respond(&d, command, [noPassword, emptyPassword, Fixture.coffee])
        #expect(d.last.irregularities == [
            .securedWithoutPassword(command.id, ssid: "Hotel", bssid: Fixture.hotel.bssid, from: Fixture.a),
            .securedWithoutPassword(command.id, ssid: "Hotel", bssid: Fixture.hotel.bssid, from: Fixture.a),
        ])
        #expect(Self.annotated(d) == [
            AnnotatedNetwork(network: Fixture.hotel),
            AnnotatedNetwork(network: Fixture.coffee, annotation: "Alpha", claimedBy: Fixture.a),
        ])
        #expect(d.last.irregularities.first.map { "\($0)" } == "\(Fixture.a) claimed the secure network Hotel (\(Fixture.hotel.bssid)) in filterScanList command \(command.id) without a password: ignored")
    }

    @Test("filterScanList: where two helpers claim one network, the first answer annotates it")
    func firstClaimAnnotates() {
        var d = Driver()
        d.step(.scanListShown([Fixture.coffee]))
        let commands = d.sent(.filterScanList)
        Self.respond(&d, commands[1], [Fixture.coffee])  // b answers first
        Self.respond(&d, commands[0], [Fixture.coffee])
        #expect(Self.annotated(d) == [AnnotatedNetwork(network: Fixture.coffee, annotation: "Beta", claimedBy: Fixture.b)])
    }

    @Test("filterScanList: networks not in the presented list are ignored and reported; matched by ssid and bssid")
    func unlistedIgnored() {
        var d = Driver(helpers: [Fixture.a])
        d.step(.scanListShown([Fixture.coffee]))
        let command = d.the(.filterScanList)
        var otherBSSID = Fixture.coffee
        otherBSSID.bssid = "02:00:00:00:00:77"
        Self.respond(&d, command, [Fixture.airport, otherBSSID])
        #expect(d.last.irregularities == [
            .unlistedNetwork(command.id, ssid: "Airport", bssid: Fixture.airport.bssid, from: Fixture.a),
            .unlistedNetwork(command.id, ssid: "CoffeeShop", bssid: "02:00:00:00:00:77", from: Fixture.a),
        ])
        // The annotation cannot hide (or add) a network: the list shown is the list presented.
        #expect(Self.annotated(d) == [AnnotatedNetwork(network: Fixture.coffee)])
    }

    @Test("filterScanList: independent of the state machine")
    func independent() {
        var d = Driver()
        d.toAuthenticating()
        let auth = d.outstanding(Fixture.a)
        let before = d.state
        d.step(.scanListShown([Fixture.coffee]))
        #expect(d.last.allSatisfy { if case .send(let c) = $0 { c.type == .filterScanList } else { false } })
        #expect(d.state == before && d.machine.outstandingCommand(of: Fixture.a) == auth)
        let commands = d.sent(.filterScanList)
        Self.respond(&d, commands[0], [Fixture.coffee])
        Self.respond(&d, commands[1], [])
        #expect(d.state == before && d.last.transitions.isEmpty)
        // A state change does not withdraw a scan round.
        d.step(.scanListShown([Fixture.coffee]))
        let next = d.sent(.filterScanList)
        d.answer(Fixture.a, .success)
        #expect(d.state == .authenticated && !d.last.cancelled.contains(next[0].id))
        Self.respond(&d, next[0], [])
        #expect(d.last.rejections.isEmpty)
    }

    @Test("filterScanList: with no helper registered the list is shown as it is at once")
    func noHelpers() {
        var d = Driver(helpers: [])
        d.step(.scanListShown([Fixture.coffee]))
        #expect(d.last == [.scanListAnnotated([AnnotatedNetwork(network: Fixture.coffee)])])
    }

    @Test("filterScanList: a result other than success counts as no claim and is reported")
    func invalidResult() {
        var d = Driver(helpers: [Fixture.a])
        d.step(.scanListShown([Fixture.coffee]))
        let command = d.the(.filterScanList)
        d.step(.response(Response(helper: Fixture.a, command: command.id, result: .failure, networkList: [Fixture.coffee])))
        #expect(d.last.irregularities == [.invalidResult(command.id, .filterScanList, .failure, from: Fixture.a)])
        #expect(Self.annotated(d) == [AnnotatedNetwork(network: Fixture.coffee)])
    }
}

/// docs/SPEC.md "Cached sequence", "Connectivity" and "Registration".
@Suite("Cached sequence, connectivity, registration")
struct MiscRulesTests {
    @Test("Cached sequence: re-joining a network whose cache entry names a helper skips Evaluating")
    func cachedSkipsEvaluating() {
        var d = Driver()
        d.toAuthenticated()
        d.step(.disassociated)
        d.join()
        #expect(d.last.transitions == [.maintaining])
        #expect(d.sent(.evaluate).isEmpty)
        let maintain = d.the(.maintain)
        #expect(maintain.helper == Fixture.a && maintain.network?.didJustJoin == true)
        d.answer(maintain, .success)
        #expect(d.state == .authenticated && d.last.contains(.releaseIP))
        // The next maintain (from the timer) is not a join.
        d.step(.maintainTimerFired)
        #expect(d.the(.maintain).network?.didJustJoin == false)
    }

    @Test("Cached sequence: a cached helper that is not registered counts as no answer: Evaluating")
    func cachedHelperMissing() {
        var d = Driver(cache: [Fixture.coffee.identity: .helper(Fixture.c)])
        d.join()
        #expect(d.last.transitions == [.maintaining, .evaluating])
        #expect(d.last.irregularities.count == 1)
        #expect(d.sent(.maintain).isEmpty && d.sent(.evaluate).count == 2)
    }

    @Test("supportedNetworkInterfaces returns the current network with isChosenHelper true only for best_helper")
    func supportedNetworkInterfaces() {
        var d = Driver()
        #expect(d.machine.supportedNetworkInterfaces(for: Fixture.a).isEmpty)
        d.toAuthenticated()
        let forA = d.machine.supportedNetworkInterfaces(for: Fixture.a)
        let forB = d.machine.supportedNetworkInterfaces(for: Fixture.b)
        #expect(forA.count == 1 && forA.first?.ssid == "CoffeeShop" && forA.first?.isChosenHelper == true)
        #expect(forB.count == 1 && forB.first?.isChosenHelper == false)
    }

    @Test("Connectivity: until Authenticated, general traffic does not use the interface")
    func suppressedUntilAuthenticated() {
        var d = Driver()
        var released: [Bool] = []
        d.step(.associated(Fixture.coffee)); released.append(d.machine.ipReleased)
        d.step(.ipUp); released.append(d.machine.ipReleased)
        d.answer(Fixture.a, .success, confidence: .high); released.append(d.machine.ipReleased)
        d.answer(Fixture.a, .uiRequired); released.append(d.machine.ipReleased)
        d.step(.foreground(Fixture.a)); released.append(d.machine.ipReleased)
        d.answer(Fixture.a, .success); released.append(d.machine.ipReleased)
        #expect(released == [false, false, false, false, false, true])
    }

    @Test("Registration: a second registration is rejected and changes nothing")
    func secondRegistration() {
        var d = Driver()
        let before = d.machine
        d.step(.helperRegistered(Fixture.a, displayName: "Other"))
        #expect(d.last == [.rejected(.duplicateRegistration(Fixture.a))])
        #expect(d.machine == before && d.machine.displayName(of: Fixture.a) == "Alpha")
    }

    @Test("Registration: a display name longer than 15 characters is rejected", arguments: ["Sixteen chars!!!", "", "A very long helper name"])
    func longDisplayName(_ name: String) {
        var d = Driver(helpers: [])
        let before = d.machine
        d.step(.helperRegistered(Fixture.a, displayName: name))
        #expect(d.last == [.rejected(.invalidDisplayName(Fixture.a, name))])
        #expect(d.machine == before && !d.machine.isRegistered(Fixture.a))
    }

    @Test("Registration: a display name of exactly 15 characters is accepted")
    func fifteenCharacters() {
        var d = Driver(helpers: [])
        d.step(.helperRegistered(Fixture.a, displayName: "Fifteen chars!!"))
        #expect(d.last.isEmpty && d.machine.displayName(of: Fixture.a) == "Fifteen chars!!")
    }

    @Test("Registration: a helper that is not registered receives no command")
    func unregisteredGetsNothing() {
        var d = Driver(helpers: [Fixture.a])
        d.step(.scanListShown([Fixture.coffee]))
        #expect(d.sent.map(\.helper) == [Fixture.a])
        d.join()
        #expect(d.sent.map(\.helper) == [Fixture.a])
        // A helper that registers mid-evaluation takes part from the next one (decided).
        d.step(.helperRegistered(Fixture.b, displayName: "Beta"))
        #expect(d.sent.isEmpty)
        d.step(.helperGone(Fixture.a))
        #expect(d.state == .authenticated)
        #expect(d.machine.pending.isEmpty)
    }
}
