import Foundation
import HotspotSystem

/// In the VM, a lab's logs are copied to the results share when it goes down, under the same path the host
/// sees (`hotspot-lab` sets `HOTSPOT_LAB_VM_LOGS` to a host folder that is the share). Regular files only:
/// the control sockets stay behind.
public enum VMLogMirror {
    /// `arguments` without `--logs FOLDER` or `--logs=FOLDER` (the relayed command line: inside the VM the labs log
    /// under the share's folder). Arguments after a `--` are left alone.
    public static func withoutLogsOption(_ arguments: [String]) -> [String] {
        var kept: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "--" {
                kept += arguments[index...]
                break
            }
            if argument == "--logs" {
                index += 2
                continue
            }
            if !argument.hasPrefix("--logs=") { kept.append(argument) }
            index += 1
        }
        return kept
    }

    public static let environmentKey = "HOTSPOT_LAB_VM_LOGS"

    public static func copyOut(_ logDirectory: String) {
        let env = ProcessInfo.processInfo.environment
        guard InVM.isActive, let folder = env[environmentKey], let share = InVM.resultsDirectory, logDirectory.hasPrefix(folder + "/") else { return }
        let relative = String(logDirectory.dropFirst(folder.count + 1))
        for failure in copyTree(from: logDirectory, to: share + "/" + relative) {
            StandardStreams.error("hotspot-lab: a log of \(logDirectory) did not reach the host: \(failure)\n")
        }
    }

    /// Copies the regular files under `source` to the same paths under `target` (folders made as needed, files
    /// there overwritten), with as few file system calls as it takes: the share is 9p, where each call is a round
    /// trip to the host, and FileManager's copy (stat, remove, copy, attributes, one folder check per file) was a
    /// tenth of a radio lab's own CPU under TCG. Each file is opened, written with sendfile(2) from the VM's
    /// tmpfs, and closed. Returns what failed, each naming the file and the errno text.
    static func copyTree(from source: String, to target: String) -> [String] {
        var failures: [String] = []
        var made: Set<String> = []
        func makeFolder(_ path: String) -> Bool {
            if made.contains(path) { return true }
            if mkdir(path, 0o755) != 0 && errno != EEXIST {
                guard errno == ENOENT, makeFolder((path as NSString).deletingLastPathComponent), mkdir(path, 0o755) == 0 || errno == EEXIST else {
                    failures.append("\(SystemError("make the folder", path, errno: errno))")
                    return false
                }
            }
            made.insert(path)
            return true
        }
        guard makeFolder(target), let walker = FileManager.default.enumerator(atPath: source) else { return failures }
        while let item = walker.nextObject() as? String {
            let from = source + "/" + item
            var info = stat()
            guard lstat(from, &info) == 0 else { continue }  // gone since the walk listed it (a socket's file, say)
            let to = target + "/" + item
            switch info.st_mode & S_IFMT {
            case S_IFDIR: _ = makeFolder(to)
            case S_IFREG:
                guard makeFolder((to as NSString).deletingLastPathComponent) else { continue }
                if let failure = copyFile(from, to, mode: info.st_mode & 0o777) { failures.append(failure) }
            default: continue  // the control sockets stay behind
            }
        }
        return failures
    }

    /// One file's contents, nil when done, else what failed.
    private static func copyFile(_ from: String, _ to: String, mode: mode_t) -> String? {
        let input = open(from, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { return "\(SystemError("open", from, errno: errno))" }
        defer { close(input) }
        // A new file takes the log's mode at its creation; an older copy is emptied and given it (a key stays 0600).
        var output = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        if output < 0 && errno == EEXIST {
            output = open(to, O_WRONLY | O_TRUNC | O_CLOEXEC)
            if output >= 0 && fchmod(output, mode) != 0 {
                close(output)
                return "\(SystemError("chmod", to, errno: errno))"
            }
        }
        guard output >= 0 else { return "\(SystemError("create", to, errno: errno))" }
        var failure: String?
        var useSendfile = true
        var buffer: [UInt8] = []
        while true {
            let n: Int
            if useSendfile {
                n = sendfile(output, input, nil, 1 << 20)
                if n < 0 && (errno == EINVAL || errno == ENOSYS) { useSendfile = false; continue }
            } else {
                if buffer.isEmpty { buffer = [UInt8](repeating: 0, count: 1 << 16) }
                let got = read(input, &buffer, buffer.count)
                n = got <= 0 ? got : (write(output, buffer, got) == got ? got : -1)
            }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                failure = "\(SystemError("copy", "\(from) to \(to)", errno: errno))"
                break
            }
        }
        if close(output) != 0 && failure == nil { failure = "\(SystemError("close", to, errno: errno))" }
        return failure
    }
}

/// A report file (`--junit`, `--json`, `--html`) written by a command. Inside the VM the host's folders are
/// read-only (changes land in a throwaway overlay), so the file goes to the results share with a manifest
/// line, and the host process moves it to `path` when the VM has stopped (`deliver`).
public enum ReportFile {
    /// Why a report may not be written at `path` (nil: it may): a folder, or an existing YAML file (a scenario or a
    /// topology: `run --json` takes the next argument as its path, so `--json s.yaml t.yaml` would write the report
    /// over s.yaml). `flag` names the option in the message. Relative paths are taken from `cwd`.
    public static func refusal(flag: String, path: String, cwd: String = userDirectory) -> String? {
        let absolute = absolutePath(path, cwd: cwd)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory) else { return nil }
        if isDirectory.boolValue { return "\(flag) \(path): is a folder; expected a file to write the report to" }
        let ext = (path as NSString).pathExtension.lowercased()
        if ext == "yaml" || ext == "yml" {
            return "\(flag) \(path): is an existing YAML file (a scenario or topology?) that the report would overwrite; expected the report's own path (.\(flag.dropFirst(2)) or any other file that is not YAML)"
        }
        return nil
    }

    /// `refusal` for each (flag, path) given, as a ValidationError-ready message (nil: all may be written).
    public static func refusal(_ outputs: [(String, String?)]) -> String? {
        outputs.lazy.compactMap { flag, path in path.flatMap { refusal(flag: flag, path: $0) } }.first
    }

    /// The directory the user ran the command in (inside the VM the process's own may be another).
    public static var userDirectory: String {
        ProcessInfo.processInfo.environment["HOTSPOT_LAB_HOST_CWD"] ?? FileManager.default.currentDirectoryPath
    }

    /// `path`, relative ones taken from `cwd`.
    static func absolutePath(_ path: String, cwd: String = userDirectory) -> String {
        path.hasPrefix("/") ? path : cwd + "/" + path
    }

    public static func write(_ text: String, to path: String) throws {
        let env = ProcessInfo.processInfo.environment
        let absolute = absolutePath(path)
        guard InVM.isActive, env[VMLogMirror.environmentKey] != nil, let share = InVM.resultsDirectory else {
            try text.write(toFile: absolute, atomically: true, encoding: .utf8)
            return
        }
        let outputs = share + "/outputs"
        try FileManager.default.createDirectory(atPath: outputs, withIntermediateDirectories: true)
        let name = "\(getpid())-\(UInt64(Date().timeIntervalSince1970 * 1e6))"
        try text.write(toFile: outputs + "/" + name, atomically: false, encoding: .utf8)
        let line = name + "\t" + absolute + "\n"
        if let handle = FileHandle(forWritingAtPath: outputs + "/manifest") {
            handle.seekToEndOfFile()
            handle.write(Data(line.utf8))
            handle.closeFile()
        } else {
            try line.write(toFile: outputs + "/manifest", atomically: false, encoding: .utf8)
        }
    }

    /// On the host after a VM run: moves every report the run wrote to where it was asked for.
    public static func deliver(from folder: String) -> [String] {
        let outputs = folder + "/outputs"
        guard let manifest = try? String(contentsOfFile: outputs + "/manifest", encoding: .utf8) else { return [] }
        var delivered: [String] = []
        for line in manifest.split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            let target = parts[1]
            try? FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: target)
            do {
                try FileManager.default.moveItem(atPath: outputs + "/" + parts[0], toPath: target)
                delivered.append(target)
            } catch {
                StandardStreams.error("hotspot-lab: deliver the report \(target) from the VM: \(error)\n")
            }
        }
        return delivered
    }
}
