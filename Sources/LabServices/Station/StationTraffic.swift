import HotspotHelper
import HotspotSystem
import Netlink
import PortalKinds

/// The lab's own HTTP requests from a station: the `application` step's (an app's general traffic, unmarked) and the
/// `probe` step's (the system's connectivity probes, with the command traffic mark). They run in this process, on a
/// thread that entered the station's network namespace (`NetworkNamespace.runInside`), with the helper SDK's client
/// (`HotspotHTTPClient`: no redirect following, one timeout for the whole exchange). Names resolve with the servers
/// of the station's resolv.conf as it is at the time of the request (none before the first lease: nothing resolves).
///
/// Before, each request was a process in the station's namespace (`curl`, `hotspot-probe`): 0.2-0.6 s of CPU per
/// start in the VM (bench/README.md "Process starts in the VM").
public enum StationTraffic {
    /// One GET from inside `namespace`: the response, or the request's error (resolve, connect, TLS, read...).
    public static func get(_ url: String, in namespace: NetworkNamespace, resolvConf: String, trust: HotspotTLSTrust,
                           mark: UInt32?, timeout: Duration) throws -> Result<HotspotHTTPResponse, HotspotTrafficError> {
        try getAll([url], in: namespace, resolvConf: resolvConf, trust: trust, mark: mark, timeout: timeout)[0]
    }

    /// Each URL once, in order, from one thread inside `namespace` (`timeout` for each).
    public static func getAll(_ urls: [String], in namespace: NetworkNamespace, resolvConf: String, trust: HotspotTLSTrust,
                              mark: UInt32?, timeout: Duration) throws -> [Result<HotspotHTTPResponse, HotspotTrafficError>] {
        let servers = HotspotHelperEnvironment.parseResolvConf(readSmallFile(resolvConf) ?? "")
        let client = HotspotHTTPClient(mark: mark, timeout: timeout, resolver: HotspotResolver(nameservers: servers, mark: mark),
                                       trustAnchors: trust)
        return try namespace.runInside {
            urls.map { url in Result { () throws(HotspotTrafficError) -> HotspotHTTPResponse in try client.get(url) } }
        }
    }

    /// The `probe` step's fetches: the system's probe traffic (`HotspotHelper.commandTrafficMark`, so IP suppression
    /// lets it through as it does an OS's own probe), https:// verified against `caFile`.
    public static func probe(_ urls: [String], in namespace: NetworkNamespace, resolvConf: String, caFile: String,
                             timeout: Duration) throws -> [ProbeObservation] {
        try getAll(urls, in: namespace, resolvConf: resolvConf, trust: .caFile(caFile), mark: HotspotHelper.commandTrafficMark,
                   timeout: timeout).map(observation)
    }

    /// What a probe saw: the status and the body as text, or the error.
    public static func observation(_ result: Result<HotspotHTTPResponse, HotspotTrafficError>) -> ProbeObservation {
        switch result {
        case .success(let response): return .answered(status: response.status, body: response.text)
        case .failure(let error): return .failed("\(error)")
        }
    }
}
