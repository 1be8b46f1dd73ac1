/// The last few hundred commands that stopped being outstanding, to tell a late answer from a
/// duplicate, a withdrawn command or one never sent. Fixed size: no allocation after creation.
struct ResolvedRing: Sendable, Equatable {
    enum Disposition: Sendable, Equatable { case answered, expired, withdrawn }
    private var ids: [CommandID]
    private var helpers: [HelperID]
    private var dispositions: [Disposition]
    private var next = 0
    static let capacity = 256

    init() {
        ids = Array(repeating: 0, count: Self.capacity)
        helpers = Array(repeating: "", count: Self.capacity)
        dispositions = Array(repeating: .answered, count: Self.capacity)
    }

    mutating func record(_ id: CommandID, helper: HelperID, _ disposition: Disposition) {
        ids[next] = id
        helpers[next] = helper
        dispositions[next] = disposition
        next = (next + 1) % Self.capacity
    }

    func rejection(for id: CommandID, from helper: HelperID, nextID: CommandID) -> Rejection {
        guard id != 0, let i = ids.lastIndex(of: id) else {
            return id < nextID && id != 0 ? .withdrawnCommand(id, from: helper) : .unknownCommand(id, from: helper)
        }
        if helpers[i] != helper { return .notYourCommand(id, from: helper, sentTo: helpers[i]) }
        switch dispositions[i] {
        case .answered: return .duplicateResponse(id, from: helper)
        case .expired: return .lateResponse(id, from: helper)
        case .withdrawn: return .withdrawnCommand(id, from: helper)
        }
    }
}
