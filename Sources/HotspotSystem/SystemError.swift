#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system operation, rendered as `OPERATION OBJECT: CAUSE (ENAME)`, e.g.
/// `create veth lab7-ap0 <-> lab7-sta0: File exists (EEXIST)`.
///
/// Shared by every area that talks to the kernel (processes, sockets, netlink, namespaces).
public struct SystemError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What was attempted, e.g. `create veth`, `spawn`, `bind`.
    public var operation: String
    /// What it was attempted on, e.g. `lab7-ap0 <-> lab7-sta0`, `/usr/sbin/hostapd`. May be empty.
    public var object: String
    /// The errno value (positive). 0 when the cause is not an errno (see `detail`).
    public var errno: Int32
    /// A cause in words when there is no errno, or extra text appended after the errno text.
    public var detail: String?

    public init(_ operation: String, _ object: String = "", errno: Int32, detail: String? = nil) {
        self.operation = operation
        self.object = object
        self.errno = errno
        self.detail = detail
    }

    /// A failure whose cause is not an errno value.
    public init(_ operation: String, _ object: String = "", reason: String) {
        self.init(operation, object, errno: 0, detail: reason)
    }

    /// Captures the calling thread's current `errno`.
    public static func current(_ operation: String, _ object: String = "") -> SystemError {
        SystemError(operation, object, errno: Errno.current)
    }

    public var description: String {
        var head = operation
        if !object.isEmpty { head += " " + object }
        var cause: String
        if errno != 0 {
            cause = Errno.text(errno)
            if let detail, !detail.isEmpty { cause += ", " + detail }
        } else {
            cause = detail ?? "unknown error"
        }
        return head + ": " + cause
    }
}

/// errno helpers: the symbolic name and the strerror text.
public enum Errno {
    /// The calling thread's errno.
    public static var current: Int32 {
        #if canImport(Glibc)
        return Glibc.errno
        #else
        return Darwin.errno
        #endif
    }

    /// `File exists (EEXIST)`.
    public static func text(_ code: Int32) -> String {
        let message = String(cString: strerror(code))
        if let name = name(code) { return "\(message) (\(name))" }
        return "\(message) (errno \(code))"
    }

    /// The symbolic name (`EEXIST`) or nil when unknown.
    public static func name(_ code: Int32) -> String? { names[code] }

    private static let names: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", ESRCH: "ESRCH", EINTR: "EINTR", EIO: "EIO", ENXIO: "ENXIO",
        E2BIG: "E2BIG", ENOEXEC: "ENOEXEC", EBADF: "EBADF", ECHILD: "ECHILD", EAGAIN: "EAGAIN",
        ENOMEM: "ENOMEM", EACCES: "EACCES", EFAULT: "EFAULT", EBUSY: "EBUSY", EEXIST: "EEXIST",
        EXDEV: "EXDEV", ENODEV: "ENODEV", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR", EINVAL: "EINVAL",
        ENFILE: "ENFILE", EMFILE: "EMFILE", ENOTTY: "ENOTTY", EFBIG: "EFBIG", ENOSPC: "ENOSPC",
        ESPIPE: "ESPIPE", EROFS: "EROFS", EMLINK: "EMLINK", EPIPE: "EPIPE", EDOM: "EDOM", ERANGE: "ERANGE",
        EDEADLK: "EDEADLK", ENAMETOOLONG: "ENAMETOOLONG", ENOSYS: "ENOSYS", ENOTEMPTY: "ENOTEMPTY",
        ELOOP: "ELOOP", ENOMSG: "ENOMSG", ENODATA: "ENODATA", ETIME: "ETIME", EPROTO: "EPROTO",
        EOVERFLOW: "EOVERFLOW", ENOTSOCK: "ENOTSOCK", EDESTADDRREQ: "EDESTADDRREQ", EMSGSIZE: "EMSGSIZE",
        EPROTOTYPE: "EPROTOTYPE", ENOPROTOOPT: "ENOPROTOOPT", EPROTONOSUPPORT: "EPROTONOSUPPORT",
        EOPNOTSUPP: "EOPNOTSUPP", EAFNOSUPPORT: "EAFNOSUPPORT", EADDRINUSE: "EADDRINUSE",
        EADDRNOTAVAIL: "EADDRNOTAVAIL", ENETDOWN: "ENETDOWN", ENETUNREACH: "ENETUNREACH",
        ECONNABORTED: "ECONNABORTED", ECONNRESET: "ECONNRESET", ENOBUFS: "ENOBUFS", EISCONN: "EISCONN",
        ENOTCONN: "ENOTCONN", ETIMEDOUT: "ETIMEDOUT", ECONNREFUSED: "ECONNREFUSED", EHOSTDOWN: "EHOSTDOWN",
        EHOSTUNREACH: "EHOSTUNREACH", EALREADY: "EALREADY", EINPROGRESS: "EINPROGRESS",
        ECANCELED: "ECANCELED", ERFKILL: "ERFKILL",
    ]
}

/// Runs a call returning -1 on failure and throws `SystemError` with errno text. Retries on EINTR.
@discardableResult
public func systemCall<T: BinaryInteger>(
    _ operation: String, _ object: String = "", _ body: () -> T
) throws -> T {
    while true {
        let result = body()
        if result == -1 {
            let code = Errno.current
            if code == EINTR { continue }
            throw SystemError(operation, object, errno: code)
        }
        return result
    }
}
