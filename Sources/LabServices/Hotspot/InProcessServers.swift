import HotspotSystem
import Portals

/// A service a lab serves in the lab runner's own process (its internet, a hotspot's portal): threads and sockets of
/// this process, which the lab's teardown (its processes by pid, its namespaces) would not end, so
/// `RunningTopology.down()` stops each.
public protocol InProcessService: HotspotService, Sendable {
    /// Whether it listens (launched, not stopped).
    var isServing: Bool { get }
}

/// What an `InProcessService` serves with: its servers and their log, set once they listen, and stopped together
/// with every open connection (`LabHTTPServer.stop(endingConnections:)`). Stopping twice is harmless.
final class InProcessServers: Sendable {
    private let state = Locked<(servers: [LabHTTPServer], log: PortalLog?)>(([], nil))

    var isServing: Bool { state.withLock { !$0.servers.isEmpty } }

    /// The servers now listening and the log they write to.
    func serving(_ servers: [LabHTTPServer], log: PortalLog) {
        state.withLock { $0 = (servers, log) }
    }

    /// Stops listening, ends every open connection (a request that never gets an answer included), closes the log.
    func stop() {
        let (servers, log) = state.withLock { state in
            defer { state = ([], nil) }
            return state
        }
        for server in servers { server.stop(endingConnections: true) }
        log?.close()
    }
}
