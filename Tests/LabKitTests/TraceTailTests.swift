import Foundation
import HotspotProtocol
import Testing
@testable import LabKit
@testable import LabServices

/// The incremental trace reader the scenario steps poll.
@Suite("trace tail")
struct TraceTailTests {
    @Test("appended lines are read once, a half-written line waits for its newline, line numbers count bad lines, a new file starts over")
    func incremental() throws {
        let path = NSTemporaryDirectory() + "hslt-tail-\(getpid()).jsonl"
        defer { unlink(path) }
        FileManager.default.createFile(atPath: path, contents: Data())
        let tail = TraceTail(path: path)
        func append(_ text: String) throws {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            handle.seekToEndOfFile()
            handle.write(Data(text.utf8))
            try handle.close()
        }
        #expect(tail.lineCount() == 0)
        try append("{\"seq\":1}\nnot json\n{\"seq\":")
        #expect(tail.lineCount() == 2)
        #expect(tail.records().map(\.seq) == [1])
        try append("3}\n\n{\"seq\":4}\n")
        #expect(tail.lineCount() == 4)
        #expect(tail.records(from: 2).map(\.seq) == [3, 4])
        #expect(tail.records(from: 9).isEmpty)
        // read(from:) gives the lines after `from` and where the next read starts: the unparseable line counts as a
        // line, not as a record, so a reader that kept the records' count would read `{"seq":4}` twice.
        try append("nor this\n{\"seq\":5}\n")
        let appended = tail.read(from: 4)
        #expect(appended.records.map(\.seq) == [5] && appended.lines == 6, "\(appended.records.map(\.seq)) \(appended.lines)")
        #expect(tail.read(from: appended.lines).records.isEmpty && tail.read(from: appended.lines).lines == 6)
        // Replaced by a shorter file (hotspotd restarted its trace): read from the start.
        unlink(path)
        FileManager.default.createFile(atPath: path, contents: Data("{\"seq\":7}\n".utf8))
        #expect(tail.records().map(\.seq) == [7])
        #expect(tail.lineCount() == 1)
    }
}
