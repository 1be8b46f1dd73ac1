import HotspotCore
import HotspotProtocol

/// One declared provider of one app and its process (docs/PROTOCOL.md, "Provider lifecycle").
final class ProviderSlot {
    enum State: String { case notRunning, launching, running, stopping }

    let key: ProviderKey
    let declaration: ProviderDeclaration
    var state = State.notRunning
    var connection: DaemonCore.Connection?
    var pid: Int32?
    var launchedAt: Duration?
    /// Commands waiting for the provider to start (or to be launched again after a stop), in order.
    var held: [CommandID] = []
    /// Commands sent to the running provider and not yet answered.
    var sent: Set<CommandID> = []
    /// A stop asked for before the provider started: sent once it has.
    var pendingStop: ProviderStopReason?
    var idleArmed = false
    var stopGraceArmed = false
    var killArmed = false

    init(key: ProviderKey, declaration: ProviderDeclaration) {
        self.key = key
        self.declaration = declaration
    }
}

/// Apps, their manager configuration, and their providers: routing by role, launch on demand, start, stop.
extension DaemonCore {
    // MARK: the manager configuration

    func manager(of app: String) -> ManagerConfiguration { managers[app] ?? .initial }

    /// At start: every declared app whose manager is enabled is a helper of the state machine.
    func registerEnabledApps() {
        for app in options.apps where manager(of: app.bundleIdentifier).isEnabled {
            handle(.helperRegistered(app.bundleIdentifier, displayName: app.displayName),
                   source: .init(via: "manager", app: app.bundleIdentifier))
        }
    }

    /// `setManager`: validates against the declaration, stores, persists; enabling registers the app with
    /// the state machine, disabling unregisters it and stops its providers (`configurationDisabled`).
    func setManager(_ app: String, _ config: ManagerConfiguration) throws(ProtocolError) {
        guard let declaration = apps[app] else { throw unknownApp(app) }
        if let e = config.evaluationProviderBundleIdentifier, e != declaration.evaluationProvider?.identifier {
            let declared = declaration.evaluationProvider.map { "\"\($0.identifier)\"" } ?? "none"
            throw ProtocolError(.invalidField, "evaluationProviderBundleIdentifier: \"\(e)\" is not the evaluation provider app \"\(app)\" declares (declared: \(declared))")
        }
        let was = manager(of: app)
        managers[app] = config
        record(.managerSet(.init(app: app, isEnabled: config.isEnabled, evaluatedSSIDs: config.evaluatedSSIDs,
                                 evaluationProviderBundleIdentifier: config.evaluationProviderBundleIdentifier)))
        persistDirty = true
        if config.isEnabled, !was.isEnabled {
            handle(.helperRegistered(app, displayName: declaration.displayName), source: .init(via: "manager", app: app))
        } else if !config.isEnabled, was.isEnabled {
            handle(.helperGone(app), source: .init(via: "manager", app: app))
            for slot in appSlots(app) { stopProvider(slot, .configurationDisabled) }
        } else {
            savePersistentState()
        }
    }

    func unknownApp(_ app: String) -> ProtocolError {
        ProtocolError(.unknownApp, "app: \"\(app)\" is not declared in the apps file \(options.appsFile ?? "(none: hotspotd runs without --apps)")")
    }

    func appSlots(_ app: String) -> [ProviderSlot] {
        [ProviderRole.evaluationProvider, .authenticationProvider].compactMap { slots[ProviderKey(app: app, role: $0)] }
    }

    var appsStatus: JSON {
        .array(options.apps.map { app in
            var o = manager(of: app.bundleIdentifier).fields
            o["bundleIdentifier"] = .string(app.bundleIdentifier)
            o["displayName"] = .string(app.displayName)
            o["providers"] = .array(appSlots(app.bundleIdentifier).map { slot in
                ["role": .string(slot.key.role.rawValue), "identifier": .string(slot.declaration.identifier),
                 "state": .string(slot.state.rawValue), "pid": slot.pid.map { .number(Double($0)) } ?? .null]
            })
            return .object(o)
        })
    }

    // MARK: routing

    /// A command the machine sent to an app without a legacy helper connection: answered at once for a
    /// pre-evaluated SSID, else given to the provider of its role (launched on demand).
    func routeToProvider(_ command: Command) {
        let app = command.helper
        let role = ProviderRole.handling(command.type)
        if command.type == .evaluate, let network = command.network, manager(of: app).evaluatedSSIDs.contains(where: { SSID($0) == network.rawSSID }) {
            record(.evaluatedSSID(.init(app: app, ssid: TraceSSID(network.rawSSID), command: Int(command.id))))
            var claimed = network
            claimed.confidence = .high
            deferredEvents.append((.response(Response(helper: app, command: command.id, result: .success, network: claimed)),
                                   .init(via: "evaluatedSSIDs", app: app)))
            return
        }
        guard let slot = slots[ProviderKey(app: app, role: role)] else {
            noAnswerNow([command.id], app: app, role: role, cause: "app \"\(app)\" declares no \(role.rawValue)")
            return
        }
        cancelIdle(slot)
        switch slot.state {
        case .running:
            if let conn = slot.connection {
                slot.sent.insert(command.id)
                sendToHelper(conn, .command(command), what: "\(command.type.description) command \(command.id)")
            }
        case .launching, .stopping:
            slot.held.append(command.id)
        case .notRunning:
            slot.held.append(command.id)
            launch(slot)
        }
    }

    /// Commands that count as no answer at once (their provider will not answer), traced with the cause.
    func noAnswerNow(_ ids: [CommandID], app: String, role: ProviderRole, cause: String) {
        let live = ids.filter { outstanding[$0] != nil }
        guard !live.isEmpty else { return }
        record(.providerNoAnswer(.init(app: app, role: role.rawValue, commands: live.map { Int($0) }, cause: cause)))
        for id in live {
            forget(id)
            deferredEvents.append((.deadlinePassed(id), .init(via: "provider", app: app)))
        }
        // Outside `handle` (a connection or process event): handle them now.
        if !handling { drainDeferred() }
    }

    var handling: Bool { handlingDepth > 0 }

    func drainDeferred() {
        while handlingDepth == 0, !deferredEvents.isEmpty {
            let (next, source) = deferredEvents.removeFirst()
            handle(next, source: source)
        }
    }

    // MARK: launch, start, stop

    func launch(_ slot: ProviderSlot) {
        let key = slot.key
        var argv = slot.declaration.command
        if key.role == .evaluationProvider, let sandbox = options.evaluationSandbox { argv = sandbox + argv }
        slot.state = .launching
        slot.launchedAt = clock.now()
        slot.pendingStop = nil
        armIdle(slot)
        emit(.launchProvider(ProviderLaunch(key: key, argv: argv, environment: [
            "HOTSPOT_HELPER_SOCKET": options.helperSocket, "HOTSPOT_HELPER_IDENTIFIER": slot.declaration.identifier,
            "HOTSPOT_PROVIDER_ROLE": key.role.rawValue, "HOTSPOT_APP": key.app,
        ])))
    }

    /// The shell spawned a provider.
    public func providerSpawned(_ key: ProviderKey, pid: Int32) -> [DaemonAction] {
        if let slot = slots[key] {
            slot.pid = pid
            record(.providerLaunched(.init(app: key.app, role: key.role.rawValue, pid: Int(pid), identifier: slot.declaration.identifier)))
        }
        return take()
    }

    /// The shell could not spawn a provider (`reason` names the call and the error).
    public func providerSpawnFailed(_ key: ProviderKey, reason: String) -> [DaemonAction] {
        if let slot = slots[key] {
            record(.providerExited(.init(app: key.app, role: key.role.rawValue, pid: nil, status: nil, signal: nil, error: reason)))
            slot.state = .notRunning
            cancelIdle(slot)
            let held = slot.held
            slot.held = []
            noAnswerNow(held, app: key.app, role: key.role, cause: "launch failed: \(reason)")
        }
        return take()
    }

    /// The connection of provider process `pid`, when it has one: the shell reads what the process wrote before it
    /// exited (its answer to `stop`) ahead of `providerExited`, which closes the connection.
    public func providerConnectionID(pid: Int32) -> ConnectionID? {
        slots.values.first { $0.pid == pid }?.connection?.id
    }

    /// A provider process ended (`status`: its exit status; `signal`: the signal that killed it).
    public func providerExited(pid: Int32, status: Int32?, signal: Int32?) -> [DaemonAction] {
        guard let slot = slots.values.first(where: { $0.pid == pid }) else { return take() }
        let key = slot.key
        slot.pid = nil
        record(.providerExited(.init(app: key.app, role: key.role.rawValue, pid: Int(pid), status: status.map { Int($0) },
                                     signal: signal.map { Int($0) })))
        if slot.killArmed {
            slot.killArmed = false
            emit(.cancelTimer(.providerKill(key)))
        }
        if let conn = slot.connection {
            // Its socket ends too; end the connection now so its commands count as no answer at once.
            close(conn, reason: "provider process \(pid) exited")
        } else {
            providerGone(slot, cause: "provider process \(pid) exited before it started")
        }
        return take()
    }

    /// A provider's connection ended.
    func providerDisconnected(_ key: ProviderKey, _ conn: Connection, reason: String, notify: Bool) {
        guard let slot = slots[key], slot.connection === conn else { return }
        slot.connection = nil
        if slot.stopGraceArmed {
            slot.stopGraceArmed = false
            emit(.cancelTimer(.providerStopGrace(key)))
        }
        if slot.pid != nil {
            slot.killArmed = true
            emit(.armTimer(.providerKill(key), after: options.providerKillGrace))
        }
        guard notify else { return }
        providerGone(slot, cause: "provider disconnected: \(reason)")
    }

    /// The provider is gone: what it had counts as no answer; what waited for a stop to end is launched
    /// again once the old process has exited.
    private func providerGone(_ slot: ProviderSlot, cause: String) {
        let wasStopping = slot.state == .stopping
        cancelIdle(slot)
        let sent = slot.sent.sorted()
        slot.sent = []
        noAnswerNow(sent, app: slot.key.app, role: slot.key.role, cause: cause)
        let held = slot.held.filter { outstanding[$0] != nil }
        slot.held = []
        if wasStopping, slot.pid != nil {
            slot.held = held
            return
        }
        slot.state = .notRunning
        if wasStopping, !held.isEmpty {
            slot.held = held
            launch(slot)
        } else {
            noAnswerNow(held, app: slot.key.app, role: slot.key.role, cause: cause)
        }
    }

    /// `register` with a provider role.
    func registerProvider(_ conn: Connection, _ r: Registration, _ payload: [UInt8]) {
        guard let app = apps[r.app] else {
            protocolError(conn, unknownApp(r.app), offending: payload)
            return
        }
        guard let declared = app.provider(r.role) else {
            protocolError(conn, ProtocolError(.undeclaredRole, "role: app \"\(r.app)\" declares no \(r.role.rawValue) (declared: "
                + ([app.evaluationProvider.map { _ in "evaluationProvider" }, app.authenticationProvider.map { _ in "authenticationProvider" }]
                    .compactMap { $0 }.joined(separator: ", ")) + "), got \"\(r.role.rawValue)\""), offending: payload)
            return
        }
        guard declared.identifier == r.identifier else {
            protocolError(conn, ProtocolError(.undeclaredRole, "identifier: app \"\(r.app)\" declares its \(r.role.rawValue) as \"\(declared.identifier)\", got \"\(r.identifier)\""), offending: payload)
            return
        }
        let key = ProviderKey(app: r.app, role: r.role)
        guard let slot = slots[key] else { return }
        if slot.connection != nil {
            protocolError(conn, ProtocolError(.alreadyRegistered, "app \"\(r.app)\" already has a connected \(r.role.rawValue) (\"\(r.identifier)\")"), offending: payload)
            record(.rejected(.init(reason: "duplicateRegistration", helper: r.app, role: r.role.rawValue)))
            return
        }
        conn.helperID = r.app
        conn.provider = key
        slot.connection = conn
        if slot.state == .notRunning {
            // Started by someone else than hotspotd: treated as launched now.
            slot.state = .launching
            slot.launchedAt = clock.now()
            armIdle(slot)
        }
        record(.providerRegistered(.init(app: r.app, role: r.role.rawValue, identifier: r.identifier, peer: conn.tracePeer)))
        send(conn, DaemonMessage.registered(identifier: r.identifier, version: protocolVersion).framed)
        send(conn, LifecycleMessage.start.framed)
    }

    /// `started` or `stopped` from a provider.
    func lifecycleFrame(_ conn: Connection, _ message: LifecycleMessage, _ payload: [UInt8]) {
        guard let key = conn.provider, let slot = slots[key], slot.connection === conn else {
            protocolError(conn, ProtocolError(.invalidField, "type: only a registered provider sends \"started\" or \"stopped\""), offending: payload)
            return
        }
        switch message {
        case .started(let ok):
            guard slot.state == .launching else {
                protocolError(conn, ProtocolError(.invalidField, "type: \"started\" when the provider is \(slot.state.rawValue), not launching"), offending: payload)
                return
            }
            let latency = slot.launchedAt.map { (clock.now() - $0).milliseconds } ?? 0
            record(.providerStarted(.init(app: key.app, role: key.role.rawValue, ok: ok,
                                          latencyMs: (latency * 1000).rounded() / 1000)))
            let held = slot.held.filter { outstanding[$0] != nil }
            slot.held = []
            guard ok else {
                stopProvider(slot, .providerFailed, force: true)
                noAnswerNow(held, app: key.app, role: key.role, cause: "start() returned false")
                return
            }
            slot.state = .running
            if let reason = slot.pendingStop, held.isEmpty {
                stopProvider(slot, reason)
                return
            }
            slot.pendingStop = nil
            for id in held {
                guard let o = outstanding[id] else { continue }
                slot.sent.insert(id)
                sendToHelper(conn, .command(o.command), what: "\(o.command.type.description) command \(id)")
            }
            refreshIdle(slot)
        case .stopped:
            record(.providerStoppedAck(.init(app: key.app, role: key.role.rawValue)))
            close(conn, reason: "provider stopped")
        case .start, .stop:
            protocolError(conn, ProtocolError(.unknownType, "type: \"start\" and \"stop\" go from hotspotd to a provider"), offending: payload)
        }
    }

    /// Sends `stop` (never a command after it); a provider not started yet is stopped once it has.
    func stopProvider(_ slot: ProviderSlot, _ reason: ProviderStopReason, force: Bool = false) {
        switch slot.state {
        case .notRunning, .stopping:
            return
        case .launching where !force:
            slot.pendingStop = reason
            return
        case .launching, .running:
            break
        }
        let key = slot.key
        slot.state = .stopping
        slot.pendingStop = nil
        cancelIdle(slot)
        record(.providerStopped(.init(app: key.app, role: key.role.rawValue, reason: reason.rawValue)))
        if let conn = slot.connection {
            send(conn, LifecycleMessage.stop(reason).framed)
            slot.stopGraceArmed = true
            emit(.armTimer(.providerStopGrace(key), after: options.providerStopGrace))
        } else if let pid = slot.pid {
            emit(.killProcess(pid))
        }
    }

    // MARK: idle

    func armIdle(_ slot: ProviderSlot) {
        guard !slot.idleArmed else { return }
        slot.idleArmed = true
        emit(.armTimer(.providerIdle(slot.key), after: options.timing.scaled(options.providerIdleTimeout)))
    }

    func cancelIdle(_ slot: ProviderSlot) {
        guard slot.idleArmed else { return }
        slot.idleArmed = false
        emit(.cancelTimer(.providerIdle(slot.key)))
    }

    /// A running provider with nothing outstanding has its idle timer armed; one with work has it cancelled.
    func refreshIdle(_ slot: ProviderSlot) {
        guard slot.state == .running else { return }
        slot.sent = slot.sent.filter { outstanding[$0] != nil }
        if slot.sent.isEmpty { armIdle(slot) } else { cancelIdle(slot) }
    }

    func providerTimerFired(_ timer: DaemonTimer, _ key: ProviderKey) {
        guard let slot = slots[key] else { return }
        switch timer {
        case .providerIdle:
            guard slot.idleArmed else { return }
            slot.idleArmed = false
            record(.timer(.init(timer: "providerIdle", app: key.app, role: key.role.rawValue)))
            if slot.state == .launching, slot.held.allSatisfy({ outstanding[$0] == nil }) {
                // Never started and nothing waits for it.
                stopProvider(slot, .idleTimeout, force: true)
            } else if slot.state == .running, slot.sent.allSatisfy({ outstanding[$0] == nil }) {
                stopProvider(slot, .idleTimeout)
            }
        case .providerStopGrace:
            guard slot.stopGraceArmed else { return }
            slot.stopGraceArmed = false
            if let conn = slot.connection { close(conn, reason: "provider did not answer stop within \(options.providerStopGrace)") }
        case .providerKill:
            guard slot.killArmed else { return }
            slot.killArmed = false
            if let pid = slot.pid {
                record(.providerKilled(.init(app: key.app, role: key.role.rawValue, pid: Int(pid))))
                emit(.killProcess(pid))
            }
        default:
            return
        }
    }

    /// After each event: idle timers follow the work; a lost network stops every provider.
    func providersAfter(_ event: Event) {
        guard !slots.isEmpty else { return }
        if case .disassociated = event {
            for slot in slots.values.sorted(by: { ($0.key.app, $0.key.role) < ($1.key.app, $1.key.role) }) {
                stopProvider(slot, .noNetworkAvailable)
            }
        }
        for slot in slots.values where slot.state == .running { refreshIdle(slot) }
    }
}
