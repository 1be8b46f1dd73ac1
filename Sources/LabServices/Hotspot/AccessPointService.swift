import Foundation
import HotspotSystem
import LabTopology

/// One access point of a hotspot (radio mode): hostapd on one radio's interface, ready once its control
/// socket reports the AP enabled (its `STATUS`, else the `AP-ENABLED` event).
public final class AccessPointService: HotspotService, @unchecked Sendable {  // @unchecked: started and stopped by the one thread that brings its hotspot up or down; the rest is lets
    public let hotspot: Hotspot
    public let accessPoint: AccessPoint
    /// Its position among the hotspot's access points (0: the hotspot's own BSSID).
    public let number: Int
    public let interface: String
    /// The LAN bridge hostapd enslaves the interface to (several access points), else nil.
    public let bridge: String?
    public let namespace: String
    public let directory: String
    public let security: SecurityFiles
    let launcher: any ProcessLauncher
    public private(set) var process: (any ServiceProcess)?
    /// The control connection, attached to hostapd's events, once ready.
    public private(set) var control: WPACtrlSocket?

    /// The EAP user file and PEAP certificates every access point of a hotspot shares.
    public struct SecurityFiles: Sendable, Equatable {
        public var eapUserFile: String?
        public var certificates: HostapdConfig.CertificateFiles?
        public init(eapUserFile: String? = nil, certificates: HostapdConfig.CertificateFiles? = nil) {
            self.eapUserFile = eapUserFile
            self.certificates = certificates
        }
    }

    public var serviceName: String { "hostapd \(accessPoint.bssid)" }
    public var configFile: String { directory + (number == 0 ? "/hostapd.conf" : "/hostapd-\(number).conf") }
    public var log: String { directory + (number == 0 ? "/hostapd.log" : "/hostapd-\(number).log") }
    public var logName: String { number == 0 ? "hostapd" : "hostapd-\(number)" }
    public var logFiles: [String: String] { [logName: log] }
    public var controlDirectory: String { directory + "/hostapd-ctrl" }
    public var controlPath: String { controlDirectory + "/" + interface }

    public init(hotspot: Hotspot, number: Int, interface: String, bridge: String?, namespace: String, directory: String,
                security: SecurityFiles, launcher: any ProcessLauncher) {
        self.hotspot = hotspot
        accessPoint = hotspot.accessPoints[number]
        self.number = number
        self.interface = interface
        self.bridge = bridge
        self.namespace = namespace
        self.directory = directory
        self.security = security
        self.launcher = launcher
    }

    /// Writes the EAP user file (WPA2-Enterprise) and makes PEAP's throwaway certificate, in `directory`.
    public static func prepareSecurity(_ hotspot: Hotspot, directory: String, launcher: any ProcessLauncher) throws -> SecurityFiles {
        guard let users = HostapdConfig.eapUsers(hotspot.security) else { return SecurityFiles() }
        let eapUsers = directory + "/eap_users"
        try users.write(toFile: eapUsers, atomically: true, encoding: .utf8)
        guard case .wpa2Enterprise(.peap, _) = hotspot.security else { return SecurityFiles(eapUserFile: eapUsers) }
        return SecurityFiles(eapUserFile: eapUsers, certificates: try makeCertificates(in: directory, launcher: launcher))
    }

    /// A throwaway self-signed server certificate for PEAP (valid two days).
    static func makeCertificates(in dir: String, launcher: any ProcessLauncher) throws -> HostapdConfig.CertificateFiles {
        let cert = dir + "/server.pem"
        let key = dir + "/server.key"
        let args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=hotspot-lab.invalid"]
        let result = try launcher.run(ProcessConfiguration(try launcher.tool("openssl"), args), inNamespace: nil, timeout: .seconds(30))
        guard result.status.succeeded else {
            let lastLine = result.stderr.split(separator: "\n").last.map(String.init) ?? ""
            throw SystemError("make the PEAP certificate", cert, reason: "openssl \(args.joined(separator: " ")): \(result.status) \(lastLine)")
        }
        return HostapdConfig.CertificateFiles(caCert: cert, serverCert: cert, privateKey: key)
    }

    /// hostapd.conf for this access point.
    public func config() -> String {
        HostapdConfig.render(hotspot.served(by: accessPoint), interface: interface, controlDirectory: controlDirectory,
                             eapUserFile: security.eapUserFile, certificates: security.certificates, bridge: bridge)
    }

    public func launch() throws {
        try config().write(toFile: configFile, atomically: true, encoding: .utf8)
        process = try launcher.spawn(ProcessConfiguration(try launcher.tool("hostapd"), ["-t", configFile],
                                                          stdout: .file(log), stderr: .file(log)), inNamespace: namespace)
    }

    public func waitUntilReady() throws {
        let ctl: WPACtrlSocket
        do {
            // hostapd's control socket, waited for while hostapd runs (readiness, not a fixed time).
            ctl = try Readiness.whileRunning({ try process?.poll() }, what: "hostapd for \(accessPoint.bssid)", log: log) {
                try WPACtrlSocket.connect(serverPath: controlPath, timeout: .seconds(1))
            }
            try ctl.attach()
            let status = WPACtrlSocket.keyValues(try ctl.request("STATUS"))
            if status["state"] != "ENABLED" {
                _ = try ctl.waitForEvent(["AP-ENABLED"], timeout: .seconds(15))
            }
        } catch {
            throw SystemError("start hostapd", "for access point \(accessPoint.bssid) of hotspot \(hotspot.name)",
                              reason: "\(error) (exit: \(String(describing: try? process?.poll()))); log \(log): \(Readiness.tail(log))")
        }
        control = ctl
    }

    /// Closes the control connection and stops hostapd.
    public func stop() throws {
        control?.close()
        control = nil
        try Readiness.stop(process, grace: .seconds(2))
    }
}
