import Glibc
import HotspotSystem
@testable import Netlink
import Testing
import TestSupport

@Suite("netlink extended acks")
struct ExtendedAckTests {
    @Test func parsesCappedErrorWithMessage() {
        // nlmsgerr: error -EINVAL, capped request header (len 44, type 24); then NLMSGERR_ATTR_MSG "bad gw\0".
        var payload: [UInt8] = [0xea, 0xff, 0xff, 0xff]
        payload += [44, 0, 0, 0, 24, 0, 5, 6, 1, 0, 0, 0, 0, 0, 0, 0]
        payload += [11, 0, 1, 0] + Array("bad gw".utf8) + [0, 0]
        let parsed = NetlinkKernelError.parse(payload: payload, flags: 0x100 | 0x200)
        #expect(parsed.code == -EINVAL)
        #expect(parsed.message == "bad gw")
    }

    @Test func plainErrorHasNoMessage() {
        let payload: [UInt8] = [0xef, 0xff, 0xff, 0xff] + [UInt8](repeating: 0, count: 16)
        let parsed = NetlinkKernelError.parse(payload: payload, flags: 0)
        #expect(parsed.code == -EEXIST)
        #expect(parsed.message == nil)
    }

    @Test(.tags(.root), .requiresRoot)
    func rootKernelReasonReachesTheError() throws {
        let ns = try NetworkNamespace.create(testPrefix("e") + "a")
        defer { try? ns.delete() }
        do {
            // No route to the gateway: the kernel refuses; the error names operation, object and cause.
            try ns.route.addRoute(Route(destination: IPPrefix("203.0.113.0/24")!, gateway: IPAddress("198.51.100.1"), table: 100))
            Issue.record("route via an unreachable gateway was accepted")
        } catch let error as SystemError {
            #expect(error.errno == ENETUNREACH)
            #expect(error.description.hasPrefix("add route 203.0.113.0/24 via 198.51.100.1 table 100: Network is unreachable (ENETUNREACH)"))
            #expect(error.detail?.isEmpty == false, "the kernel's extended-ack text is missing: \(error)")
        }
    }
}
