import HotspotProtocol
import HotspotSystem
import Netlink

/// The lease file's fields (`DHCPMessage.leaseFields`, named as udhcpc exported them to its script: ip, subnet, mask,
/// router, dns, lease, serverid, opt114) read back as what hotspotd configures over netlink: the address with its prefix, and the default router.
public struct DHCPLease: Equatable, Sendable {
    public var address: IPPrefix
    /// The first router of the lease (option 3 may list several), or nil when the server offered none.
    public var router: IPAddress?

    /// The file's lines as a dictionary (`DHCPLeaseFile.fields`, the reader the SDK uses too).
    public static func fields(_ text: String) -> [String: String] { DHCPLeaseFile.fields(text) }

    /// `file` names the lease in errors. The prefix comes from `mask` (busybox gives the length, 0-32) or else
    /// from `subnet` (a dotted mask); neither: /24, as udhcpc's own default script assumes.
    public init(fields: [String: String], file: String) throws {
        guard let ip = fields["ip"], let address = IPAddress(ip), !address.isIPv6 else {
            throw SystemError("read DHCP lease", file, reason: "ip=\(fields["ip"] ?? "(missing)") is not an IPv4 address")
        }
        var length: UInt8 = 24
        if let mask = fields["mask"], !mask.isEmpty {
            guard let bits = UInt8(mask), bits <= 32 else {
                throw SystemError("read DHCP lease", file, reason: "mask=\(mask) is not a prefix length (0 ... 32)")
            }
            length = bits
        } else if let subnet = fields["subnet"], !subnet.isEmpty {
            guard let bits = Self.prefixLength(dotted: subnet) else {
                throw SystemError("read DHCP lease", file, reason: "subnet=\(subnet) is not a contiguous netmask")
            }
            length = bits
        }
        self.address = IPPrefix(address, length: length)
        if let routers = fields["router"], let first = routers.split(separator: " ").first {
            guard let router = IPAddress(String(first)), !router.isIPv6 else {
                throw SystemError("read DHCP lease", file, reason: "router=\(routers) does not start with an IPv4 address")
            }
            self.router = router
        }
    }

    /// 255.255.255.0 -> 24; nil for a mask with holes or not four octets.
    static func prefixLength(dotted: String) -> UInt8? {
        let parts = dotted.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt8($0) }
        guard parts.count == 4 else { return nil }
        let value = parts.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let ones = value.leadingZeroBitCount == 0 ? (~value).leadingZeroBitCount : 0
        guard value == (ones == 0 ? 0 : ~UInt32(0) << (32 - UInt32(ones))) else { return nil }
        return UInt8(ones)
    }
}
