import HotspotCore
import Testing

/// docs/SPEC.md "Commands and their deadlines": one test per row, then the rules under the table.
@Suite("Commands and their deadlines")
struct CommandsTableTests {
    // MARK: the rows

    @Test("filterScanList: sent to every helper each time the scan list is shown, 45 s, success with or without a list")
    func filterScanListRow() {
        var d = Driver(helpers: [Fixture.a, Fixture.b, Fixture.c])
        let list = [Fixture.coffee, Fixture.airport]
        d.step(.scanListShown(list))
        let first = d.sent(.filterScanList)
        #expect(Set(first.map(\.helper)) == [Fixture.a, Fixture.b, Fixture.c])
        #expect(first.allSatisfy { $0.deadline == .seconds(45) && $0.networkList == list })
        #expect(Timing.standard.scanListRefresh == .seconds(5))
        // Shown again (the 5 s refresh while shown): sent again to every helper.
        d.step(.scanListShown(list))
        #expect(Set(d.sent(.filterScanList).map(\.helper)) == [Fixture.a, Fixture.b, Fixture.c])
        // success with a list, success without one: both valid (no irregularity).
        d.step(.response(Response(helper: Fixture.a, command: first[0].id, result: .success, networkList: [Fixture.coffee])))
        #expect(d.last.irregularities.isEmpty && d.last.rejections.isEmpty)
        d.step(.response(Response(helper: Fixture.b, command: first[1].id, result: .success)))
        #expect(d.last.irregularities.isEmpty && d.last.rejections.isEmpty)
        #expect(d.state == .inactive)
    }

    @Test("evaluate: sent to every helper not in exclude_list, 45 s, success with network and confidence")
    func evaluateRow() {
        var d = Driver(helpers: [Fixture.a, Fixture.b, Fixture.c])
        d.toAuthenticating()  // a claimed with high
        d.answer(Fixture.a, .unsupportedNetwork)  // a excluded
        #expect(d.state == .evaluating)
        let evaluates = d.sent(.evaluate)
        #expect(Set(evaluates.map(\.helper)) == [Fixture.b, Fixture.c])
        #expect(evaluates.allSatisfy { $0.deadline == .seconds(45) && $0.network?.ssid == Fixture.coffee.ssid })
        #expect(evaluates.allSatisfy { $0.network?.isChosenHelper == false })
        d.answer(Fixture.b, .success, confidence: .low)
        #expect(d.last.irregularities.isEmpty)
        d.answer(Fixture.c, .success, confidence: .none)
        #expect(d.state == .authenticating)
        #expect(d.machine.bestHelper == Fixture.b)
    }

    @Test("authenticate: sent to best_helper, 45 s, success uiRequired unsupportedNetwork temporaryFailure failure")
    func authenticateRow() {
        var d = Driver()
        d.toEvaluating()
        d.answer(Fixture.b, .success, confidence: .high)
        let command = d.the(.authenticate)
        #expect(command.helper == Fixture.b && command.deadline == .seconds(45))
        #expect(command.network?.isChosenHelper == true)
        #expect(CommandType.authenticate.validResults == [.success, .uiRequired, .unsupportedNetwork, .temporaryFailure, .failure])
    }

    @Test("presentUI: sent to best_helper once it is in the foreground, no deadline, success unsupportedNetwork temporaryFailure failure")
    func presentUIRow() {
        var d = Driver()
        d.toPresentingUI()
        #expect(d.sent(.presentUI).isEmpty)
        d.step(.foreground(Fixture.b))  // not best_helper
        #expect(d.sent(.presentUI).isEmpty)
        d.step(.foreground(Fixture.a))
        let command = d.the(.presentUI)
        #expect(command.helper == Fixture.a && command.deadline == nil)
        // Once: coming to the foreground again sends nothing more.
        d.step(.foreground(nil))
        d.step(.foreground(Fixture.a))
        #expect(d.sent(.presentUI).isEmpty)
        #expect(CommandType.presentUI.validResults == [.success, .unsupportedNetwork, .temporaryFailure, .failure])
    }

    @Test("maintain: sent to best_helper, 45 s, success authenticationRequired failure temporaryFailure")
    func maintainRow() {
        var d = Driver()
        d.toMaintaining()
        let command = d.the(.maintain)
        #expect(command.helper == Fixture.a && command.deadline == .seconds(45))
        #expect(command.network?.isChosenHelper == true)
        #expect(CommandType.maintain.validResults == [.success, .authenticationRequired, .failure, .temporaryFailure])
    }

    @Test("logoff: sent to best_helper after it called logoff(network), 45 s, success failure")
    func logoffRow() {
        var d = Driver()
        d.toLoggingOff()
        let command = d.the(.logoff)
        #expect(command.helper == Fixture.a && command.deadline == .seconds(45))
        #expect(CommandType.logoff.validResults == [.success, .failure])
    }

    // MARK: valid results

    /// docs/SPEC.md's "valid results" column, written out again here so the table in code is checked against it.
    static let specValid: [CommandType: Set<HelperResult>] = [
        .filterScanList: [.success],
        .evaluate: [.success],
        .authenticate: [.success, .uiRequired, .unsupportedNetwork, .temporaryFailure, .failure],
        .presentUI: [.success, .unsupportedNetwork, .temporaryFailure, .failure],
        .maintain: [.success, .authenticationRequired, .failure, .temporaryFailure],
        .logoff: [.success, .failure],
    ]

    @Test("valid results of each command are docs/SPEC.md's", arguments: CommandType.allCases)
    func validResults(_ type: CommandType) {
        let expected = Self.specValid[type] ?? []
        #expect(Set(type.validResults) == expected)
        for result in HelperResult.allCases {
            #expect(type.accepts(result) == expected.contains(result), "\(type) \(result)")
        }
    }

    @Test("raw values are Apple's")
    func rawValues() {
        #expect(CommandType.allCases.map(\.rawValue) == Array(0...6))
        #expect(CommandType.allCases.map(\.description) == ["none", "filterScanList", "evaluate", "authenticate", "presentUI", "maintain", "logoff"])
        #expect(HelperResult.allCases.map(\.description) == [
            "success", "failure", "uiRequired", "commandNotRecognized", "authenticationRequired", "unsupportedNetwork", "temporaryFailure",
        ])
        #expect(HelperResult.allCases.map(\.rawValue) == Array(0...6))
        #expect(Confidence.allCases.map(\.rawValue) == [0, 1, 2])
        #expect(CommandType(name: "presentUI") == .presentUI && HelperResult(name: "uiRequired") == .uiRequired)
        #expect(CommandType(name: "bogus") == nil)
    }

    // MARK: the rules under the table

    @Test("no response by the deadline counts as failure", arguments: [CommandType.authenticate, .presentUI, .maintain, .logoff, .evaluate])
    func deadlineCountsAsFailure(_ type: CommandType) {
        var d = Driver()
        let command: Command
        switch type {
        case .evaluate:
            d.toEvaluating()
            // a answers low, b never answers: at b's deadline, a (low) wins; b counted as none.
            d.answer(Fixture.a, .success, confidence: .low)
            command = d.outstanding(Fixture.b)
        case .presentUI:
            d.toPresentingUISent()
            command = d.outstanding(Fixture.a)
        case .authenticate: d.toAuthenticating(); command = d.outstanding(Fixture.a)
        case .maintain: d.toMaintaining(); command = d.outstanding(Fixture.a)
        default: d.toLoggingOff(); command = d.outstanding(Fixture.a)
        }
        #expect(command.type == type)
        d.step(.deadlinePassed(command.id))
        #expect(d.last.irregularities.contains(.noAnswer(command.id, type, from: command.helper)))
        switch type {
        case .evaluate:
            #expect(d.state == .authenticating && d.machine.bestHelper == Fixture.a)
        case .authenticate, .presentUI:
            #expect(d.last.transitions == [.failure, .inactive])
            #expect(d.last.contains(.disableAutoJoin(Fixture.coffee.identity)))
        case .maintain:
            #expect(d.state == .evaluating)
        default:
            #expect(d.state == .inactive && d.last.contains(.disassociate))
        }
    }

    @Test("filterScanList with no answer by the deadline: the round ends without that helper")
    func filterScanListDeadline() {
        var d = Driver()
        d.step(.scanListShown([Fixture.coffee]))
        let commands = d.sent(.filterScanList)
        d.step(.response(Response(helper: Fixture.a, command: commands[0].id, result: .success, networkList: [Fixture.coffee])))
        #expect(!d.last.contains { if case .scanListAnnotated = $0 { true } else { false } })
        d.step(.deadlinePassed(commands[1].id))
        #expect(d.last.irregularities == [.noAnswer(commands[1].id, .filterScanList, from: Fixture.b)])
        #expect(d.last.contains(.scanListAnnotated([
            AnnotatedNetwork(network: Fixture.coffee, annotation: "Alpha", claimedBy: Fixture.a),
        ])))
    }

    @Test("a result not valid for the command counts as failure and is reported",
          arguments: [(CommandType.authenticate, HelperResult.authenticationRequired), (.authenticate, .commandNotRecognized),
                      (.presentUI, .uiRequired), (.maintain, .unsupportedNetwork), (.maintain, .uiRequired),
                      (.logoff, .temporaryFailure), (.evaluate, .failure), (.evaluate, .uiRequired)])
    func invalidResult(_ type: CommandType, _ result: HelperResult) {
        var d = Driver()
        switch type {
        case .authenticate: d.toAuthenticating()
        case .presentUI: d.toPresentingUISent()
        case .maintain: d.toMaintaining()
        case .logoff: d.toLoggingOff()
        default: d.toEvaluating()
        }
        let helper = type == .evaluate ? Fixture.b : Fixture.a
        let command = d.outstanding(helper)
        // evaluate: b claims high but with an invalid result: counted as none.
        d.answer(command, result, confidence: .high)
        #expect(d.last.irregularities == [.invalidResult(command.id, type, result, from: helper)])
        switch type {
        case .authenticate, .presentUI:
            #expect(d.last.transitions == [.failure, .inactive])
            #expect(d.last.contains(.disableAutoJoin(Fixture.coffee.identity)))
        case .maintain: #expect(d.state == .evaluating)
        case .logoff: #expect(d.state == .inactive)
        default:
            #expect(d.state == .evaluating && d.machine.bestHelper == nil)
        }
    }

    @Test("one response per command: a second delivery is rejected and changes nothing")
    func duplicateResponse() {
        var d = Driver()
        d.toEvaluating()
        let command = d.outstanding(Fixture.a)
        d.answer(command, .success, confidence: .low)
        let before = d.machine
        d.answer(command, .success, confidence: .high)
        #expect(d.last == [.rejected(.duplicateResponse(command.id, from: Fixture.a))])
        #expect(d.machine == before)
    }

    @Test("a response to a command never sent is rejected and changes nothing")
    func neverSent() {
        var d = Driver()
        d.toAuthenticating()
        let before = d.machine
        d.step(.response(Response(helper: Fixture.a, command: 9999, result: .success)))
        #expect(d.last == [.rejected(.unknownCommand(9999, from: Fixture.a))])
        #expect(d.machine == before)
    }

    @Test("a response to a command sent to another helper is rejected and changes nothing")
    func notYourCommand() {
        var d = Driver()
        d.toAuthenticating()
        let command = d.outstanding(Fixture.a)
        let before = d.machine
        d.step(.response(Response(helper: Fixture.b, command: command.id, result: .success)))
        #expect(d.last == [.rejected(.notYourCommand(command.id, from: Fixture.b, sentTo: Fixture.a))])
        #expect(d.machine == before)
    }

    @Test("a response past its deadline is rejected and changes nothing")
    func lateResponse() {
        var d = Driver()
        d.toEvaluating()
        let command = d.outstanding(Fixture.b)
        d.answer(Fixture.a, .success, confidence: .low)
        d.step(.deadlinePassed(command.id))
        #expect(d.state == .authenticating)
        let before = d.machine
        d.answer(command, .success, confidence: .high)
        #expect(d.last == [.rejected(.lateResponse(command.id, from: Fixture.b))])
        #expect(d.machine == before)
    }

    @Test("a response to a withdrawn command is rejected and changes nothing")
    func withdrawnResponse() {
        var d = Driver()
        d.toEvaluating()
        let b = d.outstanding(Fixture.b)
        d.answer(Fixture.a, .success, confidence: .high)
        #expect(d.last.cancelled == [b.id])
        let before = d.machine
        d.answer(b, .success, confidence: .high)
        #expect(d.last == [.rejected(.withdrawnCommand(b.id, from: Fixture.b))])
        #expect(d.machine == before)
    }

    @Test("a response from a helper that is not registered is rejected and changes nothing")
    func unregisteredResponse() {
        var d = Driver()
        d.toAuthenticating()
        let command = d.outstanding(Fixture.a)
        let before = d.machine
        d.step(.response(Response(helper: "com.example.stranger", command: command.id, result: .success)))
        #expect(d.last == [.rejected(.notRegistered("com.example.stranger"))])
        #expect(d.machine == before)
    }

    @Test("a stale deadline changes nothing")
    func staleDeadline() {
        var d = Driver()
        d.toAuthenticating()
        let command = d.outstanding(Fixture.a)
        d.answer(command, .success)
        let before = d.machine
        d.step(.deadlinePassed(command.id))
        #expect(d.last.isEmpty)
        #expect(d.machine == before)
    }

    @Test("every deadline is configurable and scaled")
    func timingConfigurable() {
        let timing = Timing(authenticateDeadline: .seconds(10), presentUIDeadline: .seconds(600), maintainInterval: .seconds(60), scale: 0.001)
        #expect(timing.deadline(for: .authenticate) == .milliseconds(10))
        #expect(timing.deadline(for: .evaluate) == .milliseconds(45))
        #expect(timing.deadline(for: .presentUI) == .milliseconds(600))
        #expect(timing.deadline(for: .none) == nil)
        #expect(timing.scaledMaintainInterval == .milliseconds(60))
        #expect(timing.scaledScanListRefresh == .milliseconds(5))
        #expect(Timing.standard.deadline(for: .presentUI) == nil)
        #expect(Timing.standard.maintainInterval == .seconds(300))
        var d = Driver(timing: timing)
        d.toEvaluating()
        #expect(d.sent(.evaluate).allSatisfy { $0.deadline == .milliseconds(45) })
        d.answer(Fixture.a, .success, confidence: .high)
        #expect(d.the(.authenticate).deadline == .milliseconds(10))
        d.answer(Fixture.a, .success)
        #expect(d.last.contains(.armMaintainTimer(.milliseconds(60))))
    }
}
