import Foundation
import HotspotSystem
import Netlink

/// The capture of the air: tcpdump on `hwsim0`, the monitor interface mac80211_hwsim feeds with every radio's
/// frames, written to a pcap file. Used by a radio scenario (its `air.pcap`) and by the hwsim self-test.
///
/// Two lessons are kept here, in one place, because each once made a short run's capture empty (the file holds
/// the 24-byte pcap header only):
/// - `--immediate-mode`: without it libpcap hands tcpdump its frames a buffer at a time (TPACKET_V3, a block
///   retired after up to 1 s), and a run of two or three seconds under TCG on a loaded machine could end before
///   the first buffer reached the file (the self-test in CI run 35: "saw 0 frames").
/// - `stop` waits for a frame in the file before it ends tcpdump: a readiness wait, bounded, never a fixed sleep.
public final class AirCapture: @unchecked Sendable {  // @unchecked: lets only; ChildProcess locks its own state
    public let process: ChildProcess
    /// The pcap file.
    public let path: String
    /// tcpdump's own output (`listening on ...`, its counts at the end).
    public let log: String
    /// True once tcpdump said it was listening (`start` waits for it).
    public let listening: Bool

    /// The size of a pcap file's global header: a file no larger holds no frame.
    public static let pcapHeaderSize = 24

    private init(process: ChildProcess, path: String, log: String, listening: Bool) {
        self.process = process
        self.path = path
        self.log = log
        self.listening = listening
    }

    /// Sets hwsim0 up and starts tcpdump on it into `path` (its output into `path.log`), then waits up to
    /// `listenTimeout` for tcpdump to say it is listening. Throws when hwsim0 cannot be set up, tcpdump cannot be
    /// started, or it ends before it listens; after the timeout it returns with `listening` false (the caller
    /// decides whether a capture that may miss the start will do).
    public static func start(into path: String, tcpdump: String,
                             listenTimeout: Duration = .seconds(30)) throws -> AirCapture {
        do {
            try RouteNetlink.current().setUp("hwsim0")
        } catch {
            throw SystemError("set up", "hwsim0 (the monitor of the air) for the capture into \(path)", reason: "\(error)")
        }
        return try begin(into: path, tcpdump: tcpdump, listenTimeout: listenTimeout)
    }

    /// `start` once hwsim0 is up (the unit tests run it with a stand-in for tcpdump).
    static func begin(into path: String, tcpdump: String, listenTimeout: Duration) throws -> AirCapture {
        let log = path + ".log"
        let child = try ChildProcess.spawn(ProcessConfiguration(tcpdump, ["-i", "hwsim0", "--immediate-mode", "-U", "-w", path],
                                                                stdout: .file(log), stderr: .file(log)))
        let deadline = ContinuousClock.now + listenTimeout
        while !(readSmallFile(log)?.contains("listening on") ?? false), ContinuousClock.now < deadline {
            if let status = try? child.poll() {
                throw SystemError("capture the air with", "\(tcpdump) on hwsim0 into \(path)",
                                  reason: "tcpdump ended (\(status)) before it listened: \(readSmallFile(log)?.suffix(600) ?? "")")
            }
            usleep(20_000)
        }
        return AirCapture(process: child, path: path, log: log,
                          listening: readSmallFile(log)?.contains("listening on") ?? false)
    }

    /// The pcap file's size now (0 when it is not there yet).
    public var fileSize: Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// Ends tcpdump once the file holds a frame past its header, waiting at most `frameTimeout` for one (a lab's
    /// access points beacon every 100 ms, so one comes soon where there is a radio), then gives it `grace` to
    /// write out and exit before it is killed.
    public func stop(frameTimeout: Duration = .seconds(5), grace: Duration = .seconds(2)) {
        let deadline = ContinuousClock.now + frameTimeout
        while ContinuousClock.now < deadline, (try? process.poll()) == nil, fileSize <= Self.pcapHeaderSize {
            usleep(20_000)
        }
        _ = try? process.terminate(grace: grace)
    }
}
