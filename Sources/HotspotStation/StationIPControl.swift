import HotspotDaemon
import HotspotProtocol
import Netlink

/// The station's IP suppression by policy routing (`IPSuppression`), installed at attach when
/// `StationOptions.suppressIP` is on, switched by the state machine's `suppressIP`/`releaseIP`, removed at detach;
/// a failure to switch is traced as an `error` record. Shared by both station backends (`WPAStation`, `LinkStation`),
/// like `StationDHCP`. Loop thread only.
final class StationIPControl {
    weak var daemon: (any StationEventSink)?
    private var suppression: IPSuppression?

    /// Installs the suppression rules when `enabled` (off: suppression is only traced by the daemon).
    func install(enabled: Bool) throws {
        guard enabled else { return }
        let s = IPSuppression(route: try RouteNetlink.current())
        try s.install()
        suppression = s
    }

    func suppress(interface: String) {
        guard let suppression else { return }
        do { try suppression.suppress() } catch { daemon?.record(.error(.init(message: "suppress IP on \(interface): \(error)"))) }
    }

    func release(interface: String) {
        guard let suppression else { return }
        do { try suppression.release() } catch { daemon?.record(.error(.init(message: "release IP on \(interface): \(error)"))) }
    }

    func remove() {
        suppression?.remove()
        suppression = nil
    }
}
