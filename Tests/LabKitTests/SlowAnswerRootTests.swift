import Foundation
import Glibc
import HotspotSystem
import Netlink
import Testing
import TestSupport
@testable import LabServices

/// The `application` step's verdict must not turn on the machine's speed: an answer that comes 6 s late (CI runs 18 and
/// 19: a first TLS handshake with the vendor's backend took over the 4 s the step once allowed, in the VM on a loaded
/// machine) is still "allowed". The control on the same code path: a server that closes without answering is blocked.
/// Root: its own network namespace, a server bound to port 0 there.
@Suite("application traffic waits for a slow answer (root)", .serialized, .requiresRoot)
struct SlowAnswerRootTests {
    /// A one-shot HTTP server in `namespace`: reads a request, waits `delay` seconds, answers 200 (or closes at once
    /// when `answer` is false). Returns the process and its port, once it listens.
    static func server(in namespace: NetworkNamespace, delay: Double, answer: Bool) throws -> (ChildProcess, Int) {
        let script = """
            import socket, sys, time
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            print(s.getsockname()[1], flush=True)
            c, _ = s.accept()
            c.recv(4096)
            if \(answer ? "True" : "False"):
                time.sleep(\(delay))
                c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 0\\r\\nConnection: close\\r\\n\\r\\n")
            c.close()
            """
        let child = try ChildProcess.spawn(ProcessConfiguration("python3", ["-c", script], stdout: .pipe, stderr: .discard)
            .inNetworkNamespace(namespace.name))
        let port = Int(readFirstLine(fd: child.stdoutFD!, timeout: .seconds(30)).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        return (child, port)
    }

    @Test("root: an answer 6 s late is allowed; a server that closes without answering is blocked (the control)", arguments: [true, false])
    func slowAnswerAllowed(answer: Bool) throws {
        let name = testPrefix(answer ? "w" : "x")
        let namespace = try NetworkNamespace.create(name)
        defer { try? NetworkNamespace.delete(name) }
        try namespace.route.setUp("lo")
        let resolvConf = NSTemporaryDirectory() + "/\(name).resolv.conf"
        try "nameserver 127.0.0.1\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        defer { unlink(resolvConf) }
        let (server, port) = try Self.server(in: namespace, delay: 6, answer: answer)
        defer { _ = try? server.terminate(grace: .seconds(1)) }
        #expect(port > 0, "the server did not say its port")
        let start = ContinuousClock.now
        let (status, error) = try StationResolver.application("http://127.0.0.1:\(port)/", namespace: namespace, resolvConf: resolvConf, caBundle: nil)
        if answer {
            #expect(status == 200, "a 6 s late answer must be allowed: \(error)")
            #expect(ContinuousClock.now - start >= .seconds(5), "the server did wait")
        } else {
            #expect(status == nil && !error.isEmpty, "no answer must be blocked: \(status.map(String.init) ?? "nil")")
        }
    }
}
