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
public final class HookNetworkControl: NetworkControl, @unchecked Sendable {
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
        var argv = [hook, action, interface]
        if let network { argv += [network.ssid, network.security.rawValue] }
        launched += 1
        var pid: pid_t = 0
        var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        let rc = posix_spawn(&pid, hook, nil, nil, &cargs, environ)
        let finish = onFinish
        if rc != 0 {
            finish?(argv, nil, SystemError("spawn hook", hook, errno: rc).description)
            return
        }
        let thread = WaiterThread(pid: pid) { status in finish?(argv, status, nil) }
        thread.start()
    }
}

/// Waits for one child process on its own thread (the daemon's loop never blocks on a hook).
final class WaiterThread: @unchecked Sendable {
    let pid: pid_t
    let done: (Int32) -> Void
    init(pid: pid_t, done: @escaping (Int32) -> Void) {
        self.pid = pid
        self.done = done
    }

    func start() {
        var tid = pthread_t()
        let box = Unmanaged.passRetained(self).toOpaque()
        pthread_create(&tid, nil, { raw in
            let me = Unmanaged<WaiterThread>.fromOpaque(raw!).takeRetainedValue()
            var status: Int32 = 0
            while waitpid(me.pid, &status, 0) < 0, errno == EINTR {}
            me.done(status)
            return nil
        }, box)
        pthread_detach(tid)
    }
}
