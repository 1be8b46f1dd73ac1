import Foundation
import HotspotSystem
import Netlink
import Testing
import TestSupport
@testable import LabVM

/// The capture of the air, written in process (`AirCapture`): here on the loopback of a fresh namespace on the host
/// (the VM's hwsim0 is radiotap; the in-VM suites and the hwsim self-test, whose count tcpdump reads back, cover it).
@Suite("the capture of the air, in process (root)", .tags(.root), .requiresRoot, .serialized)
struct AirCaptureRootTests {
    /// The records of a pcap file (little endian, microseconds): each record's timestamp, kept and wire lengths, bytes.
    static func records(_ data: [UInt8]) -> (linkType: UInt32, records: [(seconds: UInt32, micros: UInt32, kept: Int, wire: Int, bytes: [UInt8])]) {
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(data[at + $1]) << (8 * UInt32($1)) } }
        var records: [(UInt32, UInt32, Int, Int, [UInt8])] = []
        var at = 24
        while at + 16 <= data.count {
            let kept = Int(u32(at + 8))
            records.append((u32(at), u32(at + 4), kept, Int(u32(at + 12)), Array(data[(at + 16)..<min(data.count, at + 16 + kept)])))
            at += 16 + kept
        }
        return (u32(20), records)
    }

    /// Each payload as one UDP datagram to 127.0.0.1:9 (discard) from this thread's namespace; what each sendto returned.
    static func sendToDiscard(_ payloads: [[UInt8]]) -> [Int] {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_port = UInt16(9).bigEndian
        to.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return payloads.map { payload in
            withUnsafePointer(to: &to) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, payload, payload.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }

    @Test func framesReachTheFileAsTcpdumpReadsThem() throws {
        let ns = try NetworkNamespace.create(testPrefix("c") + "a")
        defer { try? ns.delete() }
        try ns.route.setUp("lo")
        let dir = NSTemporaryDirectory() + "hsl-air-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/air.pcap"
        let before = Date().timeIntervalSince1970
        let capture = try ns.runInside { try AirCapture.begin(into: path, interface: "lo") }
        // The header is in the file at once; nothing else until a frame comes.
        #expect(capture.fileSize == AirCapture.pcapHeaderSize)
        // Three datagrams over lo: captured from the bind on, no wait for the capture to "listen".
        let payloads = (1...3).map { Array("hotspotlab-air-\($0)-".utf8) + [UInt8](repeating: UInt8($0), count: 100 * $0) }
        let sent = try ns.runInside { Self.sendToDiscard(payloads) }
        #expect(sent == payloads.map(\.count))
        capture.stop(frameTimeout: .seconds(60))
        #expect(capture.failure == nil)
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(data.prefix(4) == [0xd4, 0xc3, 0xb2, 0xa1], "pcap magic, microseconds, little endian")
        let (linkType, records) = Self.records(data)
        #expect(linkType == 1, "loopback is written as Ethernet, as tcpdump writes it")
        for payload in payloads {
            let record = records.first { $0.bytes.count >= payload.count && Array($0.bytes.suffix(payload.count)) == payload }
            #expect(record != nil, "the datagram of \(payload.count) bytes is in the capture (\(records.count) records)")
            if let record {
                #expect(record.kept == record.wire && record.kept == 14 + 20 + 8 + payload.count, "Ethernet, IPv4 and UDP headers, then the payload")
                let time = Double(record.seconds) + Double(record.micros) / 1e6
                #expect(time >= before - 1 && time <= Date().timeIntervalSince1970 + 1, "the kernel's receive time, \(time)")
            }
        }
        // tcpdump reads the file back, the frames included (the same check as the hwsim self-test's).
        let read = try ProcessRunner.run(ProcessConfiguration(try SystemTools.require("tcpdump", package: "tcpdump"), ["-n", "-r", path]))
        #expect(read.status == .exited(0), "tcpdump -r: \(read.stderr)")
        #expect(read.stdout.split(separator: "\n").filter { $0.contains("> 127.0.0.1.9:") }.count >= 3, "\(read.stdout)")
        // A second stop does nothing; the file keeps its frames.
        capture.stop(frameTimeout: .zero)
        #expect(capture.fileSize == data.count)
    }

    /// A burst sent just before the stop: every frame that reached the socket before it is in the file, however far
    /// the capture's thread lagged (it drains the socket's queue on the way out; a loaded CI machine once stopped a
    /// capture with one of three frames written).
    @Test func stopWritesEveryFrameQueuedBeforeIt() throws {
        let ns = try NetworkNamespace.create(testPrefix("c") + "b")
        defer { try? ns.delete() }
        try ns.route.setUp("lo")
        let path = NSTemporaryDirectory() + "hsl-air-burst-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).pcap"
        defer { unlink(path) }
        let capture = try ns.runInside { try AirCapture.begin(into: path, interface: "lo") }
        // Two frames each on lo (out and in), small: well inside the capture's 4 MiB receive queue.
        let count = 1000
        let payloads = (0..<count).map { Array("hotspotlab-burst-\($0)-end".utf8) }
        _ = try ns.runInside { Self.sendToDiscard(payloads) }
        capture.stop(frameTimeout: .seconds(60))
        #expect(capture.failure == nil)
        let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        let missing = (0..<count).filter { !text.contains("hotspotlab-burst-\($0)-end") }
        #expect(missing.isEmpty, "\(missing.count) of \(count) datagrams sent before the stop are not in the capture, first \(missing.prefix(5))")
    }

    @Test func aMissingInterfaceOrFileIsNamed() throws {
        #expect {
            _ = try AirCapture.begin(into: NSTemporaryDirectory() + "hsl-none.pcap", interface: "hsl-no-such-if")
        } throws: { error in
            "\(error)".contains("capture the air on hsl-no-such-if") && "\(error)".contains("ENODEV")
        }
        #expect {
            _ = try AirCapture.begin(into: "/proc/hsl-no-such-dir/air.pcap", interface: "lo")
        } throws: { error in
            "\(error)".contains("create /proc/hsl-no-such-dir/air.pcap") && "\(error)".contains("ENOENT")
        }
    }
}
