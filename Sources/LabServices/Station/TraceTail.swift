import Foundation
import HotspotProtocol
import HotspotSystem

/// hotspotd's trace file read incrementally: each refresh reads only the bytes appended since the last one and
/// parses only the new complete lines. The scenario steps poll the trace every 10-20 ms; reading and parsing the
/// whole file each time was the lab's own largest CPU cost in the VM, taken from the system under test
/// (bench/README.md, "bench profile"). A file that shrank (rotated, or hotspotd restarted it) is read again from
/// its start. Thread-safe.
public final class TraceTail: @unchecked Sendable {  // @unchecked: the read position and lines are touched only with `lock` held
    public let path: String
    private let lock = HotspotSystem.Mutex()
    /// One entry per line, nil for a line that is not a JSON object (line numbers stay the file's).
    private var lines: [TraceEntry?] = []
    private var offset: off_t = 0
    private var partial: [UInt8] = []
    private var identity: (dev_t, ino_t)?

    public init(path: String) { self.path = path }

    /// The records of lines `from` (0-based) on; unparseable lines skipped.
    public func records(from: Int = 0) -> [TraceEntry] {
        read(from: from).records
    }

    /// The records of lines `from` (0-based) on, and the number of complete lines they end at (where the next read
    /// starts), in one refresh: a line appended meanwhile is in the next read, never skipped or read twice.
    public func read(from: Int) -> (records: [TraceEntry], lines: Int) {
        lock.withLock {
            refresh()
            return (from < lines.count ? lines[max(0, from)...].compactMap { $0 } : [], lines.count)
        }
    }

    /// The number of complete lines so far.
    public func lineCount() -> Int {
        lock.withLock {
            refresh()
            return lines.count
        }
    }

    private func refresh() {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return }
        if let identity, identity != (info.st_dev, info.st_ino) || info.st_size < offset {
            lines = []
            offset = 0
            partial = []
        }
        identity = (info.st_dev, info.st_ino)
        guard info.st_size > offset else { return }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = pread(fd, &buffer, buffer.count, offset)
            guard n > 0 else { break }
            offset += off_t(n)
            partial.append(contentsOf: buffer[0..<n])
        }
        guard let lastNewline = partial.lastIndex(of: UInt8(ascii: "\n")) else { return }
        for line in partial[...lastNewline].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            lines.append(TraceEntry(line: line))
        }
        partial.removeSubrange(...lastNewline)
    }
}
