#if canImport(Glibc)
import Glibc
#endif
import HotspotSystem
import Netlink

/// A sealed lab: owns every namespace, link, radio and process it creates and tears them down in reverse
/// order (also when setup fails halfway).
///
/// Every name starts with the lab's prefix `hsl` + a 4-hex-digit run id (e.g. `hsl3fa2ap`), so interface
/// names stay within 15 characters. Before creating anything the lab writes its intent to
/// `/run/hotspot-lab/<prefix>/journal` and its owner to `/run/hotspot-lab/<prefix>/owner` (pid and start
/// time), so `LabCleanup` can remove what a crashed run left behind. Labs are sealed: links only join lab
/// namespaces to each other, addresses come from the documentation/benchmarking ranges, nothing is added
/// to the host's root namespace except radios while they are being created.
public final class Lab: @unchecked Sendable {  // @unchecked: resources, namespaces, radios and `tornDown` are touched only with `lock` held
    /// Every lab name starts with this.
    public static let namePrefix = "hsl"
    /// Interface names must fit IFNAMSIZ - 1.
    public static let maximumNameLength = 15

    public let runID: String
    /// `hsl` + run id: the prefix of every name this lab creates.
    public let prefix: String
    public let stateDirectory: String

    private let lock = Mutex(recursive: true)
    private var resources: [LabResource] = []
    private var namespaces: [String: NetworkNamespace] = [:]
    private var hwsim: Hwsim?
    private var air: NetworkNamespace?
    private var tornDown = false

    /// What the lab owns, in creation order.
    enum LabResource {
        case namespace(String)
        case process(ChildProcess)
        case radio(String, namespace: String)
        case rootLink(String)
    }

    /// Starts a lab: removes what dead runs left (`LabCleanup.cleanDeadRuns`), picks a free run id,
    /// writes the owner file. `runID` may be given (4 lowercase hex digits) for reproducible names.
    /// `taken(prefix)`: whether a prefix is in use elsewhere (a kept log folder of an earlier run, whose hotspotd
    /// state a new lab must not inherit); a picked id that is taken is skipped.
    public static func start(runID requested: String? = nil, cleanDeadRuns: Bool = true,
                             taken: (String) -> Bool = { _ in false }) throws -> Lab {
        if cleanDeadRuns { _ = LabCleanup.cleanDeadRuns() }
        LabKernelModules.preload()
        try LabState.makeRoot()
        for _ in 0..<64 {
            let id = requested ?? String(format4Hex(UInt16.random(in: 0...UInt16.max)))
            let prefix = namePrefix + id
            let directory = LabState.root + "/" + prefix
            if requested == nil && taken(prefix) { continue }
            // The directory and its owner appear together for any cleaner (`LabState.withRunsLock`).
            let code: Int32 = try LabState.withRunsLock {
                guard mkdir(directory, 0o755) == 0 else { return Errno.current }
                do {
                    try LabState.writeOwner(directory)
                } catch {
                    LabState.removeDirectory(directory)
                    throw error
                }
                return 0
            }
            if code == 0 {
                let lab = Lab(runID: id, prefix: prefix, stateDirectory: directory)
                do {
                    try LiveLabs.register(lab)   // refused once a stopping command tore its labs down
                } catch {
                    lab.tornDown = true
                    LabState.removeDirectory(directory)
                    throw error
                }
                try lab.startGuardian()
                return lab
            }
            if code != EEXIST || requested != nil { throw SystemError("create lab state", directory, errno: code) }
        }
        throw SystemError("create lab state", LabState.root, reason: "no free run id after 64 tries")
    }

    init(runID: String, prefix: String, stateDirectory: String) {
        self.runID = runID
        self.prefix = prefix
        self.stateDirectory = stateDirectory
    }

    deinit { _ = teardown() }

    /// `prefix + suffix`, checked against the 15-character interface name limit.
    public func name(_ suffix: String) throws -> String {
        let name = prefix + suffix
        guard name.utf8.count <= Lab.maximumNameLength, !suffix.contains("/"), !suffix.contains(" ") else {
            throw SystemError("name lab object", "'\(name)'",
                              reason: "expected at most \(Lab.maximumNameLength) characters without '/' or spaces (suffix at most \(Lab.maximumNameLength - prefix.count))")
        }
        return name
    }

    // MARK: namespaces and links

    /// Creates namespaces named `prefix + suffix`, each with `lo` up.
    @discardableResult
    public func createNamespaces(_ suffixes: [String]) throws -> [NetworkNamespace] {
        let names = try suffixes.map { try name($0) }
        try lock.withLock {
            try checkOpen()
            for name in names {
                try journal("netns \(name)")
                resources.append(.namespace(name))
            }
        }
        let created = try NetworkNamespace.createMany(names)
        lock.withLock { for ns in created { namespaces[ns.name] = ns } }
        return created
    }

    @discardableResult
    public func createNamespace(_ suffix: String) throws -> NetworkNamespace {
        try createNamespaces([suffix])[0]
    }

    /// A namespace this lab created, by suffix.
    public func namespace(_ suffix: String) -> NetworkNamespace? {
        lock.withLock { namespaces[prefix + suffix] }
    }

    /// Joins two lab namespaces with a veth pair (`prefix + nameA` in `a`, `prefix + nameB` in `b`, the
    /// peer created directly in `b`), assigns the addresses and brings both ends up. Addresses must come
    /// from the lab ranges (see `LabAddressPolicy`).
    public func connect(
        _ a: NetworkNamespace, _ nameA: String, addresses addressesA: [IPPrefix] = [],
        to b: NetworkNamespace, _ nameB: String, addresses addressesB: [IPPrefix] = []
    ) throws {
        let linkA = try name(nameA)
        let linkB = try name(nameB)
        for prefix in addressesA + addressesB { try LabAddressPolicy.check(prefix) }
        try checkOwned(a)
        try checkOwned(b)
        try lock.withLock { try checkOpen() }
        // Links inside lab namespaces vanish with them; nothing to journal beyond the namespaces.
        try a.route.createVeth(linkA, peer: linkB, peerNamespace: b)
        for address in addressesA { try a.route.addAddress(address, to: linkA) }
        for address in addressesB { try b.route.addAddress(address, to: linkB) }
        try a.route.setUp(linkA)
        try b.route.setUp(linkB)
    }

    /// Creates a bridge inside a lab namespace.
    public func createBridge(in namespace: NetworkNamespace, _ suffix: String) throws {
        try checkOwned(namespace)
        try namespace.route.createBridge(try name(suffix))
        try namespace.route.setUp(try name(suffix))
    }

    // MARK: radios

    /// The lab's "air": a namespace of its own from which every radio of the lab is created. mac80211_hwsim
    /// radios hear each other only within the netgroup of the namespace they were created from, so the lab's
    /// radios share one medium and labs running at the same time (`run --jobs`) do not hear each other.
    package func airNamespace() throws -> NetworkNamespace {
        if let air = lock.withLock({ air }) { return air }
        let created = try createNamespace("air")
        lock.withLock { air = created }
        return created
    }

    /// Creates a mac80211_hwsim radio named `prefix + suffix` from the lab's air namespace (netgroup rule),
    /// brings its interfaces down, and moves its wiphy into `namespace`. Returns the radio and the names of
    /// its interfaces (now inside `namespace`).
    public func createRadio(_ suffix: String, in namespace: NetworkNamespace, channels: UInt32 = 1) throws
        -> (radio: SimulatedRadio, interfaces: [String])
    {
        let radioName = try name(suffix)
        try checkOwned(namespace)
        let air = try airNamespace()
        let hwsim = try lock.withLock { () throws -> Hwsim in
            try checkOpen()
            try journal("radio \(radioName)")
            resources.append(.radio(radioName, namespace: namespace.name))
            if let hwsim = self.hwsim { return hwsim }
            let created = try Hwsim.inside(air)
            self.hwsim = created
            return created
        }
        let seed = UInt32(UInt16(runID, radix: 16) ?? 0)
        let index = UInt8(truncatingIfNeeded: lock.withLock { resources.count })
        let radio = try hwsim.createRadio(name: radioName, channels: channels, permanentAddress: MACAddress.local(seed, index),
                                          destroyOnClose: true)
        let nl80211 = try air.runInside { try Nl80211() }
        let wiphy = try nl80211.wiphy(named: radioName)
        let interfaces = try nl80211.interfaces(ofWiphy: wiphy)
        for interface in interfaces { try air.route.setUp(interface.name, false) }
        try nl80211.moveWiphy(wiphy, to: namespace)
        // The move renames an interface whose name is taken in the target namespace (cfg80211 uses "wlan%d"),
        // e.g. a hotspot's second radio: read the names there.
        let moved = try namespace.runInside { try Nl80211() }.interfaces(ofWiphy: wiphy)
        return (radio, moved.map(\.name))
    }

    // MARK: processes

    /// Starts a process through hotspot-nsexec (inside `namespace` when given) and records its pid and
    /// start time so a later `clean` can stop it if this run dies. The process is tied to this one
    /// (`--die-with`, started from the lifeline thread): it is killed when this process ends, even by SIGKILL.
    /// `resolvConf`: the file the process sees as /etc/resolv.conf (a station's DNS, `StationResolver`).
    @discardableResult
    public func spawn(_ configuration: ProcessConfiguration, in namespace: NetworkNamespace? = nil, resolvConf: String? = nil) throws -> ChildProcess {
        if let namespace { try checkOwned(namespace) }
        let config = try configuration.tiedToThisProcess(inNetworkNamespace: namespace?.name, resolvConf: resolvConf)
        return try lock.withLock {
            try checkOpen()
            let child = try ChildProcess.spawnTied(config)
            let start = processStartTime(child.pid) ?? 0
            resources.append(.process(child))
            try journal("process \(child.pid) \(start)")
            return child
        }
    }

    /// The lab's guardian (`hotspot-nsexec --guard`): if this process ends without tearing down (SIGKILL), it
    /// kills every journaled process, also those that dropped the parent-death signal (dnsmasq). It is the
    /// first resource, so teardown stops it last (SIGTERM while this process lives: it exits quietly).
    /// Namespaces and the state folder stay for `clean`.
    private func startGuardian() throws {
        let config = ProcessConfiguration(try NSExec.path(), ["--guard", String(getpid()), stateDirectory + "/journal"],
                                          stdout: .discard)
        let child = try ChildProcess.spawnTied(config)
        lock.withLock { resources.append(.process(child)) }
    }

    // MARK: teardown

    /// Tears down everything in reverse order: processes (SIGTERM, then SIGKILL), radios, namespaces, then
    /// the state directory. Returns the errors met (teardown continues past them). Idempotent.
    @discardableResult
    public func teardown() -> [any Error] {
        let (items, hwsim, namespaces) = lock.withLock { () -> ([LabResource], Hwsim?, [String: NetworkNamespace]) in
            if tornDown { return ([], nil, [:]) }
            tornDown = true
            LiveLabs.unregister(prefix)
            let result = (resources, self.hwsim, self.namespaces)
            resources = []
            self.hwsim = nil
            self.namespaces = [:]
            return result
        }
        var errors: [any Error] = []
        for item in items.reversed() {
            do {
                switch item {
                case .process(let child):
                    try child.terminate(grace: .seconds(2))
                case .radio(let name, let namespaceName):
                    // DEL_RADIO only matches radios in the requester's namespace: ask from where it was moved,
                    // then (not moved after all) from the root namespace.
                    var deleted = false
                    if let namespace = namespaces[namespaceName], let inside = try? Hwsim.inside(namespace) {
                        do {
                            try inside.deleteRadio(name: name)
                            deleted = true
                        } catch let error as SystemError where error.errno == ENODEV || error.errno == ENOENT {}
                        inside.socket.close()
                    }
                    if !deleted, let hwsim {
                        do { try hwsim.deleteRadio(name: name) } catch let error as SystemError where error.errno == ENODEV || error.errno == ENOENT {}
                    }
                case .namespace(let name):
                    namespaces[name]?.release()
                    try NetworkNamespace.delete(name)
                case .rootLink(let name):
                    do { try RouteNetlink.current().deleteLink(name) } catch let error as SystemError where error.errno == ENODEV {}
                }
            } catch {
                errors.append(error)
            }
        }
        hwsim?.socket.close()
        if errors.isEmpty { LabState.removeDirectory(stateDirectory) }
        return errors
    }

    /// True when no link with this lab's prefix exists in the host's root namespace (sealed).
    public func isSealed() throws -> Bool {
        try !RouteNetlink.current().links().contains { $0.name.hasPrefix(prefix) }
    }

    // MARK: internals

    /// Refuses to create more once torn down, or once this process was asked to stop (`SignalService`: a
    /// bring-up interrupted by a signal stops at its next step and tears down what it made).
    private func checkOpen() throws {
        if tornDown { throw SystemError("use lab", prefix, reason: "already torn down") }
        if let signal = SignalService.requested {
            throw SystemError("build lab", prefix, reason: "interrupted by signal \(signal) (\(signalName(signal))); tearing down")
        }
    }

    private func checkOwned(_ namespace: NetworkNamespace) throws {
        guard namespace.name.hasPrefix(prefix) else {
            throw SystemError("use namespace", namespace.name, reason: "not created by lab \(prefix); labs only join their own namespaces")
        }
    }

    private func journal(_ line: String) throws {
        try LabState.append(line + "\n", to: stateDirectory + "/journal")
    }
}

/// Lab addresses come only from 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 198.18.0.0/15 and
/// 2001:db8::/32.
public enum LabAddressPolicy {
    public static let allowed: [IPPrefix] = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "198.18.0.0/15", "2001:db8::/32"]
        .map { IPPrefix($0)! }

    public static func contains(_ prefix: IPPrefix) -> Bool {
        allowed.contains { range in
            range.address.isIPv6 == prefix.address.isIPv6 && prefix.length >= range.length
                && IPPrefix(prefix.address, length: range.length).network == range.address
        }
    }

    public static func check(_ prefix: IPPrefix) throws {
        guard contains(prefix) else {
            throw SystemError("assign lab address", prefix.description,
                              reason: "expected an address inside 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 198.18.0.0/15 or 2001:db8::/32 (labs are sealed)")
        }
    }
}

/// On kernels with module support (the VM's distribution kernel), loads what labs use before the first
/// request: inside the VM the kernel's on-demand loading runs `/sbin/modprobe` in the initramfs root,
/// where it does not exist, so veth, nf_tables and the nft expressions never autoload.
public enum LabKernelModules {
    /// A VM run that builds labs loads these in the background while its job starts (`VMOptions.preloadModules`).
    public static let modules = [
        "veth", "bridge", "tun", "nf_tables", "nft_chain_nat", "nft_nat", "nft_masq", "nft_redir", "nft_ct",
        "nft_reject", "nft_reject_inet", "nft_socket", "nft_tproxy", "nft_fib_inet", "nft_limit", "nft_log",
        "sch_netem", "sch_tbf", "sch_htb",
        // WPA2/WPA3 keys in mac80211 (CCMP, GCMP, BIP) use these crypto templates, also loaded on demand.
        "ccm", "gcm", "ctr", "cmac", "seqiv", "michael_mic", "libarc4",
    ]
    /// True once a preload ran (or was skipped for good): once per process.
    private static let done = Locked(false)

    static func preload() {
        done.withLock { done in
            if done { return }
            done = true
            guard getuid() == 0, access("/proc/modules", F_OK) == 0 else { return }
            waitForTheVMInit()
            let missing = modules.filter { access("/sys/module/\($0)", F_OK) != 0 }
            guard !missing.isEmpty, let modprobe = SystemTools.find("modprobe") else { return }
            _ = try? ProcessRunner.run(ProcessConfiguration(modprobe, ["-a", "-q"] + missing), timeout: .seconds(30))
        }
    }

    /// In a VM whose init loads the modules in the background (`VMInit.modulesLoading` present), waits for it to finish
    /// (bounded: after 60 s the missing ones are loaded here, as without it). A module half loaded by the init shows in
    /// /sys/module before its init has run, so the marker, not /sys/module, says when they can be used.
    static func waitForTheVMInit(marker: String = modulesLoadingMarker, timeout: Duration = .seconds(60)) {
        let deadline = ContinuousClock.now + timeout
        while access(marker, F_OK) == 0, ContinuousClock.now < deadline { usleep(20_000) }
    }

    /// `VMInit.modulesLoading` (LabSandbox does not import LabVM; `VMUnitTests.preloadModules` holds the two equal).
    static let modulesLoadingMarker = "/run/hotspot-lab-modules.loading"
}

/// SIGINT, SIGTERM ... for messages.
public func signalName(_ signal: Int32) -> String {
    SignalService.name(signal)
}

func format4Hex(_ value: UInt16) -> String {
    let text = String(value, radix: 16)
    return String(repeating: "0", count: 4 - text.count) + text
}
