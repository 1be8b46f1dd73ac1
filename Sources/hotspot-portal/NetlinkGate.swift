#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem
import Netlink
import Portals

/// The gate's nftables set (`inet hotspot authenticated` by default) changed over nfnetlink from the portal's own
/// process, which runs in the hotspot namespace: no `nft` process per sign-in (two of them cost about 0.18 s of
/// every login under TCG, issue 19).
struct NetlinkGate: PortalGate {
    let set: NFTSet

    /// `spec`: FAMILY/TABLE/SET, such as inet/hotspot/authenticated.
    init(spec: String) throws {
        let table = try GateTable(spec: spec)
        set = try NFTSet(family: table.family, table: table.table, set: table.set)
    }

    init(set: NFTSet) { self.set = set }

    func allow(mac: String, ip: String, seconds: Int) async throws {
        let element = try Self.element(mac: mac, ip: ip, timeoutMilliseconds: UInt64(max(seconds, 1)) * 1000)
        // Replace any old element so the timeout restarts (`add` leaves an existing element's timeout as it is).
        try? set.delete(element)
        do { try set.add(element) } catch { throw GateError(operation: "nft add element", object: "\(set.family) \(set.table) \(set.set) { \(element) }", cause: "\(error)") }
    }

    /// Removing an element the set already timed out is not an error (the gate forgot the client).
    func revoke(mac: String, ip: String) async throws {
        let element = try Self.element(mac: mac, ip: ip, timeoutMilliseconds: nil)
        do {
            try set.delete(element)
        } catch let error as SystemError where error.errno == ENOENT {
            return
        } catch {
            throw GateError(operation: "nft delete element", object: "\(set.family) \(set.table) \(set.set) { \(element) }", cause: "\(error)")
        }
    }

    static func element(mac: String, ip: String, timeoutMilliseconds: UInt64?) throws -> NFTSetElement {
        guard let macAddress = MACAddress(mac) else {
            throw GateError(operation: "gate", object: "client \(mac) \(ip)", cause: "`\(mac)` is not a MAC address such as 02:00:00:00:01:00")
        }
        guard let address = IPAddress(ip), let element = NFTSetElement.macIPv4(macAddress, address, timeoutMilliseconds: timeoutMilliseconds) else {
            throw GateError(operation: "gate", object: "client \(mac) \(ip)", cause: "`\(ip)` is not an IPv4 address")
        }
        return element
    }
}
