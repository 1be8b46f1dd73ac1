import HotspotSystem

/// Where a DHCP client's IPv4 datagrams go and come from: `IPv4PacketSocket` on the station's interface, or a fake
/// server in unit tests.
public protocol DHCPTransport: AnyObject {
    /// The client's hardware address (chaddr).
    var hardwareAddress: [UInt8] { get }
    /// One IPv4 datagram to the link's broadcast address.
    func sendBroadcast(_ packet: [UInt8]) throws
    /// The next IPv4 datagram within `timeoutMilliseconds`, or nil (none came, or one to skip: keep waiting).
    func receive(timeoutMilliseconds: Int32) throws -> [UInt8]?
}

extension IPv4PacketSocket: DHCPTransport {}

/// Why a DHCP exchange ended without a lease.
public enum DHCPClientError: Error, Equatable, CustomStringConvertible {
    /// No lease in `attempts` discovers, `interval` apart: no DHCPv4 server on this link (`offered` false), or a
    /// server that offered but never acknowledged (or refused every request).
    case noLease(interface: String, attempts: Int, interval: Duration, offered: Bool)
    /// The exchange was cancelled (the station left the network).
    case cancelled(interface: String)

    public var description: String {
        switch self {
        case .noLease(let interface, let attempts, let interval, let offered):
            return "get a DHCP lease on \(interface): " + (offered
                ? "offers came, but no DHCPACK in \(attempts) DHCPDISCOVERs \(interval) apart (each offer requested \(DHCPClient.requests) times)"
                : "no server answered \(attempts) DHCPDISCOVERs \(interval) apart")
        case .cancelled(let interface):
            return "get a DHCP lease on \(interface): cancelled"
        }
    }
}

/// The station's DHCPv4 client (RFC 2131 4.4.1, INIT to BOUND): DHCPDISCOVER, the first DHCPOFFER, DHCPREQUEST for
/// it, DHCPACK. It asks for one lease and ends, as `udhcpc -q -n -t 5 -T 1` did: up to `attempts` discovers
/// `interval` apart; a DHCPNAK, or an offer whose request (sent up to three times, `interval` apart) is not
/// acknowledged, starts over with the next discover. Replies are asked for by unicast to the client's hardware address
/// (no broadcast flag, as udhcpc): over the air a unicast frame is acknowledged and retried by the 802.11 layer and
/// never waits for a DTIM beacon, where a broadcast one may be lost; the packet socket reads it without an address.
/// No renewal: a lease lasts for the association (`StationDHCP` asks again on the next one). Replies are matched by transaction ID and hardware address; anything else on the link is skipped. Time comes from
/// `clock`, so the unit tests run it on a virtual one.
public final class DHCPClient {
    public let interface: String
    public let attempts: Int
    public let interval: Duration
    let transport: any DHCPTransport
    let clock: any MonotonicClock
    let xid: UInt32
    let isCancelled: () -> Bool
    let log: (String) -> Void
    /// How long one wait for a packet may block before the cancellation is looked at again.
    static let pollSlice: Duration = .milliseconds(50)

    public init(interface: String, transport: any DHCPTransport, xid: UInt32 = UInt32.random(in: 1...UInt32.max),
                attempts: Int = 5, interval: Duration = .seconds(1), clock: any MonotonicClock = SystemMonotonicClock(),
                isCancelled: @escaping () -> Bool = { false }, log: @escaping (String) -> Void = { _ in }) {
        self.interface = interface
        self.transport = transport
        self.xid = xid
        self.attempts = max(1, attempts)
        self.interval = interval
        self.clock = clock
        self.isCancelled = isCancelled
        self.log = log
    }

    /// Runs the exchange to its DHCPACK.
    public func run() throws -> DHCPMessage {
        let mac = transport.hardwareAddress
        var offered = false
        for _ in 0..<attempts {
            log("broadcasting discover")
            try transport.sendBroadcast(IPv4UDP.broadcastFromClient(DHCPMessage.discover(xid: xid, hardwareAddress: mac).bytes))
            // Once a request went out, its ACK may still come late (a loaded link): it is the lease as well.
            guard let offer = try (offered ? reply(.offer, .ack, until: clock.now() + interval) : reply(.offer, until: clock.now() + interval)),
                  let server = offer.option(DHCPMessage.Option.serverIdentifier) else { continue }
            if offer.kind == .ack { return obtained(offer, from: server) }
            offered = true
            let request = DHCPMessage.request(xid: xid, hardwareAddress: mac, address: offer.yiaddr, server: server)
            var answer: DHCPMessage?
            // As udhcpc: the request is sent up to three times, an interval apart, before starting over.
            for _ in 0..<Self.requests where answer == nil {
                log("broadcasting select for \(DHCPMessage.dotted(offer.yiaddr)), server \(DHCPMessage.dotted(server))")
                try transport.sendBroadcast(IPv4UDP.broadcastFromClient(request.bytes))
                answer = try reply(.ack, .nak, until: clock.now() + interval)
            }
            guard let answer else { continue }
            if answer.kind == .nak {
                let text = answer.option(DHCPMessage.Option.message).map { String(decoding: $0, as: UTF8.self) } ?? ""
                log("received NAK\(text.isEmpty ? "" : ": " + text)")
                continue
            }
            return obtained(answer, from: server)
        }
        log("no lease, failing")
        throw DHCPClientError.noLease(interface: interface, attempts: attempts, interval: interval, offered: offered)
    }

    private func obtained(_ ack: DHCPMessage, from server: [UInt8]) -> DHCPMessage {
        log("lease of \(DHCPMessage.dotted(ack.yiaddr)) obtained from \(DHCPMessage.dotted(server)), lease time " + (ack.leaseFields["lease"] ?? "unknown"))
        return ack
    }

    /// How many times one offer's DHCPREQUEST is sent before the exchange starts over (udhcpc's three).
    static let requests = 3

    /// The first reply of one of `kinds` for this exchange before `deadline`, nil at the deadline.
    private func reply(_ kinds: DHCPMessage.Kind..., until deadline: Duration) throws -> DHCPMessage? {
        while true {
            if isCancelled() { throw DHCPClientError.cancelled(interface: interface) }
            let left = deadline - clock.now()
            guard left > .zero else { return nil }
            let wait = min(left, Self.pollSlice)
            guard let packet = try transport.receive(timeoutMilliseconds: max(1, wait.pollMilliseconds)),
                  let payload = IPv4UDP.payload(of: packet), let message = DHCPMessage.parse(payload),
                  message.op == 2, message.xid == xid, message.chaddr == transport.hardwareAddress,
                  let kind = message.kind, kinds.contains(kind) else { continue }
            // RFC 2131 4.3.1: an offer names its server, and the request must name it back.
            if kind == .offer, message.option(DHCPMessage.Option.serverIdentifier)?.count != 4 {
                log("offer of \(DHCPMessage.dotted(message.yiaddr)) without a server identifier: ignored")
                continue
            }
            return message
        }
    }
}
