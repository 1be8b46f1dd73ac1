import Foundation

/// A distribution kernel the VM boots: its image and the module tree of the same version.
public struct VMKernel: Sendable, Equatable {
    /// `/boot/vmlinuz-<version>` (bzImage).
    public var imagePath: String
    /// e.g. `6.1.0-56-amd64`.
    public var version: String
    /// `/lib/modules/<version>`.
    public var modulesDirectory: String

    /// The modules the initramfs loads before it can mount the host root (order resolved from
    /// `modules.dep`, dependencies first).
    public static let bootModules = ["virtio_pci", "9pnet_virtio", "9p", "virtio_console", "overlay"]
    /// Modules that must exist in the tree for the lab (checked, loaded later inside the VM).
    public static let labModules = ["mac80211_hwsim", "cfg80211", "mac80211"]

    public init(imagePath: String, version: String, modulesDirectory: String) {
        self.imagePath = imagePath
        self.version = version
        self.modulesDirectory = modulesDirectory
    }

    /// The kernel at `path`, or (nil) the newest `/boot/vmlinuz-*` whose module tree has mac80211_hwsim.
    public static func locate(_ path: String? = nil, bootDirectory: String = "/boot", modulesRoot: String = "/lib/modules") throws -> VMKernel {
        let fm = FileManager.default
        if let path {
            guard fm.fileExists(atPath: path) else {
                throw VMError.kernelMissing(path: path, detail: "No such file or directory (ENOENT)")
            }
            let base = (path as NSString).lastPathComponent
            guard base.hasPrefix("vmlinuz-") else {
                throw VMError.kernelMissing(path: path, detail: "expected a file named vmlinuz-<version> so that /lib/modules/<version> can be found")
            }
            let version = String(base.dropFirst("vmlinuz-".count))
            let modules = "\(modulesRoot)/\(version)"
            guard fm.fileExists(atPath: "\(modules)/modules.dep") else {
                throw VMError.kernelMissing(path: path, detail: "no module tree \(modules)/modules.dep for version \(version)")
            }
            return VMKernel(imagePath: path, version: version, modulesDirectory: modules)
        }
        let names = (try? fm.contentsOfDirectory(atPath: bootDirectory)) ?? []
        let versions = names.filter { $0.hasPrefix("vmlinuz-") }.map { String($0.dropFirst("vmlinuz-".count)) }
            .sorted { $0.compare($1, options: .numeric) == .orderedDescending }
        if versions.isEmpty {
            throw VMError.kernelMissing(path: nil, detail: "no \(bootDirectory)/vmlinuz-* found")
        }
        for version in versions {
            let kernel = VMKernel(imagePath: "\(bootDirectory)/vmlinuz-\(version)", version: version, modulesDirectory: "\(modulesRoot)/\(version)")
            if let index = try? ModuleIndex(kernel: kernel), index.has("mac80211_hwsim") { return kernel }
        }
        throw VMError.kernelMissing(path: nil, detail: "none of \(versions.map { "vmlinuz-\($0)" }.joined(separator: ", ")) in \(bootDirectory) has mac80211_hwsim in its module tree")
    }
}

/// `modules.dep` + `modules.builtin` of one kernel version: module name -> file and dependencies.
public struct ModuleIndex: Sendable {
    public let kernelVersion: String
    /// normalized name (dashes as underscores) -> path relative to the module directory
    var files: [String: String] = [:]
    /// normalized name -> direct and indirect dependencies (normalized names), as listed
    var dependencies: [String: [String]] = [:]
    var builtin: Set<String> = []
    let modulesDirectory: String

    public init(kernel: VMKernel) throws {
        let depPath = "\(kernel.modulesDirectory)/modules.dep"
        guard let dep = try? String(contentsOfFile: depPath, encoding: .utf8) else {
            throw VMError.kernelMissing(path: kernel.imagePath, detail: "cannot read \(depPath)")
        }
        let builtin = (try? String(contentsOfFile: "\(kernel.modulesDirectory)/modules.builtin", encoding: .utf8)) ?? ""
        self.init(version: kernel.version, modulesDirectory: kernel.modulesDirectory, modulesDep: dep, modulesBuiltin: builtin)
    }

    /// From the text of `modules.dep` and `modules.builtin` (for tests).
    public init(version: String, modulesDirectory: String, modulesDep: String, modulesBuiltin: String) {
        kernelVersion = version
        self.modulesDirectory = modulesDirectory
        for line in modulesDep.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let path = String(line[..<colon])
            let deps = line[line.index(after: colon)...].split(separator: " ").map { Self.name(ofPath: String($0)) }
            let name = Self.name(ofPath: path)
            files[name] = path
            dependencies[name] = deps
        }
        for line in modulesBuiltin.split(separator: "\n") {
            builtin.insert(Self.name(ofPath: String(line)))
        }
    }

    /// `kernel/fs/9p/9p.ko.xz` -> `9p`; dashes become underscores (as modprobe treats them).
    static func name(ofPath path: String) -> String {
        var base = (path as NSString).lastPathComponent
        if let range = base.range(of: ".ko") { base = String(base[..<range.lowerBound]) }
        return normalize(base)
    }

    static func normalize(_ name: String) -> String { name.replacingOccurrences(of: "-", with: "_") }

    public func has(_ module: String) -> Bool {
        let n = Self.normalize(module)
        return files[n] != nil || builtin.contains(n)
    }

    /// Loadable modules to insert, in order, so that every module comes after its dependencies.
    /// Built-in modules are skipped. Throws `moduleMissing` for an unknown module.
    public func loadOrder(for modules: [String]) throws -> [(name: String, path: String)] {
        var order: [(name: String, path: String)] = []
        var seen: Set<String> = []
        func visit(_ raw: String) throws {
            let name = Self.normalize(raw)
            if seen.contains(name) { return }
            seen.insert(name)
            if builtin.contains(name) && files[name] == nil { return }
            guard let file = files[name] else {
                throw VMError.moduleMissing(module: raw, kernelVersion: kernelVersion)
            }
            for dep in dependencies[name] ?? [] { try visit(dep) }
            order.append((name, "\(modulesDirectory)/\(file)"))
        }
        for module in modules { try visit(module) }
        return order
    }
}

extension VMKernel {
    /// The uncompressed ELF `vmlinux` inside the bzImage, extracted once into `cacheDirectory`.
    /// qemu boots it through PVH, which skips the in-guest decompression (about 3 s under TCG).
    /// nil when the image's payload is not xz/zstd/gzip or the tool to unpack it is missing.
    public func extractedELF(cacheDirectory: String) -> String? {
        let target = "\(cacheDirectory)/vmlinux"
        if FileManager.default.fileExists(atPath: target) { return target }
        guard let image = FileManager.default.contents(atPath: imagePath) else { return nil }
        let formats: [(magic: [UInt8], tool: [String])] = [
            ([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00], ["xz", "-dc", "--single-stream"]),
            ([0x28, 0xB5, 0x2F, 0xFD], ["zstd", "-dc"]),
            ([0x1F, 0x8B, 0x08], ["gzip", "-dc"]),
        ]
        for format in formats {
            guard let offset = image.firstRange(of: Data(format.magic))?.lowerBound else { continue }
            let partial = "\(target).part.\(getpid())"
            let payload = "\(target).payload.\(getpid())"
            defer { unlink(payload) }
            guard FileManager.default.createFile(atPath: payload, contents: image[offset...]) else { return nil }
            let quoted = format.tool.joined(separator: " ")
            guard let result = try? VMChild.capture(["/bin/sh", "-c", "\(quoted) < '\(payload)' > '\(partial)' 2>/dev/null; test -s '\(partial)'"]),
                  result.status == 0,
                  let head = FileHandle(forReadingAtPath: partial)?.readData(ofLength: 4), head == Data([0x7F, 0x45, 0x4C, 0x46])
            else {
                unlink(partial)
                continue
            }
            if rename(partial, target) == 0 { return target }
            unlink(partial)
            return nil
        }
        return nil
    }
}
