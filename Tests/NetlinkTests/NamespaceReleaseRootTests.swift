import CSystemShims
import Glibc
import HotspotSystem
@testable import Netlink
import Testing
import TestSupport

/// A namespace released on one thread (a stop signal's teardown, which does not wait for a lab's workers) while
/// another still uses it: the released descriptor's number may already be another namespace's, and must never be
/// entered or handed to the kernel. Root (namespaces).
@Suite("Namespaces released under a user (root)", .tags(.root), .requiresRoot, .serialized)
struct NamespaceReleaseRootTests {
    /// The network namespace of the calling thread, by inode.
    static func netInode() throws -> UInt64 {
        var info = stat()
        guard stat("/proc/thread-self/ns/net", &info) == 0 else { throw SystemError.current("stat", "/proc/thread-self/ns/net") }
        return UInt64(info.st_ino)
    }

    @Test("after release(), runInside and move(to:) throw naming the namespace, even with its number now another namespace's (the control: before release both work)")
    func releasedNumberNeverUsed() throws {
        let prefix = testPrefix("q")
        let b = try NetworkNamespace.create(prefix + "b")
        defer { try? b.delete() }
        let bInode = try b.runInside { try Self.netInode() }
        try b.route.createVeth(prefix + "v0", peer: prefix + "v1")  // a link that may change namespace (a bridge may not)
        // Another test's thread may take the freed number first (tests run in parallel in this process): a few tries,
        // each with a new namespace, until b's duplicate holds the released one's number.
        var checked = false
        for attempt in 0..<10 where !checked {
            let a = try NetworkNamespace.create(prefix + "a\(attempt)")
            defer { try? a.delete() }
            // The control: before release, a is entered and a link moves into it (and back).
            let aInode = try a.runInside { try Self.netInode() }
            #expect(aInode != bInode)
            try b.route.move(prefix + "v0", to: a)
            try a.route.move(prefix + "v0", to: b)
            let owned = try b.withDescriptor { fcntl($0, F_DUPFD_CLOEXEC, 0) }
            try #require(owned >= 0, "dup: \(String(cString: strerror(errno)))")
            defer { close(owned) }
            let number = a.descriptor
            a.release()
            let reused = fcntl(owned, F_DUPFD_CLOEXEC, number)
            guard reused == number else {
                if reused >= 0 { close(reused) }
                continue
            }
            defer { close(reused) }
            let entered = try? a.runInside { try Self.netInode() }
            #expect(entered == nil, "released \(a.name) was entered through its reused number: inode \(entered ?? 0) (b's is \(bInode))")
            do {
                try b.route.move(prefix + "v0", to: a)
                Issue.record("a link moved to released \(a.name) went through its reused number (into \(b.name)) instead of failing")
            } catch let error as SystemError {
                #expect("\(error)".contains(a.name) && "\(error)".contains("released"), "\(error)")
            }
            checked = true
        }
        #expect(checked, "no try got the released descriptor's number back")
    }
}
