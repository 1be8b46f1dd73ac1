#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem
import Netlink

/// The IPv6 side of one association (docs/STATION.md, "IP up on an IPv6-only network"): the kernel's SLAAC gives
/// the address and the default route; this watcher, on its own thread, reads the Router Advertisements (RDNSS,
/// RFC 8910 option 37) and the interface's addressing, and reports once both an advertisement came after the
/// association and the interface is IPv6-up (a usable global address plus a default route). It gives up after
/// `timeout`; `cancel()` ends it early. Nothing in it decides IP up: `StationDHCP` does, on the daemon's loop.
final class StationIPv6Watcher: @unchecked Sendable {  // @unchecked: `cancelled` is read and written only with `lock` held; the rest is immutable
    struct Ready: Sendable {
        var addressing: StationAddressing
        var advertisement: RouterAdvertisement.Received
        var elapsed: Duration
    }

    let interface: String
    let timeout: Duration
    private let lock = Mutex()
    private var cancelled = false
    private let report: (Result<Ready, SystemError>) -> Void

    init(interface: String, timeout: Duration, report: @escaping (Result<Ready, SystemError>) -> Void) {
        self.interface = interface
        self.timeout = timeout
        self.report = report
    }

    func cancel() { lock.withLock { cancelled = true } }
    private var isCancelled: Bool { lock.withLock { cancelled } }

    func start() {
        do {
            try SystemThread.detach("watch IPv6 on \(interface)") { [self] in watch() }
        } catch {
            report(.failure(error))
        }
    }

    private func watch() {
        let started = SystemMonotonicClock.read()
        let listener: RouterAdvertisementListener
        let route: RouteNetlink
        let index: Int32
        do {
            listener = try RouterAdvertisementListener(interface: interface)
            route = try RouteNetlink.current()
            index = try route.index(of: interface)
        } catch {
            fail(error)
            return
        }
        var advertisement: RouterAdvertisement.Received?
        while !isCancelled {
            if SystemMonotonicClock.read() - started > timeout {
                report(.failure(SystemError("wait for IPv6 on", interface, reason: advertisement == nil
                    ? "no Router Advertisement within \(timeout)" : "no usable global address and default route within \(timeout)")))
                return
            }
            do {
                if let received = try listener.receive(timeoutMilliseconds: 50), received.routerLifetime > 0 || advertisement == nil {
                    // Keep the latest; an advertisement without the URI does not drop one heard before.
                    let uri = received.captivePortal ?? advertisement?.captivePortal
                    advertisement = received
                    advertisement?.captivePortal = uri
                }
                guard let seen = advertisement else { continue }
                let addressing = try StationAddressing.read(interfaceIndex: index, route: route)
                if addressing.ipv6Up {
                    if !isCancelled {
                        report(.success(Ready(addressing: addressing, advertisement: seen, elapsed: SystemMonotonicClock.read() - started)))
                    }
                    return
                }
            } catch {
                fail(error)
                return
            }
        }
    }

    /// Reports `error` (a SystemError as it is, anything else named as watching IPv6), unless cancelled.
    private func fail(_ error: any Error) {
        guard !isCancelled else { return }
        report(.failure(error as? SystemError ?? SystemError("watch IPv6 on", interface, reason: "\(error)")))
    }
}
