import Foundation
import HotspotSystem
import Testing
@testable import LabKit
@testable import LabSandbox
@testable import LabVM

/// The VM runner's pure parts: no qemu, no root.
@Suite("VM runner units")
struct VMUnitTests {
    @Test("cpio newc archive round-trips files, directories and symlinks, 4-byte aligned, with a trailer")
    func cpioRoundTrip() throws {
        var archive = CPIOArchive()
        archive.addDirectory("bin")
        archive.addFile("bin/tool", contents: Data([1, 2, 3, 4, 5]), mode: 0o755)
        archive.addSymlink("bin/sh", target: "tool")
        archive.addFile("init", contents: Data("#!/bin/sh\n".utf8), mode: 0o755)
        archive.finish()
        #expect(archive.data.count % 4 == 0)
        #expect(String(decoding: archive.data.suffix(140), as: UTF8.self).contains("TRAILER!!!"))
        let entries = try #require(CPIOArchive.entries(of: archive.data))
        #expect(entries.map(\.path) == ["bin", "bin/tool", "bin/sh", "init"])
        #expect(entries[0].mode == 0o040755)
        #expect(entries[1].mode == 0o100755)
        #expect(entries[1].contents == Data([1, 2, 3, 4, 5]))
        #expect(entries[2].mode == 0o120777)
        #expect(String(decoding: entries[2].contents, as: UTF8.self) == "tool")
        #expect(String(decoding: entries[3].contents, as: UTF8.self) == "#!/bin/sh\n")
    }

    static let dep = """
        kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko
        kernel/net/9p/9pnet.ko:
        kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko
        kernel/fs/netfs/netfs.ko:
        kernel/net/9p/9pnet_virtio.ko.xz: kernel/drivers/virtio/virtio_ring.ko kernel/net/9p/9pnet.ko
        kernel/drivers/virtio/virtio_ring.ko:
        kernel/drivers/net/wireless/mac80211_hwsim.ko: kernel/net/mac80211/mac80211.ko kernel/net/wireless/cfg80211.ko
        kernel/net/mac80211/mac80211.ko: kernel/net/wireless/cfg80211.ko
        kernel/net/wireless/cfg80211.ko:
        kernel/drivers/usb/dummy-hcd.ko:
        """

    @Test("module load order puts every dependency first, once; built-ins are skipped; dashes match underscores")
    func moduleOrder() throws {
        let index = ModuleIndex(version: "9.9.9-test", modulesDirectory: "/m", modulesDep: Self.dep, modulesBuiltin: "kernel/drivers/virtio/virtio.ko\n")
        let order = try index.loadOrder(for: ["9p", "9pnet_virtio", "virtio", "dummy_hcd"]).map(\.name)
        #expect(order == ["9pnet", "netfs", "fscache", "9p", "virtio_ring", "9pnet_virtio", "dummy_hcd"])
        for (i, name) in order.enumerated() {
            for dep in index.dependencies[name] ?? [] {
                #expect(order.firstIndex(of: dep).map { $0 < i } == true, "\(dep) must come before \(name)")
            }
        }
        #expect(try index.loadOrder(for: ["9pnet_virtio"]).last?.path == "/m/kernel/net/9p/9pnet_virtio.ko.xz")
        #expect(index.has("mac80211_hwsim") && index.has("virtio") && !index.has("iwlwifi"))
    }

    @Test("a module missing from the kernel is named with the kernel version and the fix")
    func missingModule() throws {
        let index = ModuleIndex(version: "9.9.9-test", modulesDirectory: "/m", modulesDep: Self.dep, modulesBuiltin: "")
        let error = #expect(throws: VMError.self) { try index.loadOrder(for: ["overlay"]) }
        #expect(error == .moduleMissing(module: "overlay", kernelVersion: "9.9.9-test"))
        #expect(error?.description.contains("find module overlay in kernel 9.9.9-test") == true)
        #expect(error?.description.contains("apt-get install -y linux-image-amd64") == true)
    }

    @Test("a missing kernel image names the path and the apt command")
    func missingKernel() throws {
        let explicit = #expect(throws: VMError.self) { try VMKernel.locate("/nonexistent/vmlinuz-1.2.3") }
        #expect(explicit?.description.contains("/nonexistent/vmlinuz-1.2.3") == true)
        #expect(explicit?.description.contains("apt-get install -y linux-image-amd64") == true)
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("hslvm-empty-\(getpid())").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let none = #expect(throws: VMError.self) { try VMKernel.locate(bootDirectory: empty, modulesRoot: empty) }
        #expect(none?.description.contains("no \(empty)/vmlinuz-* found") == true)
        #expect(VMError.toolMissing(tool: "qemu-system-x86_64", package: "qemu-system-x86").description
            == "find qemu-system-x86_64: not installed. Install it with: apt-get install -y qemu-system-x86")
    }

    @Test("the job script reproduces arguments, working directory and environment exactly")
    func jobScriptQuoting() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hslvm job 'q' \(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let args = ["-c", "printf '%s|' \"$PWD\" \"$HSL_X\" \"$HOTSPOT_LAB_IN_VM\" \"$0\" \"$1\"", "it's", "a b\n$c `d`"]
        let job = VMJob(executable: "/bin/sh", arguments: args, workingDirectory: dir, environment: ["HSL_X": "x'y z", "PATH": "/usr/bin:/bin"])
        let script = job.script()
        try script.write(toFile: "\(dir)/job.sh", atomically: true, encoding: .utf8)
        let result = try VMChild.capture(["/bin/sh", "\(dir)/job.sh"])
        #expect(result.status == 0)
        #expect(result.output == "\(dir)|x'y z|1|it's|a b\n$c `d`|")
    }

    @Test("passed environment keeps PATH, HOME, LC_* and HOTSPOT_LAB_*, drops the rest")
    func passedEnvironment() {
        let env = VMJob.passedEnvironment(["PATH": "/bin", "HOME": "/root", "LC_ALL": "C", "HOTSPOT_LAB_X": "1", "SSH_AUTH_SOCK": "/s", "OLDPWD": "/x"])
        #expect(env == ["PATH": "/bin", "HOME": "/root", "LC_ALL": "C", "HOTSPOT_LAB_X": "1"])
    }

    @Test("qemu gets no network device and the host root read-only")
    func qemuArgumentsAreSealed() {
        let args = VMRunner.qemuArguments(qemu: "qemu", kernel: "k", initramfs: "i", accelerator: .tcg, memoryMB: 512, cpus: 2, console: "c", results: "/r", probe: false)
        let joined = args.joined(separator: " ")
        #expect(joined.contains("-nic none"))
        #expect(!joined.contains("-netdev") && !joined.contains("-net "))
        #expect(joined.contains("path=/,security_model=none,readonly=on"))
        #expect(joined.contains("-accel tcg,thread=multi -cpu max"))
        #expect(joined.contains("path=/r,security_model=none"))
    }

    @Test("a lab job's kernel modules go on the kernel command line (names only) and the init loads them in the background")
    func preloadModules() throws {
        let args = VMRunner.qemuArguments(qemu: "qemu", kernel: "k", initramfs: "i", accelerator: .tcg, memoryMB: 512, cpus: 2, console: "c",
                                          results: "/r", probe: false, preloadModules: ["veth", "nf_tables", "x;reboot", ""])
        let append = try #require(args.firstIndex(of: "-append").map { args[$0 + 1] })
        #expect(append.hasSuffix(" hsl.modules=veth,nf_tables"), "\(append)")
        // Control: no modules, no parameter.
        let none = VMRunner.qemuArguments(qemu: "qemu", kernel: "k", initramfs: "i", accelerator: .tcg, memoryMB: 512, cpus: 2, console: "c",
                                          results: "/r", probe: false)
        #expect(!none.joined(separator: " ").contains("hsl.modules"))
        // The init script's own lines read the list back from a command line like the one above (run by sh here).
        let script = VMInit.script(modules: [])
        let start = try #require(script.range(of: "\nMODS=\"\"\n"))
        let end = try #require(script.range(of: "\ndone\n", range: start.upperBound..<script.endIndex))
        let fragment = String(script[start.lowerBound..<end.upperBound])
            .replacingOccurrences(of: "$(cat /proc/cmdline)", with: "console=ttyS0 quiet " + append.split(separator: " ").last! + " panic=-1")
        let output = try ProcessRunner.run(ProcessConfiguration("/bin/sh", ["-c", fragment + "echo \"[$MODS]\""]), timeout: .seconds(10))
        #expect(output.stdout == "[veth nf_tables]\n", "\(output)")
        #expect(script.contains("(chroot $R /sbin/modprobe -a -q $MODS; rm -f $R\(VMInit.modulesLoading)) &"))
        #expect(LabKernelModules.modulesLoadingMarker == VMInit.modulesLoading)
    }

    @Test("a lab waits for the VM init's background module load to finish, and no longer than its bound")
    func labWaitsForTheInitsModules() throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("hsl-modules-\(getpid()).loading").path
        #expect(FileManager.default.createFile(atPath: marker, contents: Data()))
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let remover = try SystemThread.start("remove the marker") {
            usleep(300_000)
            unlink(marker)
        }
        LabKernelModules.waitForTheVMInit(marker: marker, timeout: .seconds(60))
        #expect(!FileManager.default.fileExists(atPath: marker), "returned while the init was still loading")
        remover.join()
        // Control: a marker nobody removes ends the wait at the bound.
        #expect(FileManager.default.createFile(atPath: marker, contents: Data()))
        let start = ContinuousClock.now
        LabKernelModules.waitForTheVMInit(marker: marker, timeout: .milliseconds(200))
        #expect(ContinuousClock.now - start >= .milliseconds(200))
        #expect(FileManager.default.fileExists(atPath: marker))
    }

    @Test("--where: host and vm as given, auto follows the hwsim check")
    func placement() {
        let no = HwsimSupport.Check(usable: false, reason: "host kernel X cannot load modules")
        let yes = HwsimSupport.Check(usable: true, reason: "host kernel X has mac80211_hwsim loaded")
        if InVM.isActive {
            #expect(HwsimSupport.resolve(.vm, check: no).placement == .host)
            #expect(HwsimSupport.resolve(.auto, check: no).placement == .host)
        } else {
            #expect(HwsimSupport.resolve(.vm, check: yes).placement == .vm)
            #expect(HwsimSupport.resolve(.auto, check: no) == (.vm, "host kernel X cannot load modules"))
            #expect(HwsimSupport.resolve(.auto, check: yes).placement == .host)
        }
        #expect(HwsimSupport.resolve(.host, check: no).placement == .host)
    }

    @Test("the init script loads modules in the given order and hands the exit code back")
    func initScript() {
        let script = VMInit.script(modules: ["virtio_ring", "virtio", "9p"])
        #expect(script.hasPrefix("#!/bin/busybox sh\n"))
        #expect(script.contains("for m in virtio_ring virtio 9p; do"))
        #expect(script.contains("ip link set lo up"))
        #expect(script.contains("echo $? > $R/run/hotspot-lab-vm/exit-code.tmp"))
    }

    @Test("udhcpc's hex-encoded option 114 decodes")
    func option114() {
        #expect(HwsimSelftest.decodeHexString("68747470733a2f2f782e74657374") == "https://x.test")
    }
}
