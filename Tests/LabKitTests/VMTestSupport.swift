import Foundation
import LabKit
import Testing
import TestSupport

/// Shared by the VM test files: can this machine boot the VM, and a line-buffered output collector.
enum VMTestSupport {
    /// qemu and a kernel with mac80211_hwsim are installed, we are root, and we are not already in the VM.
    static var canBoot: Bool {
        guard !InVM.isActive, TestHost.isRoot else { return false }
        guard (try? VMRunner.qemuPath()) != nil, (try? VMKernel.locate()) != nil else { return false }
        return FileManager.default.isExecutableFile(atPath: "/bin/busybox")
    }

    /// Direct children of `pid` (from /proc/PID/task/*/children).
    static func children(of pid: pid_t) -> [pid_t] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task -> [pid_t] in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
            return text.split(separator: " ").compactMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
    }

    static let bootSkipReason: Comment = "needs root, qemu-system-x86, linux-image-amd64 and busybox-static (ci/install-deps.sh), and must run on the host"
}

/// Collects the inner command's output per stream and echoes complete lines with a prefix, live.
final class VMOutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    private var pending = Data()
    let prefix: String
    let echo: Bool

    init(prefix: String = "[vm] ", echo: Bool = true) {
        self.prefix = prefix
        self.echo = echo
    }

    func append(_ stream: VMOutputStream, _ data: Data) {
        lock.lock()
        defer { lock.unlock() }
        if stream == .stdout { out.append(data) } else { err.append(data) }
        guard echo else { return }
        pending.append(data)
        while let newline = pending.firstIndex(of: 0x0A) {
            let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
            pending.removeSubrange(pending.startIndex...newline)
            print(prefix + line)
        }
    }

    var stdout: String { lock.lock(); defer { lock.unlock() }; return String(decoding: out, as: UTF8.self) }
    var stderr: String { lock.lock(); defer { lock.unlock() }; return String(decoding: err, as: UTF8.self) }
}
