import Foundation

/// A `newc` cpio archive written in memory (the format the kernel unpacks as an initramfs).
public struct CPIOArchive: Sendable {
    public private(set) var data = Data()
    private var inode: UInt32 = 1

    public init() {}

    public mutating func addDirectory(_ path: String, mode: UInt32 = 0o755) {
        add(path, mode: 0o040000 | mode, contents: Data())
    }

    public mutating func addFile(_ path: String, contents: Data, mode: UInt32 = 0o644) {
        add(path, mode: 0o100000 | mode, contents: contents)
    }

    public mutating func addSymlink(_ path: String, target: String) {
        add(path, mode: 0o120777, contents: Data(target.utf8))
    }

    /// Appends the `TRAILER!!!` entry; call once, last.
    public mutating func finish() {
        add("TRAILER!!!", mode: 0, contents: Data(), inode: 0)
    }

    private mutating func add(_ path: String, mode: UInt32, contents: Data, inode explicit: UInt32? = nil) {
        let ino = explicit ?? inode
        if explicit == nil { inode += 1 }
        let name = Data(path.utf8) + Data([0])
        let fields: [UInt32] = [
            ino, mode, 0, 0, mode & 0o040000 != 0 ? 2 : 1, 0,
            UInt32(contents.count), 0, 0, 0, 0, UInt32(name.count), 0,
        ]
        var header = "070701"
        for field in fields { header += String(format: "%08X", field) }
        data.append(Data(header.utf8))
        data.append(name)
        pad()
        data.append(contents)
        pad()
    }

    private mutating func pad() {
        while data.count % 4 != 0 { data.append(0) }
    }

    /// Parses a newc archive back into (path, mode, contents) entries, without the trailer (for tests).
    public static func entries(of data: Data) -> [(path: String, mode: UInt32, contents: Data)]? {
        var result: [(String, UInt32, Data)] = []
        var offset = 0
        let bytes = [UInt8](data)
        func field(_ index: Int, at base: Int) -> UInt32? {
            let start = base + 6 + index * 8
            guard start + 8 <= bytes.count else { return nil }
            return UInt32(String(decoding: bytes[start..<start + 8], as: UTF8.self), radix: 16)
        }
        while offset + 110 <= bytes.count {
            guard String(decoding: bytes[offset..<offset + 6], as: UTF8.self) == "070701",
                  let mode = field(1, at: offset), let size = field(6, at: offset), let nameSize = field(11, at: offset)
            else { return nil }
            let nameStart = offset + 110
            guard nameStart + Int(nameSize) <= bytes.count else { return nil }
            let name = String(decoding: bytes[nameStart..<nameStart + Int(nameSize) - 1], as: UTF8.self)
            var dataStart = nameStart + Int(nameSize)
            while dataStart % 4 != 0 { dataStart += 1 }
            guard dataStart + Int(size) <= bytes.count else { return nil }
            if name == "TRAILER!!!" { return result }
            result.append((name, mode, Data(bytes[dataStart..<dataStart + Int(size)])))
            offset = dataStart + Int(size)
            while offset % 4 != 0 { offset += 1 }
        }
        return nil
    }
}

/// Builds (and caches per kernel version) the VM's initramfs: static busybox, the kernel's own
/// virtio/9p/overlay modules in dependency order, and `/init` (see `VMInit.script`).
public struct InitramfsBuilder: Sendable {
    public var kernel: VMKernel
    public var busybox: String
    public var cacheRoot: String

    public init(kernel: VMKernel, busybox: String = "/bin/busybox", cacheRoot: String = VMCache.root()) {
        self.kernel = kernel
        self.busybox = busybox
        self.cacheRoot = cacheRoot
    }

    /// `<cache>/vm/<kernel version>`.
    public var cacheDirectory: String { "\(cacheRoot)/vm/\(kernel.version)" }

    /// Returns the path of the initramfs for this kernel, building it if the cached one is missing or
    /// stale (the file name carries a hash of the init script and the module list).
    public func build() throws -> (path: String, cached: Bool) {
        guard FileManager.default.isExecutableFile(atPath: busybox) else {
            throw VMError.toolMissing(tool: busybox, package: "busybox-static")
        }
        let index = try ModuleIndex(kernel: kernel)
        for module in VMKernel.labModules where !index.has(module) {
            throw VMError.moduleMissing(module: module, kernelVersion: kernel.version)
        }
        let modules = try index.loadOrder(for: VMKernel.bootModules)
        let script = VMInit.script(modules: modules.map(\.name))
        let key = Self.fnv1a(script + modules.map(\.path).joined(separator: "\n") + busybox)
        let target = "\(cacheDirectory)/initramfs-\(String(key, radix: 16)).cpio"
        if FileManager.default.fileExists(atPath: target) { return (target, true) }

        var archive = CPIOArchive()
        for dir in ["bin", "dev", "proc", "sys", "mnt", "lower", "upper", "lib", "lib/modules"] { archive.addDirectory(dir) }
        guard let box = FileManager.default.contents(atPath: busybox) else {
            throw VMError.errno("read", busybox)
        }
        guard box.count > 4, box.prefix(4) == Data([0x7F, 0x45, 0x4C, 0x46]) else {
            throw VMError.system(operation: "read", object: busybox, cause: "not an ELF executable")
        }
        archive.addFile("bin/busybox", contents: box, mode: 0o755)
        archive.addSymlink("bin/sh", target: "busybox")
        for module in modules {
            archive.addFile("lib/modules/\(module.name).ko", contents: try Self.moduleContents(module.path), mode: 0o644)
        }
        archive.addFile("init", contents: Data(script.utf8), mode: 0o755)
        archive.finish()

        try VMCache.makeDirectory(cacheDirectory)
        let partial = "\(target).part.\(getpid())"
        guard FileManager.default.createFile(atPath: partial, contents: archive.data) else {
            throw VMError.errno("write initramfs", partial)
        }
        guard rename(partial, target) == 0 else {
            let code = errno
            unlink(partial)
            throw VMError.errno("rename initramfs to", target, code)
        }
        return (target, false)
    }

    /// A module file's bytes, decompressed if it is `.ko.xz`, `.ko.zst` or `.ko.gz` (busybox insmod
    /// takes plain ELF).
    static func moduleContents(_ path: String) throws -> Data {
        let tools: [(String, [String], String)] = [(".xz", ["xz", "-dc"], "xz-utils"), (".zst", ["zstd", "-dc"], "zstd"), (".gz", ["gzip", "-dc"], "gzip")]
        for (suffix, tool, package) in tools where path.hasSuffix(suffix) {
            let result: (status: Int32, output: String)
            do {
                result = try VMChild.capture(["/bin/sh", "-c", "\(tool.joined(separator: " ")) < '\(path)' | base64 -w0"])
            } catch {
                throw VMError.toolMissing(tool: tool[0], package: package)
            }
            guard result.status == 0, let data = Data(base64Encoded: result.output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw VMError.system(operation: "decompress module", object: path, cause: "\(tool[0]) failed: \(result.output.prefix(200))")
            }
            return data
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw VMError.errno("read module", path)
        }
        return data
    }

    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf29ce484222325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100000001b3
        }
        return hash
    }
}

/// Where the VM runner keeps its initramfs and extracted kernels.
public enum VMCache {
    /// `$HOTSPOT_LAB_CACHE`, else `$XDG_CACHE_HOME/hotspot-lab`, else `/var/cache/hotspot-lab` for root,
    /// else `~/.cache/hotspot-lab`.
    public static func root(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let dir = environment["HOTSPOT_LAB_CACHE"], !dir.isEmpty { return dir }
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty { return "\(xdg)/hotspot-lab" }
        if getuid() == 0 { return "/var/cache/hotspot-lab" }
        return "\(environment["HOME"] ?? NSHomeDirectory())/.cache/hotspot-lab"
    }

    static func makeDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw VMError.system(operation: "create cache directory", object: path, cause: "\(error.localizedDescription)")
        }
    }
}

/// The `/init` the VM runs (busybox sh). Kernel command line switches: `hsl.probe` (print a marker
/// and power off: the KVM probe). Everything else is read from the results share (`job.sh`).
public enum VMInit {
    /// Where the writable results share is mounted inside the chroot.
    public static let resultsMount = "/run/hotspot-lab-vm"
    /// Present while the init loads `VMOptions.preloadModules` in the background (removed when modprobe is done).
    public static let modulesLoading = "/run/hotspot-lab-modules.loading"

    public static func script(modules: [String]) -> String {
        """
        #!/bin/busybox sh
        # hotspot-lab VM init (generated by LabKit/VM/Initramfs.swift)
        export PATH=/bin
        /bin/busybox --install -s /bin
        mount -t proc proc /proc
        mount -t sysfs sys /sys
        mount -t devtmpfs dev /dev
        say() { echo "hotspot-lab-vm: $*" > /dev/ttyS0; }
        fail() { say "FAILED: $*"; poweroff -f; sleep 10; }
        if grep -q hsl.probe /proc/cmdline; then say PROBE-OK; poweroff -f; fi
        for m in \(modules.joined(separator: " ")); do
          insmod /lib/modules/$m.ko || fail "insmod $m (module from the host's /lib/modules)"
        done
        mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose host /lower || fail "mount host root over 9p"
        mount -t tmpfs -o mode=755 upper /upper
        mkdir -p /upper/data /upper/work
        if ! mount -t overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work root /mnt; then
          say "overlay failed, using the read-only root with tmpfs on /tmp /run /var/lib/misc"
          mount --bind /lower /mnt
        fi
        R=/mnt
        mount -t proc proc $R/proc
        mount -t sysfs sys $R/sys
        mount -t devtmpfs dev $R/dev
        mkdir -p $R/dev/pts $R/dev/shm 2>/dev/null
        mount -t devpts devpts $R/dev/pts 2>/dev/null
        mount -t tmpfs shm $R/dev/shm
        mount -t tmpfs tmp $R/tmp
        mount -t tmpfs -o mode=755 run $R/run
        [ -L $R/var/run ] || mount -t tmpfs -o mode=755 varrun $R/var/run
        mount -t tmpfs misc $R/var/lib/misc 2>/dev/null
        mount -t tmpfs vartmp $R/var/tmp 2>/dev/null
        mount -t debugfs debugfs $R/sys/kernel/debug 2>/dev/null
        mkdir -p $R\(resultsMount)
        mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results $R\(resultsMount) || fail "mount results share"
        ip link set lo up || fail "bring lo up"
        # Modules a lab job will need (hsl.modules=a,b,c: veth, bridge, nf_tables...), loaded in the background while
        # the job starts; the job waits for the marker to go away before it relies on them (LabKernelModules).
        MODS=""
        for w in $(cat /proc/cmdline); do
          case $w in hsl.modules=*) MODS=$(echo "${w#hsl.modules=}" | tr , ' ') ;; esac
        done
        if [ -n "$MODS" ]; then
          : > $R\(modulesLoading)
          (chroot $R /sbin/modprobe -a -q $MODS; rm -f $R\(modulesLoading)) &
        fi
        if grep -q hsl.hwsim /proc/cmdline; then
          # mac80211_hwsim with no radios: tests and labs create theirs over netlink (NEW_RADIO).
          chroot $R /sbin/modprobe mac80211_hwsim radios=0 || fail "modprobe mac80211_hwsim radios=0"
          cut -d' ' -f1 /proc/uptime > $R\(resultsMount)/hwsim-ready
        else
          # Load the wireless stack in the background while the job starts: a later
          # modprobe mac80211_hwsim (radios= chosen by the job) then takes a fraction of the time.
          chroot $R /sbin/modprobe -a cfg80211 mac80211 > /dev/null 2>&1 &
        fi
        OUT=/dev/null; ERR=/dev/null
        for p in /sys/class/virtio-ports/*; do
          case "$(cat $p/name)" in
            out) OUT=/dev/${p##*/} ;;
            err) ERR=/dev/${p##*/} ;;
          esac
        done
        cut -d' ' -f1 /proc/uptime > $R\(resultsMount)/started
        chroot $R /bin/sh \(resultsMount)/job.sh < /dev/null > $OUT 2> $ERR
        echo $? > $R\(resultsMount)/exit-code.tmp
        mv $R\(resultsMount)/exit-code.tmp $R\(resultsMount)/exit-code
        cut -d' ' -f1 /proc/uptime > $R\(resultsMount)/finished
        sync
        poweroff -f
        sleep 10

        """
    }
}
