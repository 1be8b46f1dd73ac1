import Foundation
import HotspotHelper
#if canImport(Glibc)
import Glibc
#endif

/// The SDK's network type (this file does not import HotspotCore, whose `HotspotNetwork` would be ambiguous).
typealias SDKNetwork = HotspotNetwork

/// A request as a test server received it.
struct ReceivedRequest: Sendable {
    var head: String
    var body: [UInt8]
    var requestLine: String { String(head.split(separator: "\r\n", omittingEmptySubsequences: false).first ?? "") }
    func header(_ name: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
    var headerNames: [String] {
        head.split(separator: "\r\n").dropFirst().compactMap { (line: Substring) -> String? in
            line.firstIndex(of: ":").map { String(line[..<$0]) }
        }
    }
}

/// What a canned server does on a connection, step by step.
enum Step: Sendable {
    case send(String)
    case sendBytes([UInt8])
    case pause(milliseconds: Int)
    /// Keep the connection open without answering until the server stops.
    case hold
}

func ms(_ n: Int) { usleep(useconds_t(n * 1000)) }

/// A raw TCP server on 127.0.0.1 (an ephemeral port): reads one request per connection (head + Content-Length
/// body), records it and plays the steps the handler returns, then closes. Exact bytes on the wire, so the
/// client's parsing is tested against what servers really send (chunks split across writes, no length...).
final class CannedServer: @unchecked Sendable {
    let fd: Int32
    let port: UInt16
    private let lock = NSLock()
    private var requests: [ReceivedRequest] = []
    private var stopped = false
    private var connections: [Int32] = []
    let handler: @Sendable (ReceivedRequest) -> [Step]
    private let done = DispatchGroup()

    init(_ handler: @escaping @Sendable (ReceivedRequest) -> [Step]) throws {
        self.handler = handler
        (fd, port) = bindLoopback(SOCK_STREAM)
        guard listen(fd, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        done.enter()
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    var url: String { "http://127.0.0.1:\(port)" }
    var received: [ReceivedRequest] { lock.withLock { requests } }

    private func acceptLoop() {
        defer { done.leave() }
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if lock.withLock({ stopped }) { return }
            guard poll(&p, 1, 50) > 0 else { continue }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { continue }
            lock.withLock { connections.append(client) }
            done.enter()
            Thread.detachNewThread { [self] in
                defer { done.leave() }
                serve(client)
            }
        }
    }

    private func serve(_ client: Int32) {
        defer { _ = lock.withLock { close(client) } }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var request: ReceivedRequest?
        while request == nil {
            let n = recv(client, &buffer, buffer.count, 0)
            if n <= 0 { return }
            data += buffer[0..<n]
            guard let end = data.firstRange(of: [13, 10, 13, 10]) else { continue }
            let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
            var r = ReceivedRequest(head: head, body: [])
            let length = Int(r.header("Content-Length") ?? "0") ?? 0
            while data.count - end.upperBound < length {
                let n = recv(client, &buffer, buffer.count, 0)
                if n <= 0 { return }
                data += buffer[0..<n]
            }
            r.body = Array(data[end.upperBound..<(end.upperBound + length)])
            request = r
        }
        lock.withLock { requests.append(request!) }
        for step in handler(request!) {
            switch step {
            case .send(let text): _ = Array(text.utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            case .sendBytes(let bytes): _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            case .pause(let n): ms(n)
            case .hold: while !lock.withLock({ stopped }) { ms(20) }
            }
        }
    }

    func stop() {
        lock.withLock { stopped = true }
        done.wait()
        close(fd)
    }
}

/// A socket bound to 127.0.0.1 on an ephemeral port.
func bindLoopback(_ type: __socket_type) -> (Int32, UInt16) {
    let fd = socket(AF_INET, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, 4)
    var sa = sockaddr_in()
    sa.sin_family = sa_family_t(AF_INET)
    sa.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var bound = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return (fd, UInt16(bigEndian: bound.sin_port))
}

/// A port on 127.0.0.1 where nobody listens (bound, then closed).
func closedPort() -> UInt16 {
    let (fd, port) = bindLoopback(SOCK_STREAM)
    close(fd)
    return port
}

/// A UDP DNS server on 127.0.0.1 answering A queries from a table (unknown names: NXDOMAIN); records the
/// queries it got.
final class FakeDNSServer: @unchecked Sendable {
    let fd: Int32
    let port: UInt16
    let table: [String: String]
    private let lock = NSLock()
    private var stopped = false
    private var queries: [[UInt8]] = []
    private let done = DispatchGroup()

    init(_ table: [String: String]) {
        self.table = table
        (fd, port) = bindLoopback(SOCK_DGRAM)
        done.enter()
        Thread.detachNewThread { [self] in loop() }
    }

    var received: [[UInt8]] { lock.withLock { queries } }

    private func loop() {
        defer { done.leave() }
        var buffer = [UInt8](repeating: 0, count: 1500)
        while !lock.withLock({ stopped }) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 50) > 0 else { continue }
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let n = withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
            }
            guard n >= 17 else { continue }
            let query = Array(buffer[0..<n])
            lock.withLock { queries.append(query) }
            // The name: labels from offset 12.
            var labels: [String] = []
            var i = 12
            while i < n, query[i] != 0 {
                let l = Int(query[i])
                labels.append(String(decoding: query[(i + 1)...(i + l)], as: UTF8.self))
                i += 1 + l
            }
            let question = Array(query[12...(i + 4)])
            var answer: [UInt8] = [query[0], query[1]]
            if let ip = table[labels.joined(separator: ".")] {
                answer += [0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0] + question
                answer += [0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4] + ip.split(separator: ".").map { UInt8($0)! }
            } else {
                answer += [0x81, 0x83, 0, 1, 0, 0, 0, 0, 0, 0] + question
            }
            _ = withUnsafePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, answer, answer.count, 0, $0, length) }
            }
        }
    }

    func stop() {
        lock.withLock { stopped = true }
        done.wait()
        close(fd)
    }
}

func elapsed(_ body: () throws -> Void) rethrows -> Duration {
    let start = ContinuousClock.now
    try body()
    return ContinuousClock.now - start
}
