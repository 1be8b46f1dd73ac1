import HotspotCore
import HotspotProtocol
import HotspotSystem

/// The helper socket's protocol (docs/PROTOCOL.md, "Helper protocol"): register, responses, logoff,
/// supportedNetworkInterfaces, notify.
extension DaemonCore {
    func helperFrame(_ conn: Connection, _ payload: [UInt8]) {
        let message: HelperMessage
        do throws(ProtocolError) {
            let json = try JSON.parse(payload)
            if let lifecycle = try LifecycleMessage(json: json) {
                lifecycleFrame(conn, lifecycle, payload)
                return
            }
            message = try HelperMessage(json: json)
            if case .register = message {
                let r = try Registration(json: json)
                if r.role != .helper {
                    guard r.version == protocolVersion else {
                        throw ProtocolError(.unsupportedVersion, "protocol version \(r.version) is not supported (this daemon speaks \(protocolVersion))")
                    }
                    if let already = conn.helperID {
                        throw ProtocolError(.alreadyRegistered, "this connection already registered as \"\(already)\"")
                    }
                    registerProvider(conn, r, payload)
                    return
                }
                if apps[r.app] != nil {
                    throw ProtocolError(.undeclaredRole, "role: \"\(r.app)\" is an app declared in \(options.appsFile ?? "--apps"); its processes register as \"evaluationProvider\" or \"authenticationProvider\", got \"helper\"")
                }
                register(conn, r.app, r.displayName, r.version, payload)
                return
            }
        } catch {
            protocolError(conn, error, offending: payload)
            return
        }
        guard let helper = conn.helperID else {
            protocolError(conn, ProtocolError(.notRegistered, "send \"register\" before any other message"), offending: payload)
            return
        }
        switch message {
        case .register:
            break
        case .response(let id, let result, let network, let list):
            let now = clock.now()
            var f = TraceRecord.Response(helper: helper, command: Int(id), result: result.description, resultCode: Int(result.rawValue),
                                         commandType: nil, latency_us: nil, network: network.map(TraceNetwork.init),
                                         networkList: list.map { $0.map(TraceNetwork.init) })
            if let key = conn.provider, let o = outstanding[id], o.command.helper == key.app,
               ProviderRole.handling(o.command.type) != key.role
            {
                protocolError(conn, ProtocolError(.rejectedResponse, "command \(id) is a \(o.command.type.description) command, for app \"\(key.app)\"'s \(ProviderRole.handling(o.command.type).rawValue), not its \(key.role.rawValue)"), offending: payload)
                return
            }
            if let key = conn.provider { slots[key]?.sent.remove(id) }
            if let o = outstanding[id] {
                f.commandType = o.command.type.description
                f.latency_us = ((now - o.sentAt).milliseconds * 1000).rounded()
            }
            record(.response(f))
            let response = Response(helper: helper, command: id, result: result, network: network, networkList: list)
            respondingConnection = conn.provider == nil ? nil : conn
            handle(.response(response), source: .init(helper: helper))
            respondingConnection = nil
        case .logoff(let rid, let net):
            record(.logoffRequest(.init(helper: helper, network: TraceNetwork(net), via: "helper")))
            logoffReply = { [unowned self, conn] accepted in
                self.send(conn, DaemonMessage.logoffResult(requestID: rid, accepted: accepted).framed)
            }
            handle(.logoffRequested(helper, network: net.identity), source: .init(helper: helper))
            logoffReply = nil
        case .supportedNetworkInterfaces(let rid):
            send(conn, DaemonMessage.interfaces(requestID: rid, networks: machine.supportedNetworkInterfaces(for: helper)).framed)
        case .notify(let title, let body):
            let fields: [String: JSON] = ["helper": .string(helper), "title": .string(title), "body": .string(body)]
            notifications.append(.object(fields))
            if notifications.count > 16 { notifications.removeFirst() }
            record(.notification(.init(helper: helper, title: title, body: body)))
        case .report(let kind, let command, let message):
            helperReport(helper, app: conn.provider?.app, kind: kind, command: command, message: message)
        }
    }

    /// A `report` (what the SDK refused on the helper's side): traced as `helperReport`, answered with nothing,
    /// changing nothing. The refusal's kind is the record's `report` field (every record's `kind` is its own),
    /// with the command's type when the command is still outstanding, and the app when a provider reports.
    private func helperReport(_ helper: String, app: String?, kind: HelperReportKind, command: CommandID?, message: String) {
        record(.helperReport(.init(helper: helper, report: kind.rawValue, message: message, app: app, command: command.map { Int($0) },
                                   commandType: command.flatMap { outstanding[$0] }.map { $0.command.type.description })))
    }

    private func register(_ conn: Connection, _ identifier: String, _ displayName: String, _ version: Int, _ payload: [UInt8]) {
        guard version == protocolVersion else {
            protocolError(conn, ProtocolError(.unsupportedVersion, "protocol version \(version) is not supported (this daemon speaks \(protocolVersion))"), offending: payload)
            return
        }
        if let already = conn.helperID {
            protocolError(conn, ProtocolError(.alreadyRegistered, "this connection already registered as \"\(already)\""), offending: payload)
            record(.rejected(.init(.duplicateRegistration(already), message: nil)))
            return
        }
        guard !identifier.isEmpty, identifier.utf8.count <= 255 else {
            protocolError(conn, ProtocolError(.invalidField, "identifier: expected 1 to 255 bytes"), offending: payload)
            return
        }
        if let holder = helperConnections[identifier], holder !== conn, peerHasClosed(holder.id) {
            // The holder's peer closed before this registration came; its end of file just was not read yet.
            let partial = holder.decoder.bufferedCount
            close(holder, reason: partial > 0 ? "end of file inside a frame (\(partial) bytes buffered)" : "end of file")
        }
        if helperConnections[identifier] != nil {
            protocolError(conn, ProtocolError(.alreadyRegistered, "helper \"\(identifier)\" is already registered by another connection"), offending: payload)
            record(.rejected(.init(.duplicateRegistration(identifier), message: nil)))
            return
        }
        handle(.helperRegistered(identifier, displayName: displayName),
               source: .init(peer: conn.tracePeer, helper: identifier, displayName: displayName))
        guard machine.isRegistered(identifier) else {
            protocolError(conn, ProtocolError(.invalidDisplayName, "display name \"\(displayName)\" must be 1 to \(maximumDisplayNameLength) characters"), offending: payload)
            return
        }
        conn.helperID = identifier
        helperConnections[identifier] = conn
        send(conn, DaemonMessage.registered(identifier: identifier, version: protocolVersion).framed)
    }

    /// Sends a message to a helper unless its frame would exceed the helper frame limit (the helper would
    /// have to disconnect): then nothing is sent and an `error` record says why. Returns whether it was sent.
    @discardableResult
    func sendToHelper(_ conn: Connection, _ message: DaemonMessage, what: String) -> Bool {
        let payload = message.json.bytes
        guard payload.count <= maximumFrameLength else {
            // TRACE.md's `error` record: `message` only.
            record(.error(.init(message: "send \(what) to helper \(conn.helperID ?? "?"): frame of \(payload.count) bytes exceeds the helper frame limit of \(maximumFrameLength) bytes; not sent")))
            return false
        }
        send(conn, frame(payload))
        return true
    }
}
