import Foundation
import HotspotSystem
import Netlink
import PortalKinds
import Portals
import LabTopology

/// The lab's internet in its namespace: the probe endpoints and a web site on any name, the topology's backend routes
/// (`internet: services:`), over HTTP on `internet.port` and HTTPS on 443 with a certificate per SNI name issued by the
/// lab CA. Served in the lab runner's own process (`InternetServer.start`, its sockets made inside the namespace; each
/// connection on a thread of its own), not by a `hotspot-portal --internet` process: under the VM's emulation that
/// process's start (the dynamic loader, Foundation, its readiness request) was about nine tenths of its CPU and an
/// eighth of a radio lab's (bench/README.md, stop 45). Its lines go to `internet.log` in the lab's log folder. Ready
/// once `launch` returns: every socket listens then.
public final class InternetService: InProcessService, @unchecked Sendable {  // @unchecked: lets, and `served` (which locks its own state)
    public let internet: Internet
    public let namespace: NetworkNamespace
    public let labLogDirectory: String
    private let served = InProcessServers()

    /// The HTTPS port.
    public static let tlsPort: UInt16 = 443

    public var serviceName: String { "internet" }
    public var log: String { labLogDirectory + "/internet.log" }
    public var logFiles: [String: String] { ["internet": log] }
    /// Where the HTTPS server's certificates, one per SNI name, are written.
    public var certificateDirectory: String { labLogDirectory + "/tls/internet" }

    public init(internet: Internet, namespace: NetworkNamespace, labLogDirectory: String) {
        self.internet = internet
        self.namespace = namespace
        self.labLogDirectory = labLogDirectory
    }

    /// Listens on HTTP and HTTPS, on the internet's IPv4 address and on `Internet.address6`, inside `namespace`.
    /// The lab CA must exist (`PortalTLS.makeCA`). On an error nothing listens.
    public func launch() throws {
        let log: PortalLog
        do { log = try PortalLog(file: self.log) } catch {
            throw SystemError("start the lab internet in \(namespace.name)", self.log, reason: "\(error)")
        }
        let ca = PortalTLS.caFile(labLogDirectory: labLogDirectory)
        let issuer = TLSCertificateIssuer(caCertificate: ca, caKey: PortalTLS.caKey(labLogDirectory: labLogDirectory),
                                          directory: certificateDirectory, log: log)
        let address = "\(internet.address)"
        guard let port = UInt16(exactly: internet.port), port > 0 else {
            throw SystemError("start the lab internet in \(namespace.name)", "port \(internet.port)", reason: "expected a TCP port, 1-65535")
        }
        let responder = InternetResponder(routes: internet.services)
        do {
            let tls = try issuer.serverContext(defaultName: address)
            log.line("internet HTTPS on port \(Self.tlsPort): certificates per SNI name from \(ca)")
            log.line("internet: \(internet.services.count) backend route(s)")
            let servers = try namespace.runInside {
                try InternetServer.start(ip: address, port: port, alsoOn: ["\(Internet.address6)"], responder: responder, tls: tls,
                                         tlsPort: Self.tlsPort, log: log)
            }
            served.serving(servers, log: log)
        } catch {
            log.close()
            throw SystemError("start the lab internet in \(namespace.name)", "\(address):\(port)", reason: "\(error)")
        }
        log.line("listening on \(address):\(port) and [\(Internet.address6)]:\(port)")
    }

    /// Whether it listens (launched, not stopped).
    public var isServing: Bool { served.isServing }

    /// Listening since `launch` returned.
    public func waitUntilReady() throws {
        guard served.isServing else { throw SystemError("wait for", "the internet server in \(namespace.name)", reason: "it was not launched") }
    }

    /// Stops listening and ends every open connection (a `hang` route's request included), then closes the log.
    public func stop() throws {
        served.stop()
    }
}
