// The outstanding commands of `HotspotMachine` as the driver and the helpers see them: the slim records
// the machine keeps and the `Command`s they stand for. (Split from HotspotMachine.swift; the bookkeeping
// it shares with the machine is internal.)

extension HotspotMachine {
    /// Outstanding commands, oldest first (state-machine commands and filterScanList alike), as sent.
    /// Built on demand: the machine itself keeps only slim records (`Outstanding`), so a step copies no
    /// `Command` besides the one in its `send` effect.
    public var pending: [Command] { outstanding.map(command(for:)) }

    /// What the machine keeps of an outstanding command. The rest of the command is the association (a
    /// state-machine command is withdrawn before the association changes; only its signal strength may change
    /// meanwhile, so the strength sent is kept) or the scan round's list.
    struct Outstanding: Sendable, Equatable {
        var id: CommandID
        var type: CommandType
        var helper: HelperID
        var deadline: Duration?
        var isChosenHelper: Bool
        var didJustJoin: Bool
        var signalStrength: Double = 0
    }

    /// The outstanding state-machine command (not filterScanList) of a helper, if any.
    public func outstandingCommand(of helper: HelperID) -> Command? {
        outstanding.first { $0.helper == helper && $0.type != .filterScanList }.map(command(for:))
    }

    /// The command `record` stands for, exactly as it was sent.
    private func command(for record: Outstanding) -> Command {
        if record.type == .filterScanList {
            let list = scanRounds.first { $0.outstanding.contains(record.id) }?.list.map(\.network)
            return Command(id: record.id, type: record.type, helper: record.helper, networkList: list, deadline: record.deadline)
        }
        var network = commandNetwork(isChosenHelper: record.isChosenHelper, didJustJoin: record.didJustJoin)
        network?.signalStrength = record.signalStrength
        return Command(id: record.id, type: record.type, helper: record.helper, network: network, deadline: record.deadline)
    }

    /// The associated network as a command shows it.
    func commandNetwork(isChosenHelper: Bool, didJustJoin: Bool) -> HotspotNetwork? {
        guard var network = association else { return nil }
        network.isChosenHelper = isChosenHelper
        network.didJustJoin = didJustJoin
        network.confidence = .none
        network.password = nil
        return network
    }
}
