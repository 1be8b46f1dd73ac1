import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem
import Netlink
import LabSandbox
import LabVM

/// One line of the `doctor` report.
public struct DoctorCheck: Sendable, Equatable {
    public var name: String
    public var ok: Bool
    public var detail: String
    /// The exact command that fixes it (nil when ok or when no command can).
    public var fix: String?
}

/// Which radio mode the lab will use here.
public enum RadioMode: String, Sendable {
    /// mac80211_hwsim on the host kernel.
    case host
    /// mac80211_hwsim inside the qemu VM.
    case vm
    /// Neither: radios are unavailable until something is installed.
    case unavailable
}

public struct DoctorReport: Sendable {
    public var checks: [DoctorCheck]
    public var radioMode: RadioMode
    public var radioReason: String

    /// Problems that stop the lab from running at all (root, netns, veth).
    public var essentialOK: Bool {
        checks.filter { ["root", "netns", "veth"].contains($0.name) }.allSatisfy(\.ok)
    }

    public var text: String {
        var lines: [String] = []
        let width = (checks.map(\.name.count).max() ?? 10) + 2
        for check in checks {
            let pad = String(repeating: " ", count: max(1, width - check.name.count))
            lines.append("\(check.ok ? "ok  " : "FAIL") \(check.name)\(pad)\(check.detail)")
            if let fix = check.fix, !check.ok { lines.append("     " + String(repeating: " ", count: width) + "fix: \(fix)") }
        }
        lines.append("")
        lines.append("radio mode: \(radioMode.rawValue) (\(radioReason))")
        return lines.joined(separator: "\n") + "\n"
    }
}

/// `hotspot-lab doctor`: what this machine can do for the lab, and how to fix what it cannot.
public enum Doctor {
    /// Tools the lab runs, with the Debian package that provides each.
    public static let tools: [(command: String, package: String)] = [
        ("ip", "iproute2"), ("hostapd", "hostapd"), ("wpa_supplicant", "wpasupplicant"), ("dnsmasq", "dnsmasq"),
        ("nft", "nftables"), ("qemu-system-x86_64", "qemu-system-x86"),
    ]

    /// Creates two radios in a throwaway lab, moves them into two lab namespaces, checks their interfaces
    /// are visible there, tears down and checks the radios are gone. Only where mac80211_hwsim exists
    /// (`hotspot-lab vm -- doctor --radio-probe` elsewhere).
    public static func radioProbe() -> DoctorCheck {
        guard Hwsim.isAvailable() else {
            return DoctorCheck(name: "radios", ok: false, detail: "not probed: no MAC80211_HWSIM generic netlink family here",
                               fix: "hotspot-lab vm -- doctor --radio-probe")
        }
        do {
            let lab = try Lab.start(cleanDeadRuns: false)
            defer { lab.teardown() }
            let namespaces = try lab.createNamespaces(["r0", "r1"])
            var ids: [Int32] = []
            var seen: [String] = []
            for (index, namespace) in namespaces.enumerated() {
                let (radio, interfaces) = try lab.createRadio("w\(index)", in: namespace)
                ids.append(radio.id)
                guard !interfaces.isEmpty else { throw SystemError("find interfaces of radio", radio.name, errno: ENODEV) }
                for name in interfaces { _ = try namespace.route.link(name) }
                seen.append("\(radio.name) (id \(radio.id)) -> \(namespace.name): \(interfaces.joined(separator: ","))")
            }
            let errors = lab.teardown()
            if let error = errors.first { throw error }
            let observer = try Hwsim()
            for id in ids where try observer.radio(id: id) != nil {
                throw SystemError("delete radio", "#\(id)", reason: "still present after teardown")
            }
            return DoctorCheck(name: "radios", ok: true, detail: seen.joined(separator: "; ") + "; deleted", fix: nil)
        } catch {
            return DoctorCheck(name: "radios", ok: false, detail: "\(error)", fix: nil)
        }
    }

    public static func run(probeKVM: Bool = true) -> DoctorReport {
        var checks: [DoctorCheck] = []
        let root = getuid() == 0
        checks.append(DoctorCheck(name: "root", ok: root, detail: root ? "running as root" : "running as uid \(getuid())",
                                  fix: "run hotspot-lab as root (sudo)"))
        checks += kernelChecks(root: root)
        let hwsim = canUseHostHwsim()
        checks.append(DoctorCheck(name: "mac80211_hwsim", ok: hwsim.usable, detail: hwsim.reason,
                                  fix: hwsim.usable ? nil : "none on this kernel; the lab uses the VM (see 'kernel image' below)"))
        let kvm = kvmCheck(probe: probeKVM)
        checks.append(kvm)
        for tool in tools {
            if let path = SystemTools.find(tool.command) {
                checks.append(DoctorCheck(name: tool.command, ok: true, detail: path, fix: nil))
            } else {
                checks.append(DoctorCheck(name: tool.command, ok: false, detail: "not found in PATH",
                                          fix: "apt-get install -y \(tool.package)"))
            }
        }
        let busybox = FileManager.default.isExecutableFile(atPath: "/bin/busybox")
        checks.append(DoctorCheck(name: "busybox", ok: busybox, detail: busybox ? "/bin/busybox (VM initramfs)" : "missing (VM initramfs needs it)",
                                  fix: "apt-get install -y busybox-static"))
        var kernelOK = false
        var kernelImage = "a kernel"
        do {
            let kernel = try VMKernel.locate()
            kernelOK = true
            kernelImage = kernel.imagePath
            checks.append(DoctorCheck(name: "kernel image", ok: true, detail: "\(kernel.imagePath) with mac80211_hwsim", fix: nil))
        } catch {
            checks.append(DoctorCheck(name: "kernel image", ok: false, detail: "\(error)", fix: "apt-get install -y linux-image-amd64"))
        }

        let mode: RadioMode
        let reason: String
        if hwsim.usable {
            mode = .host
            reason = hwsim.reason
        } else if kernelOK && busybox && SystemTools.find("qemu-system-x86_64") != nil {
            mode = .vm
            reason = "host kernel has no usable mac80211_hwsim; qemu (\(kvm.ok ? (probeKVM ? "KVM" : "KVM if the boot probe passes, else TCG") : "TCG")) boots \(kernelImage) which has it"
        } else {
            mode = .unavailable
            reason = "no mac80211_hwsim on the host and the VM is missing pieces (see above)"
        }
        return DoctorReport(checks: checks, radioMode: mode, radioReason: reason)
    }

    /// Whether radios can be created on this (host) kernel: the MAC80211_HWSIM generic netlink family
    /// answers, or the module can be loaded.
    public static func canUseHostHwsim() -> (usable: Bool, reason: String) {
        if Hwsim.isAvailable() { return (true, "generic netlink family MAC80211_HWSIM present") }
        let check = HwsimSupport.check()
        return (check.usable, check.reason)
    }

    /// Probes namespaces, veth, policy routing and nftables in a throwaway sealed lab.
    static func kernelChecks(root: Bool) -> [DoctorCheck] {
        let names = ["netns", "veth", "policy routing", "nftables"]
        guard root else {
            return names.map { DoctorCheck(name: $0, ok: false, detail: "not probed (needs root)", fix: "run hotspot-lab doctor as root") }
        }
        var checks: [DoctorCheck] = []
        let lab: Lab
        do {
            lab = try Lab.start(cleanDeadRuns: false)
        } catch {
            return names.map { DoctorCheck(name: $0, ok: false, detail: "\(error)", fix: nil) }
        }
        defer { lab.teardown() }
        let namespaces: [NetworkNamespace]
        do {
            namespaces = try lab.createNamespaces(["d0", "d1"])
            checks.append(DoctorCheck(name: "netns", ok: true, detail: "created \(namespaces[0].name) and \(namespaces[1].name) (CONFIG_NET_NS)", fix: nil))
        } catch {
            checks.append(DoctorCheck(name: "netns", ok: false, detail: "\(error)", fix: "a kernel with CONFIG_NET_NS=y"))
            return checks + names.dropFirst().map { DoctorCheck(name: $0, ok: false, detail: "not probed (no namespaces)", fix: nil) }
        }
        do {
            try lab.connect(namespaces[0], "v0", addresses: [IPPrefix("198.18.0.1/30")!], to: namespaces[1], "v1", addresses: [IPPrefix("198.18.0.2/30")!])
            checks.append(DoctorCheck(name: "veth", ok: true, detail: "veth pair with addresses between two namespaces (CONFIG_VETH)", fix: nil))
        } catch {
            checks.append(DoctorCheck(name: "veth", ok: false, detail: "\(error)", fix: "a kernel with CONFIG_VETH=y"))
        }
        do {
            try namespaces[0].route.addRoute(Route(destination: IPPrefix("203.0.113.0/24")!, gateway: IPAddress("198.18.0.2"), table: 100))
            try namespaces[0].route.addRule(RoutingRule(priority: 1000, fwmark: 1, table: 100))
            checks.append(DoctorCheck(name: "policy routing", ok: true, detail: "fwmark rule and table 100 (CONFIG_IP_MULTIPLE_TABLES)", fix: nil))
        } catch {
            checks.append(DoctorCheck(name: "policy routing", ok: false, detail: "\(error)", fix: "a kernel with CONFIG_IP_MULTIPLE_TABLES=y"))
        }
        if SystemTools.find("nft") == nil {
            checks.append(DoctorCheck(name: "nftables", ok: false, detail: "nft not found", fix: "apt-get install -y nftables"))
        } else {
            do {
                let config = try ProcessConfiguration("nft", ["add", "table", "inet", "hsldoctor"]).inNetworkNamespace(namespaces[0].name)
                try ProcessRunner.check(config, timeout: .seconds(10))
                checks.append(DoctorCheck(name: "nftables", ok: true, detail: "nft table created inside a lab namespace (CONFIG_NF_TABLES)", fix: nil))
            } catch {
                checks.append(DoctorCheck(name: "nftables", ok: false, detail: "\(error)", fix: "a kernel with CONFIG_NF_TABLES=y"))
            }
        }
        return checks
    }

    /// /dev/kvm answers KVM_GET_API_VERSION, and (with `probe`) qemu really boots with KVM (the VM
    /// runner's short probe boot; TCG is the fallback).
    static func kvmCheck(probe: Bool) -> DoctorCheck {
        let fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            return DoctorCheck(name: "kvm", ok: false, detail: "/dev/kvm: \(Errno.text(Errno.current)); the VM runs under TCG (slower)", fix: nil)
        }
        let version = ioctl(fd, 0xAE00)  // KVM_GET_API_VERSION
        close(fd)
        guard version == 12 else {
            return DoctorCheck(name: "kvm", ok: false, detail: "/dev/kvm API version \(version) (expected 12); the VM runs under TCG", fix: nil)
        }
        guard probe else {
            return DoctorCheck(name: "kvm", ok: true, detail: "/dev/kvm answers (API 12); boot not probed (--no-kvm-probe)", fix: nil)
        }
        guard let qemu = try? VMRunner.qemuPath(), let kernel = try? VMKernel.locate(),
              let initramfs = try? InitramfsBuilder(kernel: kernel).build() else {
            return DoctorCheck(name: "kvm", ok: false, detail: "/dev/kvm answers (API 12) but qemu, a kernel image or busybox is missing for the boot probe", fix: nil)
        }
        let works = VMRunner.probeKVM(qemu: qemu, kernel: kernel.imagePath, initramfs: initramfs.path)
        return DoctorCheck(name: "kvm", ok: works,
                           detail: works ? "qemu boots with -accel kvm" : "/dev/kvm exists but a KVM boot fails or hangs within 6 s (e.g. failed to set MSR 0x10a); the VM runs under TCG",
                           fix: nil)
    }
}
