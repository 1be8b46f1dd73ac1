// The filterScanList rounds of `HotspotMachine`: one command per registered helper for each scan list
// shown, independent of the state machine; the list comes back annotated when every helper answered or
// timed out. (Split from HotspotMachine.swift; the bookkeeping it shares with the machine is internal.)

extension HotspotMachine {
    struct ScanRound: Sendable, Equatable {
        var id: Int
        var list: [AnnotatedNetwork]
        var outstanding: [CommandID]
    }

    mutating func startScanRound(_ list: [HotspotNetwork], _ effects: inout [Effect]) {
        var round = ScanRound(id: nextRoundID, list: list.map { AnnotatedNetwork(network: $0) }, outstanding: [])
        nextRoundID += 1
        for helper in registered {
            let command = Command(
                id: nextCommandID, type: .filterScanList, helper: helper.id, networkList: list,
                deadline: timing.deadline(for: .filterScanList))
            nextCommandID += 1
            round.outstanding.append(command.id)
            outstanding.append(Outstanding(
                id: command.id, type: .filterScanList, helper: helper.id, deadline: command.deadline,
                isChosenHelper: false, didJustJoin: false))
            effects.append(.send(command))
        }
        if round.outstanding.isEmpty {
            effects.append(.scanListAnnotated(round.list))
        } else {
            scanRounds.append(round)
        }
    }

    mutating func scanAnswer(_ command: Outstanding, _ response: Response?, _ effects: inout [Effect]) {
        guard let r = scanRounds.firstIndex(where: { $0.outstanding.contains(command.id) }) else { return }
        scanRounds[r].outstanding.removeAll { $0 == command.id }
        if let response {
            if !command.type.accepts(response.result) {
                effects.append(.irregular(.invalidResult(command.id, command.type, response.result, from: command.helper)))
            } else {
                let name = displayName(of: command.helper)
                for claimed in response.networkList ?? [] {
                    guard let i = scanRounds[r].list.firstIndex(where: { $0.network.sameEntry(as: claimed) }) else {
                        effects.append(.irregular(.unlistedNetwork(command.id, ssid: claimed.rawSSID, bssid: claimed.bssid, from: command.helper)))
                        continue
                    }
                    let entry = scanRounds[r].list[i]
                    // A secure network is claimed only with a password; then the first answer annotates.
                    if entry.network.isSecure, (claimed.password ?? "").isEmpty {
                        effects.append(.irregular(.securedWithoutPassword(command.id, ssid: claimed.rawSSID, bssid: claimed.bssid,
                                                                          from: command.helper)))
                        continue
                    }
                    guard entry.claimedBy == nil else { continue }
                    scanRounds[r].list[i].annotation = name
                    scanRounds[r].list[i].claimedBy = command.helper
                    scanRounds[r].list[i].password = entry.network.isSecure ? claimed.password : nil
                }
            }
        }
        if scanRounds[r].outstanding.isEmpty {
            let round = scanRounds.remove(at: r)
            effects.append(.scanListAnnotated(round.list))
        }
    }
}
