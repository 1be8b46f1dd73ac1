import HotspotCore
import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// What the daemon asks of the network when the state machine says so. `WPAStation` (HotspotStation)
/// implements it for real (policy routing for IP suppression, wpa_supplicant for association);
/// `HookNetworkControl` runs a command.
public protocol NetworkControl: AnyObject {
    /// General traffic must not use the interface.
    func suppressIP(interface: String, network: NetworkIdentity?)
    /// General traffic may use the interface.
    func releaseIP(interface: String, network: NetworkIdentity?)
    /// Leave the current network.
    func disassociate(interface: String, network: NetworkIdentity?)
    /// Auto-join for the network was disabled (false) or enabled again (true).
    func setAutoJoin(_ enabled: Bool, network: NetworkIdentity, interface: String)
}

/// The device side of a station: joins and leaves networks for the user and feeds the daemon what really
/// happens on the interface (association, IP up/down) through `StationEventSink.submit(_:via:)`. hotspotd's
/// implementation drives wpa_supplicant and a DHCP client (`HotspotStation`). Called on the loop thread;
/// a thrown error becomes the control request's `requestFailed` error.
public protocol StationDriver: AnyObject {
    /// Called once from `Daemon.start()`, on the loop thread, before any request, with where its events go.
    func attach(to daemon: any StationEventSink) throws
    /// The user joins `ssid` by hand (didAutoJoin false), with `password` for a secure network.
    func join(ssid: SSID, password: String?) throws
    /// The user leaves the current network.
    func leave() throws
    /// Join known networks automatically (didAutoJoin true), except `disabled`.
    func autoJoin(except disabled: Set<NetworkIdentity>) throws
    /// Called from `Daemon.run()` when the loop ends.
    func detach()
}

/// Runs a configurable hook command for every network action, without blocking the daemon:
/// `HOOK ACTION INTERFACE [SSID SECURITY]` with ACTION one of `suppress-ip`, `release-ip`, `disassociate`,
/// `disable-auto-join`, `enable-auto-join`. With no hook command, the actions only show in the trace and in
/// `status` (the state the daemon wants), which is what a lab without a data plane needs.
public final class HookNetworkControl: NetworkControl, @unchecked Sendable {  // @unchecked: `run` and `onFinish` are set and called from the daemon's loop thread; the waiter thread only calls the captured `finish`
    public let hook: String?
    /// Called (on the hook's waiter thread) when a hook process ends: argv and wait status or spawn error.
    public var onFinish: (@Sendable (_ argv: [String], _ status: Int32?, _ error: String?) -> Void)?
    public private(set) var launched = 0

    public init(hook: String?) { self.hook = hook }

    public func suppressIP(interface: String, network: NetworkIdentity?) { run("suppress-ip", interface, network) }
    public func releaseIP(interface: String, network: NetworkIdentity?) { run("release-ip", interface, network) }
    public func disassociate(interface: String, network: NetworkIdentity?) { run("disassociate", interface, network) }
    public func setAutoJoin(_ enabled: Bool, network: NetworkIdentity, interface: String) {
        run(enabled ? "enable-auto-join" : "disable-auto-join", interface, network)
    }

    private func run(_ action: String, _ interface: String, _ network: NetworkIdentity?) {
        guard let hook else { return }
        let argv = [hook, action, interface] + (network.map { [$0.ssid, $0.security.rawValue] } ?? [])
        launched += 1
        let finish = onFinish
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(ProcessConfiguration(hook, Array(argv.dropFirst())))
        } catch {
            finish?(argv, nil, "\(error)")
            return
        }
        do {
            try SystemThread.detach("wait for hook \(hook)") {
                do {
                    let status = try child.wait()
                    finish?(argv, status?.waitStatus, nil)
                } catch {
                    finish?(argv, nil, "\(error)")
                }
            }
        } catch {
            finish?(argv, nil, "\(error)")
        }
    }
}
