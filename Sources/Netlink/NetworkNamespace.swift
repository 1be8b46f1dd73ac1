#if canImport(Glibc)
import Glibc
#endif
import CSystemShims
import HotspotSystem

/// Runs work on a dedicated, short-lived OS thread. Namespace changes (`unshare`, `setns`) happen only
/// there, never on a Swift concurrency thread; the thread ends when the work returns.
public enum DedicatedThread {
    private final class Box: @unchecked Sendable {  // @unchecked: handed to the one thread that runs it
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Runs `body` on a new pthread and blocks until it finishes.
    public static func run<T>(_ body: @escaping () throws -> T) throws -> T {
        try runAll([body])[0].get()
    }

    /// Runs `body` on a new pthread without blocking the calling task's thread.
    public static func runAsync<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await SystemThread.runAsync("namespace work", body)
    }

    /// Runs each body on its own new pthread, concurrently, and waits for all of them.
    public static func runAll<T>(_ bodies: [() throws -> T]) throws -> [Result<T, any Error>] {
        let slots = bodies.map { _ in ResultSlot<T>() }
        var threads: [SystemThread] = []
        var startError: (any Error)?
        for (body, slot) in zip(bodies, slots) {
            let box = Box { slot.result = Result { try body() } }
            do {
                threads.append(try SystemThread.start("namespace work") { box.body() })
            } catch {
                startError = error
                break
            }
        }
        for thread in threads { thread.join() }
        if let startError { throw startError }
        return slots.map { $0.result! }
    }
}

final class ResultSlot<T>: @unchecked Sendable {  // @unchecked: written by its thread, read after the join
    var result: Result<T, any Error>?
}

/// A named network namespace compatible with iproute2: bind-mounted at `/run/netns/NAME`, so
/// `ip netns exec NAME` and `nsenter --net=/run/netns/NAME` work on it. Holds an open descriptor of the
/// namespace and an rtnetlink socket opened inside it (usable from any thread).
public final class NetworkNamespace: @unchecked Sendable {  // @unchecked: lets only (a descriptor and a socket that serialises its own use)
    public static let directory = "/run/netns"

    public let name: String
    public let path: String
    let descriptor: Int32
    private let socket: MNLSocket
    /// rtnetlink operations inside this namespace.
    public let route: RouteNetlink
    private let lock = Mutex()
    private var released = false

    init(name: String, descriptor: Int32, socket: MNLSocket) {
        self.name = name
        path = NetworkNamespace.directory + "/" + name
        self.descriptor = descriptor
        self.socket = socket
        route = RouteNetlink(socket: socket)
    }

    deinit { release() }

    /// Runs `body` with a duplicate of the namespace's descriptor (for IFLA_NET_NS_FD, SET_WIPHY_NETNS), closed
    /// after it. The duplicate is made under the lock `release()` takes: once a teardown on another thread (a stop
    /// signal's, which does not wait for a lab's workers) has closed the namespace's own descriptor, its number may
    /// already be another lab's, so this throws instead of handing the number on.
    public func withDescriptor<T>(_ body: (Int32) throws -> T) throws -> T {
        let fd = try duplicateDescriptor()
        defer { close(fd) }
        return try body(fd)
    }

    /// A close-on-exec duplicate of the descriptor, or an error naming the namespace once it was released.
    func duplicateDescriptor() throws -> Int32 {
        let fd: Int32 = lock.withLock { released ? -2 : fcntl(descriptor, F_DUPFD_CLOEXEC, 0) }
        if fd == -2 { throw SystemError("use the descriptor of", "netns \(name)", reason: "the namespace was released (its lab is being torn down)") }
        if fd < 0 { throw SystemError.current("duplicate the descriptor of", "netns \(name)") }
        return fd
    }

    /// Creates one namespace with `lo` up.
    public static func create(_ name: String) throws -> NetworkNamespace {
        try createMany([name])[0]
    }

    /// Creates several namespaces on one dedicated thread (each `unshare(CLONE_NEWNET)` + bind mount of
    /// `/proc/thread-self/ns/net`), each with `lo` up. On failure, the ones created by this call are removed.
    public static func createMany(_ names: [String]) throws -> [NetworkNamespace] {
        for name in names { try validate(name) }
        try prepareDirectory()
        // Large batches use two threads (namespace setup is mostly per-namespace kernel work).
        let threadCount = names.count >= 16 ? 2 : 1
        let chunkSize = (names.count + threadCount - 1) / max(threadCount, 1)
        let chunks = stride(from: 0, to: names.count, by: max(chunkSize, 1)).map { Array(names[$0..<min($0 + chunkSize, names.count)]) }
        let results = try DedicatedThread.runAll(chunks.map { chunk in
            { () throws -> [NetworkNamespace] in
                var created: [NetworkNamespace] = []
                do {
                    for name in chunk { created.append(try createOnThisThread(name)) }
                    return created
                } catch {
                    for namespace in created { try? namespace.delete() }
                    throw error
                }
            }
        })
        var all: [NetworkNamespace] = []
        var firstError: (any Error)?
        for result in results {
            switch result {
            case .success(let namespaces): all += namespaces
            case .failure(let error): if firstError == nil { firstError = error }
            }
        }
        if let firstError {
            for namespace in all { try? namespace.delete() }
            throw firstError
        }
        return all
    }

    /// `createMany` for async callers: the work runs on dedicated threads, the task's thread is not blocked.
    public static func createManyAsync(_ names: [String]) async throws -> [NetworkNamespace] {
        let list = names
        let created = try await DedicatedThread.runAsync { () throws -> UncheckedBox<[NetworkNamespace]> in  // namespaces are @unchecked Sendable themselves
            UncheckedBox(try createMany(list) as [NetworkNamespace])
        }
        return created.value
    }

    /// Opens an existing named namespace (ours or made by `ip netns add`).
    public static func open(_ name: String) throws -> NetworkNamespace {
        try validate(name)
        let path = directory + "/" + name
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw SystemError.current("open netns", name) }
        do {
            let socket = try DedicatedThread.run { () throws -> MNLSocket in
                if hsl_setns(fd, hsl_clone_newnet()) != 0 { throw SystemError.current("enter netns", name) }
                return try MNLSocket()
            }
            return NetworkNamespace(name: name, descriptor: fd, socket: socket)
        } catch {
            close(fd)
            throw error
        }
    }

    /// Removes a named namespace's mount point (the namespace dies when nothing else holds it).
    /// A missing name is not an error when `missingOK`.
    public static func delete(_ name: String, missingOK: Bool = true) throws {
        try validate(name)
        let path = directory + "/" + name
        if hsl_umount_detach(path) != 0 {
            let code = Errno.current
            if code == ENOENT && missingOK { return }
            if code != EINVAL { throw SystemError("delete netns", name, errno: code) }
        }
        if unlink(path) != 0 {
            let code = Errno.current
            if !(code == ENOENT && missingOK) { throw SystemError("delete netns", name, errno: code) }
        }
    }

    /// Names under /run/netns.
    public static func list() -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String in
                let bytes = raw.prefix(while: { $0 != 0 })
                return String(decoding: bytes, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Runs `body` on a dedicated thread that has entered this namespace (sockets made there stay in it).
    /// Never enters the namespace on the calling thread.
    public func runInside<T>(_ body: @escaping () throws -> T) throws -> T {
        // The duplicate is the caller's: `run` joins its thread, so it is closed here whether or not the thread started.
        let fd = try duplicateDescriptor()
        defer { close(fd) }
        let name = name
        return try DedicatedThread.run {
            if hsl_setns(fd, hsl_clone_newnet()) != 0 { throw SystemError.current("enter netns", name) }
            return try body()
        }
    }

    /// Writes `value` to each of `paths` (`/proc/sys/net/...`: such sysctls belong to the writing thread's namespace,
    /// so the write happens from inside, on a dedicated thread).
    public func writeSysctls(_ paths: [String], _ value: String) throws {
        let name = name
        try runInside {
            for path in paths {
                let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
                guard fd >= 0 else { throw SystemError.current("open", path) }
                defer { Glibc.close(fd) }
                let bytes = Array((value + "\n").utf8)
                guard Glibc.write(fd, bytes, bytes.count) == bytes.count else { throw SystemError.current("write \(value) to \(path) in", name) }
            }
        }
    }

    /// Unmounts and unlinks this namespace and releases our descriptor and socket.
    public func delete() throws {
        release()
        try NetworkNamespace.delete(name)
    }

    /// Closes the descriptor and socket (the mount keeps the namespace alive).
    public func release() {
        lock.withLock {
            if released { return }
            released = true
            socket.close()
            close(descriptor)
        }
    }

    // MARK: internals

    static func validate(_ name: String) throws {
        if name.isEmpty || name.contains("/") || name == "." || name == ".." || name.utf8.count > 200 {
            throw SystemError("use netns name", "'\(name)'", reason: "expected a non-empty name without '/'")
        }
    }

    /// Whether /run/netns is prepared (the lock's state: preparing is done with it held, once per process).
    private static let directoryPrepared = Locked(false)

    /// Like iproute2: /run/netns exists and is a shared mount, so the bind mounts propagate to other mount
    /// namespaces.
    static func prepareDirectory() throws {
        try directoryPrepared.withLock { prepared in
            if prepared { return }
            if mkdir("/run", 0o755) != 0 && Errno.current != EEXIST { throw SystemError.current("create directory", "/run") }
            if mkdir(directory, 0o755) != 0 && Errno.current != EEXIST { throw SystemError.current("create directory", directory) }
            var madeMount = false
            while hsl_make_shared_rec(directory) != 0 {
                let code = Errno.current
                if code != EINVAL || madeMount { throw SystemError("make shared mount", directory, errno: code) }
                if hsl_make_self_bind(directory) != 0 { throw SystemError.current("bind mount", directory) }
                madeMount = true
            }
            prepared = true
        }
    }

    /// Must run on a dedicated thread: moves the thread into a fresh namespace and pins it by name.
    private static func createOnThisThread(_ name: String) throws -> NetworkNamespace {
        let path = directory + "/" + name
        let placeholder = Glibc.open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0)
        if placeholder < 0 { throw SystemError.current("create netns", name) }
        close(placeholder)
        do {
            if hsl_unshare(hsl_clone_newnet()) != 0 { throw SystemError.current("create netns", name) }
            if hsl_bind_mount("/proc/thread-self/ns/net", path) != 0 { throw SystemError.current("create netns", name) }
        } catch {
            unlink(path)
            throw error
        }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let error = SystemError.current("open netns", name)
            try? delete(name)
            throw error
        }
        let socket: MNLSocket
        do {
            socket = try MNLSocket()
        } catch {
            close(fd)
            try? delete(name)
            throw error
        }
        let namespace = NetworkNamespace(name: name, descriptor: fd, socket: socket)
        do {
            try namespace.route.setUp("lo")
        } catch {
            try? namespace.delete()
            throw error
        }
        return namespace
    }
}
