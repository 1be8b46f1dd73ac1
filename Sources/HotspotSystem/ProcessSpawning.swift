#if canImport(Glibc)
import Glibc
#endif
import CSystemShims

/// posix_spawn with file actions built from a `ProcessConfiguration`: the package's one call of posix_spawn.
struct Spawner {
    let configuration: ProcessConfiguration

    init(_ configuration: ProcessConfiguration) { self.configuration = configuration }

    func spawn() throws -> ChildProcess {
        let name = configuration.executable
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        var parentCloses: [Int32] = []
        var readEnds: [Int32?] = [nil, nil]
        var ok = false
        defer {
            for fd in parentCloses { close(fd) }
            if !ok { for fd in readEnds.compactMap({ $0 }) { close(fd) } }
        }

        if let fd = configuration.stdinDescriptor {
            posix_spawn_file_actions_adddup2(&actions, fd, 0)
        } else if !configuration.inheritStdin {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        for (index, output) in [configuration.stdout, configuration.stderr].enumerated() {
            let target = Int32(index + 1)
            switch output {
            case .inherit:
                break
            case .discard:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .descriptor(let fd):
                posix_spawn_file_actions_adddup2(&actions, fd, target)
            case .file(let path, let append):
                let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)
                let fd = open(path, flags, 0o644)
                if fd < 0 { throw SystemError.current("open log file for \(name):", path) }
                parentCloses.append(fd)
                posix_spawn_file_actions_adddup2(&actions, fd, target)
            case .pipe:
                var ends: [Int32] = [-1, -1]
                if hsl_pipe_cloexec(&ends) != 0 { throw SystemError.current("create pipe for", name) }
                readEnds[index] = ends[0]
                parentCloses.append(ends[1])
                posix_spawn_file_actions_adddup2(&actions, ends[1], target)
            }
        }
        hsl_spawn_file_actions_addclosefrom(&actions, 3)
        if let dir = configuration.workingDirectory {
            hsl_spawn_file_actions_addchdir(&actions, dir)
        }

        // Default signal dispositions and an empty mask in the child.
        // Signals this process was started with ignored stay ignored (`nohup`), as exec keeps them.
        var defaults = SignalService.childDefaultSignals([SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM])
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if configuration.newProcessGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = ([name] + configuration.arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var argvNull = argv + [nil]

        var envStrings: [UnsafeMutablePointer<CChar>?]?
        if let environment = configuration.environment {
            envStrings = environment.sorted(by: { $0.key < $1.key }).map { strdup("\($0.key)=\($0.value)") }
        }
        defer { envStrings?.forEach { free($0) } }
        var envNull = (envStrings ?? []) + [nil]

        var pid: pid_t = 0
        let result: Int32 = argvNull.withUnsafeMutableBufferPointer { argvBuf in
            envNull.withUnsafeMutableBufferPointer { envBuf in
                let envp: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = envStrings == nil ? environ : envBuf.baseAddress!
                if name.contains("/") {
                    return posix_spawn(&pid, name, &actions, &attributes, argvBuf.baseAddress!, envp)
                } else {
                    return posix_spawnp(&pid, name, &actions, &attributes, argvBuf.baseAddress!, envp)
                }
            }
        }
        if result != 0 {
            var detail: String?
            if let dir = configuration.workingDirectory { detail = "working directory " + dir }
            throw SystemError("spawn", configuration.commandLine, errno: result, detail: detail)
        }
        ok = true
        return ChildProcess(pid: pid, configuration: configuration, stdoutFD: readEnds[0], stderrFD: readEnds[1])
    }
}

/// One thread that lives as long as the process and runs what it is given, one job at a time (the caller
/// waits). `PR_SET_PDEATHSIG` fires when the *thread* that started a child ends, not the process: children
/// that must die with this process, and only with it, are started here.
final class LifelineThread: @unchecked Sendable {  // @unchecked: `queue` and `started` are touched only with `lock` held
    static let shared = LifelineThread()

    private final class Job: @unchecked Sendable {  // @unchecked: `finished` is touched only with the thread's `lock` held
        let work: () -> Void
        var finished = false
        init(_ work: @escaping () -> Void) { self.work = work }
    }

    private let lock = Mutex()
    private let wake = Condition()
    private var queue: [Job] = []
    private var started = false

    /// Runs `body` on the lifeline thread and returns its result.
    func run<T>(_ body: @escaping () throws -> T) throws -> T {
        let box = LifelineResult<T>()
        let job = Job { box.result = Result { try body() } }
        try lock.withLock {
            try startIfNeeded()
            queue.append(job)
            wake.broadcast()
            while !job.finished { wake.wait(lock, timeout: .seconds(1)) }
        }
        guard let result = box.result else {
            throw SystemError("run on the lifeline thread", "job", reason: "finished without a result")
        }
        return try result.get()
    }

    /// Call with `lock` held.
    private func startIfNeeded() throws {
        if started { return }
        try SystemThread.detach("the lifeline thread") { [self] in loop() }
        started = true
    }

    private func loop() {
        lock.lock()
        while true {
            guard let job = queue.first else {
                wake.wait(lock, timeout: .seconds(60))
                continue
            }
            queue.removeFirst()
            lock.unlock()
            job.work()
            lock.lock()
            job.finished = true
            wake.broadcast()
        }
    }
}

private final class LifelineResult<T>: @unchecked Sendable {  // @unchecked: written by the job, read after it finished (under `lock`)
    var result: Result<T, any Error>?
}
