#if canImport(Glibc)
import Glibc
#endif
import Testing

// What every test target shares: the one root check, and the tags that select suites.

/// The test environment.
public enum TestHost {
    /// True when the tests run as root (namespaces, veth, nftables, policy routing, SO_MARK). The one root
    /// check of the tests: gate with `.requiresRoot` (or `.enabled(if: TestHost.isRoot && ...)`).
    public static let isRoot = geteuid() == 0
}

extension Trait where Self == ConditionTrait {
    /// Runs only as root; as another user the test or suite is reported as skipped.
    public static var requiresRoot: Self { .enabled(if: TestHost.isRoot, "needs root") }

    /// Runs only as root; `reason` says what for.
    public static func requiresRoot(_ reason: Comment) -> Self { .enabled(if: TestHost.isRoot, reason) }
}

extension Tag {
    /// Needs root (namespaces, veth, nftables ...).
    @Tag public static var root: Self
    /// Runs inside the hotspot-lab VM: `VMSuiteTests` boots one VM and runs every suite with this tag there
    /// (`InVM.suiteTag`; the suite's type name starts with `InVM` too, see docs/VM.md).
    @Tag public static var inVM: Self
    /// Depends on timing (deadlines, timeouts, loopback servers): `ci/under-load.sh` runs every suite with
    /// this tag again beside a CPU hog (docs/RELIABILITY.md).
    @Tag public static var timingSensitive: Self
}

/// A short unique prefix for this test process's objects: `hslt` + 4 hex digits of the pid + a letter.
public func testPrefix(_ letter: String) -> String {
    "hslt" + String(String(UInt32(getpid()) & 0xffff, radix: 16).suffix(4)) + letter
}

/// Reads `fd` (a child's standard output pipe) until its first newline, end of file or `timeout`; returns what
/// was read (the first line with its newline, or less). For the root tests that wait for a paused lab's
/// `PAUSED <prefix>` line.
public func readFirstLine(fd: Int32, timeout: Duration) -> String {
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 256)
    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while !output.contains(UInt8(ascii: "\n")), clock.now < deadline {
        if poll(&pfd, 1, 200) > 0 {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            output += buffer[0..<count]
        }
    }
    return String(decoding: output, as: UTF8.self)
}
