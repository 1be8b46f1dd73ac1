import Foundation

/// Why the VM runner could not boot, run or finish. Each case renders as one message that names the
/// operation, the object and the cause, and, when there is one, the command that fixes it.
public enum VMError: Error, CustomStringConvertible, Sendable, Equatable {
    /// No kernel image (or an explicit `--kernel` that does not exist).
    case kernelMissing(path: String?, detail: String)
    /// The kernel exists but lacks a module the VM needs (virtio, 9p, mac80211_hwsim, ...).
    case moduleMissing(module: String, kernelVersion: String)
    /// A host tool (qemu, busybox, ...) is not installed.
    case toolMissing(tool: String, package: String)
    /// A system call or helper tool failed while preparing the VM.
    case system(operation: String, object: String, cause: String)
    /// The VM did not start the inner command within the boot timeout (hang or panic at boot).
    case bootTimeout(seconds: Double, consoleTail: String)
    /// The inner command did not finish within the run timeout.
    case runTimeout(seconds: Double, consoleTail: String)
    /// qemu ended without the inner command's exit code (kernel panic, init failure, qemu error).
    case vmDied(qemuStatus: String, consoleTail: String)
    /// Interrupted (Ctrl-C / SIGTERM): the VM was stopped.
    case interrupted

    public var description: String {
        switch self {
        case .kernelMissing(let path, let detail):
            let what = path.map { "kernel image \($0)" } ?? "a kernel image with mac80211_hwsim"
            return "find \(what): \(detail). Install one with: apt-get install -y linux-image-amd64"
        case .moduleMissing(let module, let version):
            return "find module \(module) in kernel \(version): not in /lib/modules/\(version)/modules.dep "
                + "nor modules.builtin. Use a kernel that ships it (apt-get install -y linux-image-amd64)"
        case .toolMissing(let tool, let package):
            return "find \(tool): not installed. Install it with: apt-get install -y \(package)"
        case .system(let operation, let object, let cause):
            return "\(operation) \(object): \(cause)"
        case .bootTimeout(let seconds, let tail):
            return "boot VM: the inner command did not start within \(Self.format(seconds)) s "
                + "(VM hung or panicked); last console lines:\n\(tail)"
        case .runTimeout(let seconds, let tail):
            return "run in VM: no exit after \(Self.format(seconds)) s, VM stopped; last console lines:\n\(tail)"
        case .vmDied(let status, let tail):
            return "run in VM: qemu ended (\(status)) without the inner command's exit code "
                + "(kernel panic, init failure or qemu error); last console lines:\n\(tail)"
        case .interrupted:
            return "run in VM: interrupted, VM stopped"
        }
    }

    static func format(_ seconds: Double) -> String { String(format: "%.1f", seconds) }

    static func errno(_ operation: String, _ object: String, _ code: Int32 = Foundation.errno) -> VMError {
        .system(operation: operation, object: object, cause: VMError.errnoText(code))
    }

    static func errnoText(_ code: Int32) -> String {
        let names: [Int32: String] = [
            EPERM: "EPERM", ENOENT: "ENOENT", EACCES: "EACCES", EEXIST: "EEXIST", ENOTDIR: "ENOTDIR",
            EISDIR: "EISDIR", EINVAL: "EINVAL", ENOSPC: "ENOSPC", EROFS: "EROFS", EBUSY: "EBUSY",
            ENOEXEC: "ENOEXEC", EAGAIN: "EAGAIN", EINTR: "EINTR", EIO: "EIO", ENOMEM: "ENOMEM",
        ]
        let text = String(cString: strerror(code))
        return names[code].map { "\(text) (\($0))" } ?? "\(text) (errno \(code))"
    }
}
