import Foundation
import Netlink
import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// One mac80211_hwsim radio: its wiphy and its first interface.
public struct HwsimRadio: Sendable, Equatable {
    public var phy: String
    public var interface: String
}

/// How the selftest gets its radios.
public protocol HwsimRadioProvider {
    /// Loads the module if needed ("hwsim ready"), then returns `count` fresh radios in the current namespace.
    func loadModule() throws
    func createRadios(count: Int) throws -> [HwsimRadio]
    /// Moves a radio's wiphy (and its interfaces) into the named namespace (`/run/netns/NAME`).
    func move(_ radio: HwsimRadio, toNamespace name: String) throws
    /// Removes what `createRadios` made (when the provider can).
    func destroyRadios(_ radios: [HwsimRadio])
}

/// The default provider: our own netlink code (`Netlink.Hwsim` NEW_RADIO with destroy-on-close from
/// this namespace, `Netlink.Nl80211` SET_WIPHY_NETNS). Loads the module with `radios=0` if needed.
public final class NetlinkRadioProvider: HwsimRadioProvider {
    private var hwsim: Hwsim?
    private let prefix: String

    public init(prefix: String = "hslvm\(String(UInt32.random(in: 0..<0xFFFFF), radix: 16))r") {
        self.prefix = prefix
    }

    public func loadModule() throws {
        if !FileManager.default.fileExists(atPath: "/sys/module/mac80211_hwsim") {
            let result = try VMChild.capture(["modprobe", "mac80211_hwsim", "radios=0"])
            guard result.status == 0 else {
                throw VMError.system(operation: "modprobe", object: "mac80211_hwsim radios=0", cause: result.output.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        hwsim = try Hwsim()
    }

    public func createRadios(count: Int) throws -> [HwsimRadio] {
        guard let hwsim else { throw VMError.system(operation: "create radios", object: prefix, cause: "loadModule() not called") }
        let nl80211 = try Nl80211()
        return try (0..<count).map { index in
            let name = "\(prefix)\(index)"
            _ = try hwsim.createRadio(name: name, channels: 1, destroyOnClose: true)
            let wiphy = try nl80211.wiphy(named: name)
            guard let interface = try nl80211.interfaces(ofWiphy: wiphy).first else {
                throw VMError.system(operation: "find interface of", object: "radio \(name) (phy#\(wiphy))", cause: "none")
            }
            return HwsimRadio(phy: name, interface: interface.name)
        }
    }

    public func move(_ radio: HwsimRadio, toNamespace name: String) throws {
        let nl80211 = try Nl80211()
        let namespace = try NetworkNamespace.open(name)
        defer { namespace.release() }
        try nl80211.moveWiphy(try nl80211.wiphy(named: radio.phy), to: namespace)
    }

    public func destroyRadios(_ radios: [HwsimRadio]) {
        for radio in radios { try? hwsim?.deleteRadio(name: radio.phy) }
        hwsim?.socket.close()
        hwsim = nil
    }
}

/// Fallback provider: `modprobe mac80211_hwsim radios=N` (the module makes the radios itself; they
/// cannot be removed without unloading the module, which a fresh VM makes unnecessary).
public struct ModprobeRadioProvider: HwsimRadioProvider {
    public var count: Int
    public init(count: Int = 2) { self.count = count }

    public func loadModule() throws {
        if FileManager.default.fileExists(atPath: "/sys/module/mac80211_hwsim") {
            throw VMError.system(operation: "modprobe", object: "mac80211_hwsim radios=\(count)",
                                 cause: "module already loaded; the modprobe fallback needs a VM without the preload: hotspot-lab vm --no-hwsim-preload -- ...")
        }
        let result = try VMChild.capture(["modprobe", "mac80211_hwsim", "radios=\(count)"])
        guard result.status == 0 else {
            throw VMError.system(operation: "modprobe", object: "mac80211_hwsim radios=\(count)", cause: result.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    public func createRadios(count wanted: Int) throws -> [HwsimRadio] {
        let deadline = Date().addingTimeInterval(5)
        while true {
            let radios = HwsimSelftest.hwsimRadios()
            if radios.count >= wanted { return Array(radios.prefix(wanted)) }
            if Date() > deadline {
                throw VMError.system(operation: "wait for", object: "\(wanted) mac80211_hwsim radios", cause: "only \(radios.count) appeared in /sys/class/ieee80211 after 5 s")
            }
            usleep(20_000)
        }
    }

    public func move(_ radio: HwsimRadio, toNamespace name: String) throws {
        let result = try VMChild.capture(["iw", "phy", radio.phy, "set", "netns", "name", name])
        guard result.status == 0 else {
            throw VMError.system(operation: "move wiphy", object: "\(radio.phy) to netns \(name)", cause: "iw: \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    public func destroyRadios(_ radios: [HwsimRadio]) {}
}

/// The end-to-end radio check run inside the VM (`hotspot-lab selftest hwsim`, `InVMHwsimTests`,
/// `bench vm`): two hwsim radios, each moved into its own namespace; hostapd (open network, channel 6)
/// plus dnsmasq in one, wpa_supplicant plus busybox udhcpc in the other; association, a DHCP lease
/// (with RFC 8910 option 114) and a ping over the air. Tears down what it made.
public struct HwsimSelftest {
    public struct Report: Sendable {
        /// Seconds since `run` started.
        public var hwsimReady: Double = 0
        public var radiosReady: Double = 0
        public var apEnabled: Double = 0
        public var associated: Double = 0
        public var leased: Double = 0
        public var pinged: Double = 0
        public var leaseAddress = ""
        public var leaseOption114 = ""
        public var radios: [HwsimRadio] = []
        public var providerName = ""
        /// Frames captured on `hwsim0` (the air) when `pcapPath` is set.
        public var capturedFrames = 0
    }

    public var provider: any HwsimRadioProvider
    public var ssid = "hsl-selftest"
    public var channel = 6
    /// Lab subnet (TEST-NET-1).
    public var apAddress = "192.0.2.1"
    public var portalAPI = "https://portal.test/captive-api"
    public var stepTimeout: Double = 20
    /// Capture the air (`hwsim0`, every radio's frames) with tcpdump into this pcap file.
    public var pcapPath: String?

    public init(provider: any HwsimRadioProvider = NetlinkRadioProvider()) {
        self.provider = provider
    }

    /// The hwsim radios currently in this namespace (from /sys/class/ieee80211), sorted by phy index.
    public static func hwsimRadios() -> [HwsimRadio] {
        let base = "/sys/class/ieee80211"
        let phys = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [])
            .sorted { Int($0.dropFirst(3)) ?? 0 < Int($1.dropFirst(3)) ?? 0 }
        return phys.compactMap { phy in
            let device = (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(base)/\(phy)/device")) ?? ""
            guard device.contains("mac80211_hwsim") || device.contains("hwsim") else { return nil }
            let nets = (try? FileManager.default.contentsOfDirectory(atPath: "\(base)/\(phy)/device/net")) ?? []
            guard let interface = nets.sorted().first(where: { $0 != "hwsim0" }) else { return nil }
            return HwsimRadio(phy: phy, interface: interface)
        }
    }

    /// Runs the check; `log` gets one line per milestone (`hwsim ready`, `associated`, ...) as it
    /// happens, with the seconds since start.
    public func run(log: (String) -> Void) throws -> Report {
        let t0 = Date()
        func now() -> Double { Date().timeIntervalSince(t0) }
        func mark(_ what: String) -> Double {
            let t = now()
            log(String(format: "selftest: %@ after %.2f s", what, t))
            return t
        }
        var report = Report()
        report.providerName = String(describing: type(of: provider))
        let id = String(UInt32.random(in: 0..<0xFFFFF), radix: 16)
        let nsAP = "hslvm\(id)ap", nsSTA = "hslvm\(id)sta"
        let dir = "/tmp/hslvm-\(id)"
        var children: [VMChild] = []
        var radios: [HwsimRadio] = []
        var namespaces: [String] = []
        defer {
            for child in children.reversed() { child.stop(grace: 1) }
            for ns in namespaces { _ = try? VMChild.capture(["ip", "netns", "del", ns]) }
            provider.destroyRadios(radios)
            try? FileManager.default.removeItem(atPath: dir)
        }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)

        try provider.loadModule()
        report.hwsimReady = mark("hwsim ready")
        var capture: AirCapture?
        defer { capture?.stop(frameTimeout: .zero) }
        if let pcapPath {
            capture = try AirCapture.start(into: pcapPath)
        }
        radios = try provider.createRadios(count: 2)
        report.radios = radios
        report.radiosReady = mark("radios \(radios.map { "\($0.phy)/\($0.interface)" }.joined(separator: ", ")) ready")
        let ap = radios[0], sta = radios[1]

        for ns in [nsAP, nsSTA] {
            try sh(["ip", "netns", "add", ns])
            namespaces.append(ns)
            try sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        }
        try provider.move(ap, toNamespace: nsAP)
        try provider.move(sta, toNamespace: nsSTA)
        try sh(["ip", "-n", nsAP, "addr", "add", "\(apAddress)/24", "dev", ap.interface])

        let freq = 2407 + 5 * channel
        try write("\(dir)/hostapd.conf", """
            interface=\(ap.interface)
            driver=nl80211
            ssid=\(ssid)
            hw_mode=g
            channel=\(channel)
            ctrl_interface=\(dir)/hostapd

            """)
        children.append(try start(["ip", "netns", "exec", nsAP, "hostapd", "-t", "\(dir)/hostapd.conf"], log: "\(dir)/hostapd.log"))
        try waitFor("\(dir)/hostapd.log", "AP-ENABLED", what: "hostapd on \(ap.interface) (\(nsAP)) to enable the AP", process: children.last!)
        report.apEnabled = mark("AP enabled (hostapd, open, channel \(channel))")

        let prefix = apAddress.split(separator: ".").dropLast().joined(separator: ".")
        children.append(try start([
            "ip", "netns", "exec", nsAP, "dnsmasq", "--no-daemon", "--no-ping", "--no-resolv", "--port=0",
            "--user=root", "--bind-interfaces", "--interface=\(ap.interface)", "--except-interface=lo",
            "--dhcp-range=\(prefix).10,\(prefix).50,255.255.255.0,1h", "--dhcp-leasefile=\(dir)/leases",
            "--pid-file=\(dir)/dnsmasq.pid", "--dhcp-option=114,\(portalAPI)", "--log-dhcp",
        ], log: "\(dir)/dnsmasq.log"))

        try write("\(dir)/wpa.conf", """
            ctrl_interface=\(dir)/wpa
            network={
              ssid="\(ssid)"
              key_mgmt=NONE
              scan_freq=\(freq)
            }

            """)
        children.append(try start(["ip", "netns", "exec", nsSTA, "wpa_supplicant", "-t", "-i", sta.interface, "-D", "nl80211", "-c", "\(dir)/wpa.conf"], log: "\(dir)/wpa.log"))
        try waitFor("\(dir)/wpa.log", "CTRL-EVENT-CONNECTED", what: "wpa_supplicant on \(sta.interface) (\(nsSTA)) to associate with \(ssid)", process: children.last!)
        report.associated = mark("associated")

        try write("\(dir)/udhcpc.sh", """
            #!/bin/sh
            case "$1" in
              bound|renew)
                busybox ifconfig "$interface" "$ip" netmask "$subnet" up
                echo "$ip $opt114" > \(dir)/lease ;;
            esac
            exit 0

            """, mode: 0o755)
        let dhcp = try VMChild.capture(["ip", "netns", "exec", nsSTA, "busybox", "udhcpc", "-i", sta.interface, "-n", "-q", "-f", "-t", "10", "-T", "1", "-O", "114", "-s", "\(dir)/udhcpc.sh"])
        guard dhcp.status == 0, let lease = try? String(contentsOfFile: "\(dir)/lease", encoding: .utf8) else {
            let dnsmasqLog = (try? String(contentsOfFile: "\(dir)/dnsmasq.log", encoding: .utf8)) ?? ""
            throw VMError.system(operation: "DHCP lease on", object: "\(sta.interface) (\(nsSTA))",
                                 cause: "udhcpc \(VMChild.describe(status: dhcp.status)): \(dhcp.output.suffix(600)); dnsmasq: \(dnsmasqLog.suffix(600))")
        }
        let parts = lease.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ", maxSplits: 1).map(String.init)
        report.leaseAddress = parts.first ?? ""
        report.leaseOption114 = parts.count > 1 ? Self.decodeHexString(parts[1]) : ""
        report.leased = mark("leased \(report.leaseAddress) (option 114: \(report.leaseOption114))")

        try sh(["ip", "netns", "exec", nsSTA, "busybox", "ping", "-c", "1", "-W", "3", apAddress])
        report.pinged = mark("pinged \(apAddress) over the air")
        if let started = capture, let pcapPath {
            // Frames went over the air (the ping's, at least): wait for the first in the file, bounded.
            started.stop(frameTimeout: .seconds(stepTimeout))
            capture = nil
            let read = try VMChild.capture(["tcpdump", "-n", "-r", pcapPath])
            report.capturedFrames = read.output.split(separator: "\n").filter { !$0.hasPrefix("reading from") }.count
            log("selftest: captured \(report.capturedFrames) frames of the air in \(pcapPath)")
        }
        return report
    }

    /// udhcpc hands option 114 to its script hex-encoded.
    static func decodeHexString(_ hex: String) -> String {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return hex }
            bytes.append(byte)
            index = next
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func sh(_ argv: [String]) throws {
        let result = try VMChild.capture(argv)
        guard result.status == 0 else {
            throw VMError.system(operation: "run", object: argv.joined(separator: " "),
                                 cause: "\(VMChild.describe(status: result.status)): \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    private func write(_ path: String, _ text: String, mode: Int = 0o644) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode_t(mode))
    }

    private func start(_ argv: [String], log: String) throws -> VMChild {
        let fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw VMError.errno("open log", log) }
        defer { close(fd) }
        return try VMChild.spawn(argv, stdout: fd, stderr: fd)
    }

    private func waitFor(_ log: String, _ needle: String, what: String, process: VMChild) throws {
        let deadline = Date().addingTimeInterval(stepTimeout)
        while Date() < deadline {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if text.contains(needle) { return }
            if let status = process.poll() {
                throw VMError.system(operation: "wait for", object: what, cause: "\(process.argv.dropFirst(4).first ?? "process") ended (\(VMChild.describe(status: status))): \(text.suffix(800))")
            }
            usleep(10_000)
        }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw VMError.system(operation: "wait for", object: what, cause: "no \(needle) after \(Int(stepTimeout)) s: \(text.suffix(800))")
    }
}
