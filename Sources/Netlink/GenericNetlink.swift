#if canImport(Glibc)
import Glibc
#endif
import CLibNL
import CLibNLGenl
import CNetlinkShim
import HotspotSystem

/// The result of one generic netlink request: data messages, and the ack's value. Most commands ack with 0;
/// mac80211_hwsim's NEW_RADIO acks with the new radio id as a **positive** value.
public struct GenericNetlinkResult: Sendable {
    public var replies: [NetlinkReply]
    public var ackValue: Int32
}

/// A generic netlink socket through libnl-genl, opened in the calling thread's namespace.
public final class GenericNetlinkSocket: @unchecked Sendable {  // @unchecked: the libnl socket is used and closed only with `lock` held
    private let socket: OpaquePointer
    private let lock = Mutex()
    private var closed = false

    public init() throws {
        guard let socket = nl_socket_alloc() else {
            throw SystemError("open generic netlink socket", "", errno: ENOMEM)
        }
        let connected = genl_connect(socket)
        if connected < 0 {
            nl_socket_free(socket)
            throw SystemError("open generic netlink socket", "", reason: libnlError(connected))
        }
        nl_socket_disable_seq_check(socket)
        self.socket = socket
    }

    deinit { if !closed { nl_socket_free(socket) } }

    /// Closes the socket now. Radios created with DESTROY_RADIO_ON_CLOSE through it vanish.
    public func close() {
        lock.withLock {
            if !closed { nl_socket_free(socket) }
            closed = true
        }
    }

    /// The numeric id of a generic netlink family (`MAC80211_HWSIM`, `nl80211`).
    public func resolve(_ family: String) throws -> UInt16 {
        try lock.withLock {
            if closed { throw SystemError("resolve generic netlink family", family, errno: EBADF) }
            let id = genl_ctrl_resolve(socket, family)
            if id < 0 {
                throw SystemError("resolve generic netlink family", family, reason: libnlError(id))
            }
            return UInt16(id)
        }
    }

    /// Sends one encoded message (port and sequence filled in by libnl) and collects the replies until the
    /// ack, the end of a dump, or an error. Throws `NetlinkKernelError` on a negative error.
    public func request(_ message: NetlinkMessage) throws -> GenericNetlinkResult {
        try lock.withLock {
            if closed { throw SystemError("send generic netlink request", "", errno: EBADF) }
            var bytes = message.bytes
            guard let msg = bytes.withUnsafeMutableBytes({ nlmsg_convert($0.baseAddress!.assumingMemoryBound(to: nlmsghdr.self)) }) else {
                throw SystemError("send generic netlink request", "", errno: ENOMEM)
            }
            defer { nlmsg_free(msg) }
            let sent = nl_send_auto(socket, msg)
            if sent < 0 { throw SystemError("send generic netlink request", "", reason: libnlError(sent)) }

            let state = ReceiveState(sequence: nlmsg_hdr(msg).pointee.nlmsg_seq)
            guard let cb = nl_cb_alloc(NL_CB_DEFAULT) else { throw SystemError("allocate libnl callbacks", "", errno: ENOMEM) }
            defer { nl_cb_put(cb) }
            let arg = Unmanaged.passUnretained(state).toOpaque()
            // Sequence numbers are checked in the callbacks below, not by libnl's strict-order check.
            nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, { _, _ in Int32(NL_OK.rawValue) }, nil)
            nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, { msg, arg in
                let state = Unmanaged<ReceiveState>.fromOpaque(arg!).takeUnretainedValue()
                let header = nlmsg_hdr(msg)!
                guard header.pointee.nlmsg_seq == state.sequence else { return Int32(NL_SKIP.rawValue) }
                let length = Int(header.pointee.nlmsg_len)
                let raw = Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(header), count: length))
                state.replies.append(contentsOf: splitMessages(raw))
                return Int32(NL_OK.rawValue)
            }, arg)
            nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, { _, arg in
                let state = Unmanaged<ReceiveState>.fromOpaque(arg!).takeUnretainedValue()
                state.done = true
                return Int32(NL_STOP.rawValue)
            }, arg)
            nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, { _, arg in
                let state = Unmanaged<ReceiveState>.fromOpaque(arg!).takeUnretainedValue()
                state.done = true
                return Int32(NL_STOP.rawValue)
            }, arg)
            nl_cb_err(cb, NL_CB_CUSTOM, { _, error, arg in
                let state = Unmanaged<ReceiveState>.fromOpaque(arg!).takeUnretainedValue()
                guard let error, error.pointee.msg.nlmsg_seq == state.sequence else { return Int32(NL_SKIP.rawValue) }
                state.ackValue = hsl_nlmsgerr_error(error)
                state.done = true
                return Int32(NL_STOP.rawValue)
            }, arg)
            while !state.done {
                let received = nl_recvmsgs(socket, cb)
                if state.done { break }
                if received < 0 { throw SystemError("receive generic netlink reply", "", reason: libnlError(received)) }
            }
            if state.ackValue < 0 { throw NetlinkKernelError(code: -state.ackValue) }
            return GenericNetlinkResult(replies: state.replies, ackValue: state.ackValue)
        }
    }

    private final class ReceiveState {
        let sequence: UInt32
        var replies: [NetlinkReply] = []
        var ackValue: Int32 = 0
        var done = false
        init(sequence: UInt32) { self.sequence = sequence }
    }
}

func libnlError(_ code: Int32) -> String {
    String(decoding: Array(UnsafeRawBufferPointer(start: nl_geterror(code), count: strlen(nl_geterror(code)))), as: UTF8.self)
}

/// Builds a generic netlink message with libnl (`genlmsg_put` + `nla_put_*`), port and sequence 0.
final class GenericMessageBuilder {
    private let msg: OpaquePointer

    init(family: UInt16, command: UInt8, version: UInt8 = 1, flags: UInt16 = NL.request) {
        msg = nlmsg_alloc()
        _ = genlmsg_put(msg, UInt32(hsl_nl_auto_port()), UInt32(hsl_nl_auto_seq()), Int32(family), 0, Int32(flags), command, version)
    }

    deinit { nlmsg_free(msg) }

    func put(_ type: UInt16, string: String) { _ = nla_put_string(msg, Int32(type), string) }
    func put(_ type: UInt16, u32 value: UInt32) { _ = nla_put_u32(msg, Int32(type), value) }
    func put(_ type: UInt16, bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { nla_put(msg, Int32(type), Int32($0.count), $0.baseAddress) }
    }
    func putFlag(_ type: UInt16) { _ = nla_put_flag(msg, Int32(type)) }

    func finish() -> NetlinkMessage {
        let header = nlmsg_hdr(msg)!
        return NetlinkMessage(bytes: Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(header), count: Int(header.pointee.nlmsg_len))))
    }
}

// MARK: mac80211_hwsim

/// mac80211_hwsim's generic netlink numbers (its header is not UAPI).
public enum HWSIM {
    public static let family = "MAC80211_HWSIM"
    public static let cmdNewRadio: UInt8 = 4, cmdDeleteRadio: UInt8 = 5, cmdGetRadio: UInt8 = 6
    public static let attrChannels: UInt16 = 9, attrRadioID: UInt16 = 10, attrDestroyRadioOnClose: UInt16 = 16
    public static let attrRadioName: UInt16 = 17, attrNoVIF: UInt16 = 18, attrPermAddr: UInt16 = 22
}

/// Pure encoders for mac80211_hwsim requests (`family` is the resolved id).
public enum HwsimMessages {
    public static func newRadio(family: UInt16, name: String, channels: UInt32 = 1, permanentAddress: MACAddress? = nil,
                                destroyOnClose: Bool = true) -> NetlinkMessage {
        let builder = GenericMessageBuilder(family: family, command: HWSIM.cmdNewRadio)
        builder.put(HWSIM.attrRadioName, string: name)
        builder.put(HWSIM.attrChannels, u32: channels)
        if let permanentAddress { builder.put(HWSIM.attrPermAddr, bytes: permanentAddress.bytes) }
        if destroyOnClose { builder.putFlag(HWSIM.attrDestroyRadioOnClose) }
        return builder.finish()
    }

    /// Dumps the radios visible from the requester's namespace.
    public static func dumpRadios(family: UInt16) -> NetlinkMessage {
        GenericMessageBuilder(family: family, command: HWSIM.cmdGetRadio, flags: NL.request | NL.dump).finish()
    }

    public static func getRadio(family: UInt16, id: Int32) -> NetlinkMessage {
        let builder = GenericMessageBuilder(family: family, command: HWSIM.cmdGetRadio)
        builder.put(HWSIM.attrRadioID, u32: UInt32(bitPattern: id))
        return builder.finish()
    }

    public static func deleteRadio(family: UInt16, name: String) -> NetlinkMessage {
        let builder = GenericMessageBuilder(family: family, command: HWSIM.cmdDeleteRadio)
        builder.put(HWSIM.attrRadioName, string: name)
        return builder.finish()
    }

    public static func deleteRadio(family: UInt16, id: Int32) -> NetlinkMessage {
        let builder = GenericMessageBuilder(family: family, command: HWSIM.cmdDeleteRadio)
        builder.put(HWSIM.attrRadioID, u32: UInt32(bitPattern: id))
        return builder.finish()
    }
}

/// A simulated radio; its wiphy carries the same name.
public struct SimulatedRadio: Sendable, Equatable {
    public var id: Int32
    public var name: String
}

/// mac80211_hwsim radios through generic netlink. Create radios from the lab's root namespace (radios hear
/// each other only within the namespace they were created from), then move their wiphys.
public final class Hwsim: @unchecked Sendable {  // @unchecked: lets only; the socket serialises its own use
    public let socket: GenericNetlinkSocket
    public let family: UInt16

    /// Opens a socket in the calling thread's namespace and resolves `MAC80211_HWSIM`.
    public init() throws {
        socket = try GenericNetlinkSocket()
        family = try socket.resolve(HWSIM.family)
    }

    /// A socket opened inside `namespace`. mac80211_hwsim only answers GET_RADIO/DEL_RADIO for radios whose
    /// wiphy is in the requester's namespace: after moving a radio, query or delete it from there.
    public static func inside(_ namespace: NetworkNamespace) throws -> Hwsim {
        try namespace.runInside { try Hwsim() }
    }

    /// Whether the family exists here (module loaded or built in).
    public static func isAvailable() -> Bool {
        guard let socket = try? GenericNetlinkSocket() else { return false }
        return (try? socket.resolve(HWSIM.family)) != nil
    }

    /// NEW_RADIO; the id comes from the positive ack.
    public func createRadio(name: String, channels: UInt32 = 1, permanentAddress: MACAddress? = nil,
                            destroyOnClose: Bool = true) throws -> SimulatedRadio {
        let result = try perform("create radio", name) {
            try socket.request(HwsimMessages.newRadio(family: family, name: name, channels: channels,
                                                      permanentAddress: permanentAddress, destroyOnClose: destroyOnClose))
        }
        return SimulatedRadio(id: result.ackValue, name: name)
    }

    /// GET_RADIO by id; nil if it does not exist in this socket's namespace.
    public func radio(id: Int32) throws -> SimulatedRadio? {
        do {
            let result = try socket.request(HwsimMessages.getRadio(family: family, id: id))
            for reply in result.replies {
                let attributes = NetlinkAttributes(reply.payload, offset: 4)
                if let name = attributes.string(HWSIM.attrRadioName) {
                    return SimulatedRadio(id: attributes.u32(HWSIM.attrRadioID).map { Int32(bitPattern: $0) } ?? id, name: name)
                }
            }
            return nil
        } catch let error as NetlinkKernelError where error.code == ENODEV {
            return nil
        } catch let error as NetlinkKernelError {
            throw SystemError("get radio", "#\(id)", errno: error.code)
        }
    }

    /// All radios whose wiphy is in this socket's namespace.
    public func radios() throws -> [SimulatedRadio] {
        let result = try perform("list radios", "") { try socket.request(HwsimMessages.dumpRadios(family: family)) }
        return result.replies.compactMap { reply in
            let attributes = NetlinkAttributes(reply.payload, offset: 4)
            guard let name = attributes.string(HWSIM.attrRadioName), let id = attributes.u32(HWSIM.attrRadioID) else { return nil }
            return SimulatedRadio(id: Int32(bitPattern: id), name: name)
        }
    }

    public func deleteRadio(name: String) throws {
        try perform("delete radio", name) { _ = try socket.request(HwsimMessages.deleteRadio(family: family, name: name)) }
    }
}

// MARK: nl80211

public enum NL80211 {
    public static let family = "nl80211"
    public static let cmdGetWiphy: UInt8 = 1, cmdSetWiphy: UInt8 = 2, cmdGetInterface: UInt8 = 5, cmdSetWiphyNetns: UInt8 = 49
    public static let attrWiphy: UInt16 = 1, attrWiphyName: UInt16 = 2, attrIfindex: UInt16 = 3, attrIfname: UInt16 = 4
    /// NL80211_ATTR_WIPHY_TX_POWER_SETTING (enum nl80211_tx_power_setting) and _LEVEL (signed mBm).
    public static let attrWiphyTxPowerSetting: UInt16 = 97, attrWiphyTxPowerLevel: UInt16 = 98
    /// enum nl80211_tx_power_setting.
    public static let txPowerAutomatic: UInt32 = 0, txPowerLimited: UInt32 = 1, txPowerFixed: UInt32 = 2
    public static let attrNetnsFD: UInt16 = 219, attrSplitWiphyDump: UInt16 = 174
}

public enum NL80211Messages {
    public static func dumpWiphys(family: UInt16) -> NetlinkMessage {
        let builder = GenericMessageBuilder(family: family, command: NL80211.cmdGetWiphy, version: 0, flags: NL.request | NL.dump)
        builder.putFlag(NL80211.attrSplitWiphyDump)
        return builder.finish()
    }

    public static func dumpInterfaces(family: UInt16) -> NetlinkMessage {
        GenericMessageBuilder(family: family, command: NL80211.cmdGetInterface, version: 0, flags: NL.request | NL.dump).finish()
    }

    /// SET_WIPHY on one interface (NL80211_ATTR_IFINDEX: mac80211 sets that vif's power, `iw dev X set txpower`):
    /// a fixed transmit power in mBm (1/100 dBm), or nil for automatic. mac80211 refuses negative or
    /// non-whole-dBm fixed levels (EOPNOTSUPP).
    public static func setTxPower(family: UInt16, interfaceIndex: Int32, mBm: Int32?) -> NetlinkMessage {
        let builder = GenericMessageBuilder(family: family, command: NL80211.cmdSetWiphy, version: 0)
        builder.put(NL80211.attrIfindex, u32: UInt32(bitPattern: interfaceIndex))
        if let mBm {
            builder.put(NL80211.attrWiphyTxPowerSetting, u32: NL80211.txPowerFixed)
            builder.put(NL80211.attrWiphyTxPowerLevel, u32: UInt32(bitPattern: mBm))
        } else {
            builder.put(NL80211.attrWiphyTxPowerSetting, u32: NL80211.txPowerAutomatic)
        }
        return builder.finish()
    }

    public static func setWiphyNamespace(family: UInt16, wiphy: UInt32, namespaceFD: Int32) -> NetlinkMessage {
        let builder = GenericMessageBuilder(family: family, command: NL80211.cmdSetWiphyNetns, version: 0)
        builder.put(NL80211.attrWiphy, u32: wiphy)
        builder.put(NL80211.attrNetnsFD, u32: UInt32(bitPattern: namespaceFD))
        return builder.finish()
    }
}

/// A wireless interface and its wiphy.
public struct WirelessInterface: Sendable, Equatable {
    public var index: Int32
    public var name: String
    public var wiphy: UInt32
}

/// nl80211 through libnl-genl, in the calling thread's namespace.
public final class Nl80211: @unchecked Sendable {  // @unchecked: lets only; the socket serialises its own use
    public let socket: GenericNetlinkSocket
    public let family: UInt16

    public init() throws {
        socket = try GenericNetlinkSocket()
        family = try socket.resolve(NL80211.family)
    }

    /// Wiphy index by name (`hwsim` radios carry the radio's name).
    public func wiphy(named name: String) throws -> UInt32 {
        let result = try perform("list wiphys for", name) { try socket.request(NL80211Messages.dumpWiphys(family: family)) }
        for reply in result.replies {
            let attributes = NetlinkAttributes(reply.payload, offset: 4)
            if attributes.string(NL80211.attrWiphyName) == name, let index = attributes.u32(NL80211.attrWiphy) {
                return index
            }
        }
        throw SystemError("find wiphy", name, errno: ENODEV)
    }

    public func interfaces() throws -> [WirelessInterface] {
        let result = try perform("list wireless interfaces", "") { try socket.request(NL80211Messages.dumpInterfaces(family: family)) }
        return result.replies.compactMap { reply in
            let attributes = NetlinkAttributes(reply.payload, offset: 4)
            guard let index = attributes.u32(NL80211.attrIfindex), let name = attributes.string(NL80211.attrIfname),
                  let wiphy = attributes.u32(NL80211.attrWiphy) else { return nil }
            return WirelessInterface(index: Int32(bitPattern: index), name: name, wiphy: wiphy)
        }
    }

    public func interfaces(ofWiphy wiphy: UInt32) throws -> [WirelessInterface] {
        try interfaces().filter { $0.wiphy == wiphy }
    }

    /// The interface's transmit power, fixed at `mBm` (nil: automatic). With mac80211_hwsim, what other radios
    /// receive from this interface is -50 dBm + its tx power (in dBm), so this is how the lab weakens a signal.
    public func setTxPower(interface: WirelessInterface, mBm: Int32?) throws {
        try perform("set tx power \(mBm.map { "\($0) mBm" } ?? "automatic") of", interface.name) {
            _ = try socket.request(NL80211Messages.setTxPower(family: family, interfaceIndex: interface.index, mBm: mBm))
        }
    }

    /// SET_WIPHY_NETNS by namespace descriptor (bring its interfaces down first).
    public func moveWiphy(_ wiphy: UInt32, to namespace: NetworkNamespace) throws {
        try perform("move wiphy", "phy#\(wiphy) to netns \(namespace.name)") {
            _ = try namespace.withDescriptor { try socket.request(NL80211Messages.setWiphyNamespace(family: family, wiphy: wiphy, namespaceFD: $0)) }
        }
    }
}
