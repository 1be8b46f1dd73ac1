import HotspotCore
import HotspotProtocol
import HotspotSystem

/// The control socket's protocol (docs/PROTOCOL.md, "Control protocol"): the lab's and the user's requests.
extension DaemonCore {
    func controlFrame(_ conn: Connection, _ payload: [UInt8]) {
        let json: JSON
        let request: ControlRequest
        do {
            json = try JSON.parse(payload)
            request = try ControlRequest(json: json)
        } catch {
            protocolError(conn, error, offending: payload)
            return
        }
        let rid = json["requestID"]
        func reply(_ j: JSON) { sendControlReply(conn, j, requestID: rid) }
        let source = TraceRecord.EventSource(via: "control", peer: conn.tracePeer)
        switch request {
        case .associate(let n):
            if let problem = Self.ssidProblem(n.rawSSID, hexForm: json["network"]?["ssid_hex"] != nil) {
                let e = ProtocolError(.invalidField, "associate: network.ssid \(problem)")
                record(.error(.init(message: e.message, via: "control")))
                reply(ControlReply.error(e, requestID: rid))
                return
            }
            handle(.associated(n), source: source)
            reply(ControlReply.ok(requestID: rid))
        case .disassociate:
            handle(.disassociated, source: source)
            reply(ControlReply.ok(requestID: rid))
        case .signal(let strength):
            handle(.signalChanged(strength), source: source)
            reply(ControlReply.ok(requestID: rid))
        case .ipUp:
            handle(.ipUp, source: source)
            reply(ControlReply.ok(requestID: rid))
        case .ipDown:
            handle(.ipDown, source: source)
            reply(ControlReply.ok(requestID: rid))
        case .showScanList(let list, let repeating):
            emit(.cancelTimer(.scanListRefresh))
            shownScanList = repeating ? list : nil
            scanListVisible = true
            handle(.scanListShown(list), source: source)
            if repeating { emit(.armTimer(.scanListRefresh, after: options.timing.scaledScanListRefresh)) }
            reply(ControlReply.ok(requestID: rid))
        case .hideScanList:
            emit(.cancelTimer(.scanListRefresh))
            shownScanList = nil
            // The list is no longer shown: `status.scanList` is null again (a round answered later does not
            // bring it back). The station keeps the passwords helpers set for a later join.
            scanListVisible = false
            record(.event(.init(event: "scanListHidden", source: try? JSONCoding.encode(source))))
            reply(ControlReply.ok(requestID: rid))
        case .logoff(let helper, let identity):
            guard let identity = identity ?? machine.association?.identity else {
                record(.logoffRequest(.init(helper: helper, network: nil, via: "control")))
                reply(ControlReply.with(["type": "logoffResult", "accepted": false, "reason": "not associated"], rid))
                return
            }
            record(.logoffRequest(.init(helper: helper, network: TraceNetwork(identity), via: "control")))
            var answered: Bool?
            logoffReply = { answered = $0 }
            // The state the request met, before handling it: a refusal names it (the lab tells a refusal in a state
            // hotspotd passes through on its own from the helper's, without asking again later, when it may have moved).
            let met = machine.state.rawValue
            handle(.logoffRequested(helper, network: identity), source: source)
            logoffReply = nil
            reply(ControlReply.with(["type": "logoffResult", "accepted": .bool(answered ?? false), "state": .string(met)], rid))
        case .foreground(let helper):
            handle(.foreground(helper), source: source)
            reply(ControlReply.ok(requestID: rid))
        case .status:
            reply(ControlReply.with(statusFields, rid))
        case .subscribeTrace:
            if !conn.subscribed {
                conn.subscribed = true
                subscribers.append(conn)
            }
            reply(ControlReply.ok(requestID: rid))
        case .join(let ssid, let password):
            stationRequest(.join(ssid: ssid, password: password), conn, json: request.json, source: source, requestID: rid)
        case .leave:
            stationRequest(.leave, conn, json: request.json, source: source, requestID: rid)
        case .autoJoin:
            stationRequest(.autoJoin(except: machine.autoJoinDisabled), conn, json: request.json, source: source, requestID: rid)
        case .setManager(let app, let config):
            do {
                try setManager(app, config)
                reply(ControlReply.ok(requestID: rid))
            } catch {
                protocolError(conn, error, offending: nil, requestID: rid)
            }
        case .getManager(let app):
            guard apps[app] != nil else {
                protocolError(conn, unknownApp(app), offending: nil, requestID: rid)
                return
            }
            var o = manager(of: app).fields
            o["type"] = "manager"
            o["app"] = .string(app)
            reply(ControlReply.with(o, rid))
        case .record(let what):
            record(.labAction(.init(action: LabAction(json: what), via: source.via, peer: source.peer)))
            reply(ControlReply.ok(requestID: rid))
        case .fireMaintainTimer:
            // The lab's clock jumps to the armed timer: the same event as when it runs out (`timerFired`), traced
            // `via: control`; the loop's timer is cancelled so that it cannot fire a second time.
            guard maintainTimerArmed else {
                let e = ProtocolError(.requestFailed, "fireMaintainTimer: \(ControlRequest.noMaintainTimerArmed) (hotspotd is in \(machine.state.rawValue); it arms one on entering Authenticated)")
                record(.error(.init(message: e.message, via: "control")))
                reply(ControlReply.error(e, requestID: rid))
                return
            }
            maintainTimerArmed = false
            emit(.cancelTimer(.maintain))
            handle(.maintainTimerFired, source: source)
            reply(ControlReply.ok(requestID: rid))
        }
    }

    /// IEEE 802.11 SSIDs are 0-32 bytes, any bytes. A NUL byte in the text form (`ssid`) is refused: it is the
    /// C end of a string to hooks and tools, so such an SSID comes as `ssid_hex` (docs/PROTOCOL.md).
    public static let maximumSSIDBytes = SSID.maximumBytes

    /// The largest persisted state (cache and auto-join list, as JSON) the `start` record embeds whole; a
    /// larger one is summarised (`persistedSummary`).
    public static let maximumEmbeddedState = 16 * 1024

    /// Why `ssid` cannot be associated with (nil: it can).
    static func ssidProblem(_ ssid: SSID, hexForm: Bool) -> String? {
        if ssid.bytes.count > maximumSSIDBytes {
            return "is \(ssid.bytes.count) bytes; IEEE 802.11 allows at most \(maximumSSIDBytes)"
        }
        if !hexForm && ssid.bytes.contains(0) { return "contains a NUL byte" }
        return nil
    }

    /// Sends a control reply; one over `maximumControlReply` becomes an `error` reply (traced) instead.
    func sendControlReply(_ conn: Connection, _ reply: JSON, requestID: JSON?) {
        let payload = reply.bytes
        guard payload.count <= Self.maximumControlReply else {
            let e = ProtocolError(.requestFailed, "reply of \(payload.count) bytes exceeds the control reply limit of \(Self.maximumControlReply) bytes")
            record(.error(.init(message: "reply to control connection \(conn.id): \(e.message)")))
            send(conn, frame(ControlReply.error(e, requestID: requestID).bytes))
            return
        }
        send(conn, frame(payload))
    }

    private func stationRequest(_ request: StationRequest, _ conn: Connection, json: JSON, source: TraceRecord.EventSource, requestID rid: JSON?) {
        guard hasStation else {
            let e = ProtocolError(.requestFailed, "\(json["type"]?.stringValue ?? "?"): this hotspotd drives no station "
                                  + "(start it with --wpa-supplicant CTRL-PATH); report association with associate/ipUp instead")
            sendControlReply(conn, ControlReply.error(e, requestID: rid), requestID: rid)
            return
        }
        record(.userAction(.init(request: json, via: source.via, peer: source.peer)))
        conn.awaitingStation = true
        emit(.station(request, replyTo: StationReplyTo(connection: conn.id, requestID: rid, request: json)))
    }

    /// The station driver carried out a request (`error`: why it failed); the control client gets its reply.
    public func stationRequestFinished(_ replyTo: StationReplyTo, error: String?) -> [DaemonAction] {
        if let error { record(.error(.init(message: error, request: replyTo.request))) }
        if let conn = connections[replyTo.connection] {
            let reply = error.map { ControlReply.error(ProtocolError(.requestFailed, $0), requestID: replyTo.requestID) }
                ?? ControlReply.ok(requestID: replyTo.requestID)
            sendControlReply(conn, reply, requestID: replyTo.requestID)
            conn.awaitingStation = false
            processFrames(conn)
        }
        return take()
    }
}
