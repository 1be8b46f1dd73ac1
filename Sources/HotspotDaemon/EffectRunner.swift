import HotspotCore
import HotspotProtocol

/// Feeds events to `HotspotMachine` and turns its effects into trace records, frames, timers and network actions.
extension DaemonCore {
    /// Feeds one event to the machine, traces it and carries out its effects in order.
    func handle(_ event: Event, source: TraceRecord.EventSource) {
        handlingDepth += 1
        record(.event(.init(event: event.traceName, detail: event.traceDetail, origin: source)))
        effects.removeAll(keepingCapacity: true)
        machine.handle(event, into: &effects)
        let batch = effects
        var rejectedResponse = false
        for effect in batch {
            if case .rejected = effect { rejectedResponse = true }
            perform(effect)
        }
        if case .response(let r) = event, !rejectedResponse, let o = outstanding.removeValue(forKey: r.command) {
            if o.command.deadline != nil { emit(.cancelTimer(.deadline(r.command))) }
        }
        providersAfter(event)
        savePersistentState()
        handlingDepth -= 1
        // What hotspotd answered itself while handling this event is handled after it, in order.
        if handlingDepth == 0 { drainDeferred() }
    }

    func forget(_ id: CommandID) {
        if let o = outstanding.removeValue(forKey: id), o.command.deadline != nil { emit(.cancelTimer(.deadline(id))) }
    }

    private func perform(_ effect: Effect) {
        let iface = options.interface
        switch effect {
        case .transition(let from, let to):
            record(.transition(.init(from: from.rawValue, to: to.rawValue, bestHelper: machine.bestHelper)))
        case .send(let command):
            if let d = command.deadline { emit(.armTimer(.deadline(command.id), after: d)) }
            outstanding[command.id] = Outstanding(sentAt: clock.now(), command: command)
            record(.command(command.traceRecord))
            if let conn = helperConnections[command.helper] {
                sendToHelper(conn, .command(command), what: "\(command.type.description) command \(command.id)")
            } else if apps[command.helper] != nil {
                routeToProvider(command)
            }
        case .cancel(let id, let helper):
            let type = outstanding[id]?.command.type
            forget(id)
            record(.cancel(.init(command: Int(id), helper: helper)))
            if let conn = helperConnections[helper] {
                send(conn, DaemonMessage.cancel(id).framed)
            } else if let type, let slot = slots[ProviderKey(app: helper, role: .handling(type))], slot.state == .running,
                      let conn = slot.connection, slot.sent.remove(id) != nil
            {
                send(conn, DaemonMessage.cancel(id).framed)
            }
        case .armMaintainTimer(let d):
            record(.maintainTimer(.init(action: "arm", after_ms: d.milliseconds)))
            maintainTimerArmed = true
            emit(.armTimer(.maintain, after: d))
        case .cancelMaintainTimer:
            if maintainTimerArmed {
                maintainTimerArmed = false
                emit(.cancelTimer(.maintain))
            }
            record(.maintainTimer(.init(action: "cancel")))
        case .suppressIP:
            record(.network(.init(action: "suppressIP", interface: iface)))
            emit(.network(.suppressIP(interface: iface, network: machine.association?.identity)))
        case .releaseIP:
            record(.network(.init(action: "releaseIP", interface: iface)))
            emit(.network(.releaseIP(interface: iface, network: machine.association?.identity)))
        case .disassociate:
            record(.network(.init(action: "disassociate", interface: iface)))
            emit(.network(.disassociate(interface: iface, network: nil)))
        case .disableAutoJoin(let n):
            persistDirty = true
            record(.autoJoin(.init(action: "disable", network: TraceNetwork(n))))
            emit(.network(.setAutoJoin(false, network: n, interface: iface)))
        case .enableAutoJoin(let n):
            persistDirty = true
            record(.autoJoin(.init(action: "enable", network: TraceNetwork(n))))
            emit(.network(.setAutoJoin(true, network: n, interface: iface)))
        case .cache(let n, let entry):
            persistDirty = true
            switch entry {
            case .helper(let h): record(.cache(.init(action: "set", network: TraceNetwork(n), helper: h)))
            case .notCaptive: record(.cache(.init(action: "set", network: TraceNetwork(n), notCaptive: true)))
            }
        case .uncache(let n):
            persistDirty = true
            record(.cache(.init(action: "remove", network: TraceNetwork(n))))
        case .cacheEvicted(let n, let limit):
            persistDirty = true
            record(.cache(.init(action: "evict", network: TraceNetwork(n), limit: limit, reason: "least recently used; the cache is full")))
        case .rejected(let r):
            record(.rejected(.init(r, message: r.description)))
            // A provider's connection is not the app's helper connection: the error goes to the sender.
            if let conn = helperConnections[r.helper] ?? respondingConnection {
                let code: ProtocolError.Code
                switch r {
                case .duplicateRegistration: code = .alreadyRegistered
                case .invalidDisplayName: code = .invalidDisplayName
                case .notRegistered: code = .notRegistered
                default: code = .rejectedResponse
                }
                send(conn, DaemonMessage.error(ProtocolError(code, r.description), offending: nil).framed)
            }
        case .irregular(let i):
            if case .noAnswer(let id, _, _) = i { forget(id) }
            record(.irregular(.init(i, message: i.description)))
        case .logoffAnswer(let helper, let accepted):
            record(.logoffAnswer(.init(helper: helper, accepted: accepted)))
            logoffReply?(accepted)
        case .scanListAnnotated(let list):
            lastScanList = list
            record(.scanList(.init(networks: list.map(TraceScanListEntry.init))))
        }
    }
}
