import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a lab runs: on the host kernel, or in the VM (`VMRunner`) when the host kernel cannot give
/// us mac80211_hwsim.
public enum LabPlacement: String, Sendable, CaseIterable {
    case host, vm, auto
}

/// Can this kernel give us mac80211_hwsim radios?
public enum HwsimSupport {
    public struct Check: Sendable, Equatable {
        public var usable: Bool
        /// One line: why (used by `doctor` and by the `--where auto` notice).
        public var reason: String
    }

    /// Checks the running kernel: the module loaded already, or loadable from `/lib/modules/<release>`
    /// (needs CONFIG_MODULES and root), or absent.
    public static func check(sysRoot: String = "/sys", procRoot: String = "/proc", modulesRoot: String = "/lib/modules") -> Check {
        let release = kernelRelease()
        if InVM.isActive && FileManager.default.fileExists(atPath: "\(sysRoot)/module/mac80211_hwsim") {
            return Check(usable: true, reason: "inside the hotspot-lab VM (kernel \(release)) with mac80211_hwsim loaded")
        }
        if FileManager.default.fileExists(atPath: "\(sysRoot)/module/mac80211_hwsim") {
            return Check(usable: true, reason: "host kernel \(release) has mac80211_hwsim loaded")
        }
        guard FileManager.default.fileExists(atPath: "\(procRoot)/modules") else {
            return Check(usable: false, reason: "host kernel \(release) cannot load modules (CONFIG_MODULES off) and has no mac80211_hwsim built in")
        }
        let dep = (try? String(contentsOfFile: "\(modulesRoot)/\(release)/modules.dep", encoding: .utf8)) ?? ""
        guard dep.contains("/mac80211_hwsim.ko") else {
            return Check(usable: false, reason: "host kernel \(release) has no mac80211_hwsim module in \(modulesRoot)/\(release)")
        }
        guard getuid() == 0 else {
            return Check(usable: false, reason: "host kernel \(release) has mac80211_hwsim but loading it needs root")
        }
        return Check(usable: true, reason: "host kernel \(release) can load mac80211_hwsim")
    }

    /// `uname -r`.
    public static func kernelRelease() -> String {
        var uts = utsname()
        uname(&uts)
        return withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// Resolves `--where`: `host` and `vm` as given; `auto` is host when `check().usable` (always host
    /// inside the VM), else vm. Returns the placement and the one-line reason.
    public static func resolve(_ requested: LabPlacement, check: Check = HwsimSupport.check()) -> (placement: LabPlacement, reason: String) {
        switch requested {
        case .host: return (.host, "--where host")
        case .vm: return (InVM.isActive ? .host : .vm, InVM.isActive ? "already inside the VM" : "--where vm")
        case .auto:
            if InVM.isActive { return (.host, "already inside the VM") }
            return check.usable ? (.host, check.reason) : (.vm, check.reason)
        }
    }
}

/// The in-VM test convention (docs/VM.md). The host-side `VMSuiteTests` boots ONE VM and runs the test
/// bundle inside it filtered to the suites tagged `.inVM` (named `InVM...`), with `HOTSPOT_LAB_IN_VM=1`.
/// Tests that need mac80211_hwsim use `.enabled(if: InVM.hwsimAvailable)`, so on a host without it
/// they are reported as skipped, never as passed.
public enum InVM {
    /// The environment variable the VM runner sets for the inner command.
    public static let environmentKey = "HOTSPOT_LAB_IN_VM"
    /// The Swift Testing tag (`Tag.inVM`, Tests/TestSupport) of the suites `VMSuiteTests` runs in the VM.
    public static let suiteTag = "inVM"

    /// True inside the hotspot-lab VM.
    public static var isActive: Bool { ProcessInfo.processInfo.environment[environmentKey] == "1" }

    /// True when mac80211_hwsim tests can run here: inside the VM, or on a host kernel that has it.
    public static var hwsimAvailable: Bool { isActive || HwsimSupport.check().usable }

    /// The writable share inside the VM (`HOTSPOT_LAB_VM_RESULTS`): files put there come back to the host.
    public static var resultsDirectory: String? { ProcessInfo.processInfo.environment["HOTSPOT_LAB_VM_RESULTS"] }
}
