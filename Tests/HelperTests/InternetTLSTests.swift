import Foundation
@testable import Portals
import Testing
@testable import HotspotHelper

/// The lab internet's HTTPS (loopback, no root): a certificate per SNI name issued on the fly by a CA (in process,
/// `hsl_issue_certificate`), answering the backend routes and probe endpoints; a client trusting only that CA.
/// Part of the serialized `TLSClientTests`. (The server answers on each connection's own thread, not on Swift's
/// cooperative pool, which synchronous tests blocking in a client could starve: `LabHTTPServerTests`.)
extension TLSClientTests {
    final class InternetServerFixture: @unchecked Sendable {
        let port: UInt16
        let server: LabHTTPServer
        let issuer: TLSCertificateIssuer

        init(fixture: TLSFixture, sni: Bool = true, ip: String = "127.0.0.1") throws {
            issuer = TLSCertificateIssuer(caCertificate: fixture.ca, caKey: fixture.dir + "/ca.key",
                                          directory: fixture.dir + "/internet-\(UInt32.random(in: 0...UInt32.max))")
            let context = sni ? try issuer.serverContext(defaultName: ip) : try issuer.context(for: ip)
            let responder = InternetResponder(routes: [
                InternetRoute(host: "api.vendor.example", path: "/session", status: 200, headers: ["Content-Type": "application/json"],
                              body: "{\"session\":\"active\"}"),
            ])
            (server, port) = try LabHTTPServer.serving(ip: ip, port: 0, tls: context, ioTimeoutSeconds: 5) { request, _ in
                await InternetServer.answer(responder, method: request.method, host: request.host, path: request.path, scheme: "https")
            }
        }

        func stop() { server.stop() }
    }

    func internetClient(_ dns: FakeDNSServer) -> HotspotHTTPClient {
        HotspotHTTPClient(timeout: .seconds(10), resolver: HotspotResolver(nameservers: ["127.0.0.1"], port: dns.port),
                          trustAnchors: .caFile(fixture.ca))
    }

    @Test("a vendor's backend and Android's HTTPS probe, each name with its own certificate; no SNI: the address's")
    func certificatePerName() throws {
        let server = try InternetServerFixture(fixture: fixture)
        defer { server.stop() }
        #expect(!FileManager.default.fileExists(atPath: server.issuer.directory), "nothing is issued before the first handshake")
        let dns = FakeDNSServer(["api.vendor.example": "127.0.0.1", "www.google.com": "127.0.0.1"])
        defer { dns.stop() }
        let session = try internetClient(dns).get("https://api.vendor.example:\(server.port)/session")
        #expect(session.status == 200 && String(decoding: session.body, as: UTF8.self) == "{\"session\":\"active\"}")
        #expect(session.header("Content-Type") == "application/json")
        let probe = try internetClient(dns).get("https://www.google.com:\(server.port)/generate_204")
        #expect(probe.status == 204 && probe.body.isEmpty)
        let byAddress = try internetClient(dns).get("https://127.0.0.1:\(server.port)/hotspot-detect.html")
        #expect(byAddress.status == 200 && String(decoding: byAddress.body, as: UTF8.self) == InternetResponder.appleSuccess)
        #expect(FileManager.default.fileExists(atPath: server.issuer.directory + "/api.vendor.example.pem"))
        #expect(FileManager.default.fileExists(atPath: server.issuer.directory + "/www.google.com.pem"))
    }

    @Test("over IPv6: the server listens on ::1, an https://[::1]:PORT/ URL connects, the address's certificate (IP SAN) verifies")
    func overIPv6() throws {
        let server = try InternetServerFixture(fixture: fixture, ip: "::1")
        defer { server.stop() }
        let dns = FakeDNSServer([:])
        defer { dns.stop() }
        let reply = try internetClient(dns).get("https://[::1]:\(server.port)/hotspot-detect.html")
        #expect(reply.status == 200 && String(decoding: reply.body, as: UTF8.self) == InternetResponder.appleSuccess)
        #expect(throws: (any Error).self) { try LabHTTPServer.listen(ip: "2001:db8::zz", port: 0) }
    }

    @Test("without the SNI selection a name gets the address's certificate, which the client refuses")
    func withoutSNIHostnameMismatch() throws {
        let server = try InternetServerFixture(fixture: fixture, sni: false)
        defer { server.stop() }
        let dns = FakeDNSServer(["api.vendor.example": "127.0.0.1"])
        defer { dns.stop() }
        #expect { try internetClient(dns).get("https://api.vendor.example:\(server.port)/session") } throws: { error in
            "\(error)".contains("hostname mismatch")
        }
    }

    /// What the issuer makes in process is what `openssl req -x509 -CA` made: the openssl command verifies it as a TLS
    /// server's for the name (and for an address, by its IP SAN, not for another name), with the same extensions; the
    /// key is the certificate's and only its owner reads it. A CA that cannot be read is named in the error.
    @Test("the in-process issuer's certificates verify with the openssl command, as the ones openssl req made")
    func issuedCertificatesVerify() throws {
        let fixture = try TLSFixture.shared.get()
        let issuer = TLSCertificateIssuer(caCertificate: fixture.ca, caKey: fixture.dir + "/ca.key",
                                          directory: fixture.dir + "/issued-\(UInt32.random(in: 0...UInt32.max))")
        for (name, check) in [("api.vendor.example", ["-verify_hostname", "api.vendor.example"]), ("198.18.0.1", ["-verify_ip", "198.18.0.1"]),
                              ("2001:db8:ffff::1", ["-verify_ip", "2001:db8:ffff::1"])] {
            let (certificate, key) = try issuer.issue(name)
            let verified = try TLSFixture.opensslOutput(["verify", "-CAfile", fixture.ca, "-purpose", "sslserver"] + check + [certificate])
            #expect(verified.status == 0 && verified.output.contains("OK"), "\(name): \(verified.output)")
            let text = try TLSFixture.opensslOutput(["x509", "-in", certificate, "-noout", "-text"]).output
            for part in ["Subject: CN = \(name)", "CA:FALSE", "Digital Signature", "TLS Web Server Authentication", "ASN1 OID: prime256v1",
                         "ecdsa-with-SHA256", "X509v3 Subject Key Identifier", "X509v3 Authority Key Identifier"] {
                #expect(text.contains(part), "\(name): no `\(part)` in\n\(text)")
            }
            #expect(text.contains("critical") && text.components(separatedBy: "critical").count - 1 == 2, "basicConstraints and keyUsage critical: \(text)")
            let fromKey = try TLSFixture.opensslOutput(["pkey", "-in", key, "-pubout"]).output
            let fromCertificate = try TLSFixture.opensslOutput(["x509", "-in", certificate, "-noout", "-pubkey"]).output
            #expect(!fromKey.isEmpty && fromKey == fromCertificate)
            var info = stat()
            #expect(stat(key, &info) == 0 && info.st_mode & 0o777 == 0o600)
        }
        let (other, _) = try issuer.issue("elsewhere.example")
        let wrongName = try TLSFixture.opensslOutput(["verify", "-CAfile", fixture.ca, "-verify_hostname", "api.vendor.example", other])
        #expect(wrongName.status != 0, "a certificate for elsewhere.example must not verify for api.vendor.example")
        let broken = TLSCertificateIssuer(caCertificate: fixture.dir + "/no-such-ca.pem", caKey: fixture.dir + "/ca.key",
                                          directory: fixture.dir + "/issued-broken")
        #expect {
            try broken.issue("api.vendor.example")
        } throws: { error in
            "\(error)".contains("issue the certificate of api.vendor.example") && "\(error)".contains("read the CA certificate \(fixture.dir)/no-such-ca.pem")
        }
        let keyless = TLSCertificateIssuer(caCertificate: fixture.ca, caKey: fixture.dir + "/no-such-ca.key", directory: fixture.dir + "/issued-keyless")
        #expect {
            try keyless.issue("api.vendor.example")
        } throws: { error in
            "\(error)".contains("read the CA key \(fixture.dir)/no-such-ca.key")
        }
    }

    @Test("names the issuer refuses: not a DNS name or an IP address; IPv6 addresses in their canonical text")
    func issuerNames() {
        #expect(TLSCertificateIssuer.normalizedName("API.Vendor.Example") == "api.vendor.example")
        #expect(TLSCertificateIssuer.normalizedName("2001:DB8:FFFF:0::1") == "2001:db8:ffff::1")
        #expect(TLSCertificateIssuer.normalizedName("2001:db8::zz") == nil && TLSCertificateIssuer.normalizedName("::1/x") == nil)
        #expect(TLSCertificateIssuer.normalizedName("a b") == nil && TLSCertificateIssuer.normalizedName("../x") == nil
                && TLSCertificateIssuer.normalizedName("") == nil && TLSCertificateIssuer.normalizedName("-x") == nil)
    }
}
