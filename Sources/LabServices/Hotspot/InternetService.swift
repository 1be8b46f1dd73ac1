import Foundation
import HotspotSystem
import PortalKinds
import LabTopology

/// The lab's internet (`hotspot-portal --internet`) in its namespace: the probe endpoints and a web site on any
/// name, the topology's backend routes (`internet: services:`), over HTTP on `internet.port` and HTTPS on 443
/// with a certificate per SNI name issued by the lab CA. Ready once it wrote `internet.ready`.
public final class InternetService: HotspotService, @unchecked Sendable {  // @unchecked: started and stopped by the one thread that brings its hotspot up or down; the rest is lets
    public let internet: Internet
    public let namespace: String
    public let binary: String
    public let labLogDirectory: String
    let launcher: any ProcessLauncher
    public private(set) var process: (any ServiceProcess)?

    /// The HTTPS port.
    public static let tlsPort = 443

    public var serviceName: String { "internet" }
    public var log: String { labLogDirectory + "/internet.log" }
    public var readyFile: String { labLogDirectory + "/internet.ready" }
    /// The backend routes as JSON (`[InternetRoute]`), written at launch when the topology has any.
    public var servicesFile: String { labLogDirectory + "/internet-services.json" }
    public var logFiles: [String: String] { ["internet": log] }

    public init(internet: Internet, namespace: String, binary: String, labLogDirectory: String, launcher: any ProcessLauncher) {
        self.internet = internet
        self.namespace = namespace
        self.binary = binary
        self.labLogDirectory = labLogDirectory
        self.launcher = launcher
    }

    /// The server's arguments; writes the routes' file when there are routes.
    public func arguments() throws -> [String] {
        // HTTP and HTTPS on both families (the IPv6 address serves the hotspots with IPv6).
        var args = ["--internet", "--listen", "\(internet.address):\(internet.port)", "--listen6", "\(Internet.address6)",
                    "--ready-file", readyFile]
        if !internet.services.isEmpty {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            do { try encoder.encode(internet.services).write(to: URL(fileURLWithPath: servicesFile)) } catch {
                throw SystemError("write the internet's backend routes", servicesFile, reason: "\(error)")
            }
            args += ["--services", servicesFile]
        }
        args += ["--internet-tls-port", "\(Self.tlsPort)", "--tls-ca", PortalTLS.caFile(labLogDirectory: labLogDirectory),
                 "--tls-ca-key", PortalTLS.caKey(labLogDirectory: labLogDirectory), "--tls-directory", labLogDirectory + "/tls/internet"]
        return args
    }

    public func launch() throws {
        unlink(readyFile)
        let args = try arguments()
        process = try launcher.spawn(ProcessConfiguration(binary, args, stdout: .file(log), stderr: .file(log)), inNamespace: namespace)
    }

    public func waitUntilReady() throws {
        guard let process else { throw SystemError("wait for", "the internet server in \(namespace)", reason: "it was not launched") }
        try Readiness.waitForFile(readyFile, child: process, log: log, what: "internet server")
    }

    public func stop() throws { try Readiness.stop(process, grace: .seconds(2)) }
}
