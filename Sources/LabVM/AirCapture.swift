import Foundation
import HotspotSystem
import Netlink

/// The capture of the air: every frame on `hwsim0`, the monitor interface mac80211_hwsim feeds with every radio's
/// frames, written to a pcap file by a thread of this process (a packet socket, as tcpdump reads it). Used by a
/// radio scenario (its `air.pcap`) and by the hwsim self-test.
///
/// It was a tcpdump process until 2026-11-28: under TCG its start (libpcap, libcrypto, libdbus, libsystemd: 13
/// libraries) was a twentieth of a radio lab's CPU, and each scenario waited for it to say it was listening. A
/// packet socket captures from its bind on, so the capture has started when `start` returns.
///
/// The file is pcap (microsecond timestamps, the kernel's receive time), the link type from the interface's
/// (radiotap on hwsim0), one write per frame so the file is whole up to its last frame at any time (tcpdump `-U`).
/// `stop` waits for a frame in the file before it ends the capture: a readiness wait, bounded, never a fixed sleep
/// (a short run's capture once held the 24-byte header only, CI run 35).
public final class AirCapture: @unchecked Sendable {  // @unchecked: the counters are behind `state`'s lock
    /// The pcap file.
    public let path: String
    /// The interface captured.
    public let interface: String
    private let socket: PacketCaptureSocket
    private let file: Int32
    private let state = Locked(State())
    private var reader: SystemThread?

    struct State {
        var frames = 0
        var stopping = false
        var error: String?
    }

    /// The size of a pcap file's global header: a file no larger holds no frame.
    public static let pcapHeaderSize = 24
    /// The most of a frame kept (tcpdump's default snap length).
    static let snapLength = 262_144

    /// The pcap link type of an interface's ARPHRD_ type; nil for one the capture does not write.
    static func linkType(hardwareType: Int) -> UInt32? {
        switch hardwareType {
        case 803: 127    // ARPHRD_IEEE80211_RADIOTAP: LINKTYPE_IEEE802_11_RADIOTAP (hwsim0)
        case 1, 772: 1   // Ethernet, and loopback, which Linux frames as Ethernet: LINKTYPE_ETHERNET
        default: nil
        }
    }

    /// The pcap global header: magic (microseconds), version 2.4, no zone, snap length, link type; little endian.
    static func fileHeader(linkType: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        for (value, size) in [(0xa1b2_c3d4, 4), (2, 2), (4, 2), (0, 4), (0, 4), (snapLength, 4), (Int(linkType), 4)] {
            for i in 0..<size { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * i))) }
        }
        return bytes
    }

    /// A frame's record header in front of its bytes (`buffer[0..<16]`): seconds, microseconds, bytes kept, bytes on
    /// the wire (little endian).
    static func writeRecordHeader(_ frame: PacketCaptureSocket.Frame, into buffer: UnsafeMutableRawBufferPointer) {
        for (n, value) in [frame.seconds, frame.nanoseconds / 1000, frame.count, frame.wireLength].enumerated() {
            for i in 0..<4 { buffer[4 * n + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
        }
    }

    private init(path: String, interface: String, socket: PacketCaptureSocket, file: Int32) {
        self.path = path
        self.interface = interface
        self.socket = socket
        self.file = file
    }

    /// Sets hwsim0 up and starts capturing it into `path`. Throws when hwsim0 cannot be set up or captured, or the
    /// file cannot be written.
    public static func start(into path: String) throws -> AirCapture {
        do {
            try RouteNetlink.current().setUp("hwsim0")
        } catch {
            throw SystemError("set up", "hwsim0 (the monitor of the air) for the capture into \(path)", reason: "\(error)")
        }
        return try begin(into: path, interface: "hwsim0")
    }

    /// Captures `interface` (up already) into `path` from now on (the tests capture a veth on the host).
    public static func begin(into path: String, interface: String) throws -> AirCapture {
        let socket: PacketCaptureSocket
        do {
            socket = try PacketCaptureSocket(interface: interface, timeoutMilliseconds: 100)
        } catch {
            throw SystemError("capture the air on", "\(interface) into \(path)", reason: "\(error)")
        }
        guard let linkType = linkType(hardwareType: socket.hardwareType) else {
            socket.close()
            throw SystemError("capture the air on", "\(interface) into \(path)",
                              reason: "its link type \(socket.hardwareType) is not one the capture writes (radiotap 803, Ethernet 1, loopback 772)")
        }
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard file >= 0 else {
            let error = SystemError("create", path, errno: errno)
            socket.close()
            throw error
        }
        let header = fileHeader(linkType: linkType)
        guard write(file, header, header.count) == header.count else {
            let error = SystemError("write the pcap header to", path, errno: errno)
            close(file)
            socket.close()
            throw error
        }
        let capture = AirCapture(path: path, interface: interface, socket: socket, file: file)
        capture.reader = try SystemThread.start("capture of \(interface)") { [capture] in capture.readLoop() }
        return capture
    }

    /// Frames until `stop`: each received behind room for its record header and written with it in one call; the
    /// socket's receive timeout (100 ms) lets a stop be seen without a frame to wake it. Once stopping, the frames
    /// already queued on the socket are still written (received without waiting): every frame that reached the
    /// socket before the stop is in the file, however late this thread ran (a loaded machine once stopped a capture
    /// with the first of three frames written, stop 43). The drain is bounded, in case frames come faster than it.
    private func readLoop() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 + Self.snapLength, alignment: 8)
        defer { buffer.deallocate() }
        let body = UnsafeMutableRawBufferPointer(rebasing: buffer[16...])
        var drained = 0
        while true {
            let stopping = state.withLock { $0.stopping }
            if stopping {
                drained += 1
                if drained > Self.drainLimit { return }
            }
            do {
                guard let frame = try socket.receive(into: body, waiting: !stopping) else {
                    if stopping { return }
                    continue
                }
                Self.writeRecordHeader(frame, into: buffer)
                let length = 16 + frame.count
                guard write(file, buffer.baseAddress, length) == length else {
                    let error = SystemError("write a frame to", path, errno: errno)
                    state.withLock { $0.error = "\(error)" }
                    return
                }
                state.withLock { $0.frames += 1 }
            } catch {
                state.withLock { $0.error = "\(error)" }
                return
            }
        }
    }

    /// At most this many frames are written after the stop (those queued on the socket then).
    static let drainLimit = 100_000

    /// What ended the capture early (a socket or write error), nil while it runs or after a clean stop.
    public var failure: String? { state.withLock { $0.error } }

    /// The pcap file's size now (0 when it is not there yet).
    public var fileSize: Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// Ends the capture once the file holds a frame, waiting at most `frameTimeout` for one (a lab's access points
    /// beacon every 100 ms, so one comes soon where there is a radio). Idempotent.
    public func stop(frameTimeout: Duration = .seconds(5)) {
        let deadline = ContinuousClock.now + frameTimeout
        while ContinuousClock.now < deadline, state.withLock({ $0.frames == 0 && $0.error == nil && !$0.stopping }) {
            usleep(20_000)
        }
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        reader?.join()
        close(file)
        socket.close()
    }
}
