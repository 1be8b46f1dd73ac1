import CSystemShims
import Glibc
import HotspotSystem
import Netlink
import Testing
import TestSupport

func sockaddrIn(_ address: String, _ port: UInt16) -> sockaddr_in {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = port.bigEndian
    inet_pton(AF_INET, address, &addr.sin_addr)
    return addr
}

func withSockaddr<T>(_ addr: sockaddr_in, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
    var copy = addr
    return withUnsafePointer(to: &copy) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}

@Suite("Namespaces and veth (root)", .tags(.root), .requiresRoot, .serialized)
struct NamespaceRootTests {
    @Test func rootTwoNamespacesJoinedByVethCarryTCP() throws {
        let prefix = testPrefix("t")
        let namespaces = try NetworkNamespace.createMany([prefix + "a", prefix + "b"])
        let (a, b) = (namespaces[0], namespaces[1])
        defer { for ns in namespaces { try? ns.delete() } }
        #expect(NetworkNamespace.list().contains(a.name))

        // The veth is created in a (through a's socket) with its peer directly in b.
        try a.route.createVeth(prefix + "0", peer: prefix + "1", peerNamespace: b)
        try a.route.addAddress(IPPrefix("192.0.2.1/24")!, to: prefix + "0")
        try b.route.addAddress(IPPrefix("192.0.2.2/24")!, to: prefix + "1")
        try a.route.setUp(prefix + "0")
        try b.route.setUp(prefix + "1")
        #expect(try a.route.link(prefix + "0").isUp)
        #expect(try b.route.addresses().contains { $0.prefix == IPPrefix("192.0.2.2/24")! })
        // Sealed: the host's root namespace does not see the link.
        #expect(throws: SystemError.self) { try RouteNetlink.current().link(prefix + "0") }

        let listener = try b.runInside { () throws -> Int32 in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw SystemError.current("socket") }
            let bound = withSockaddr(sockaddrIn("192.0.2.2", 7001)) { bind(fd, $0, $1) }
            guard bound == 0, listen(fd, 4) == 0 else { throw SystemError.current("bind/listen", "192.0.2.2:7001") }
            return fd
        }
        defer { close(listener) }
        let client = try a.runInside { () throws -> Int32 in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let connected = withSockaddr(sockaddrIn("192.0.2.2", 7001)) { connect(fd, $0, $1) }
            guard connected == 0 else { throw SystemError.current("connect", "192.0.2.2:7001") }
            return fd
        }
        defer { close(client) }
        let server = accept(listener, nil, nil)
        #expect(server >= 0)
        defer { close(server) }
        let payload: [UInt8] = Array("hello across veth".utf8)
        #expect(write(client, payload, payload.count) == payload.count)
        var received = [UInt8](repeating: 0, count: 64)
        let count = read(server, &received, received.count)
        #expect(Array(received.prefix(max(count, 0))) == payload)

        // IPv6: addresses usable at once (no DAD), a route via the peer, visible to iproute2, then removed.
        try a.route.addAddress(IPPrefix("2001:db8::1/64")!, to: prefix + "0")
        try b.route.addAddress(IPPrefix("2001:db8::2/64")!, to: prefix + "1")
        let v6Route = Route(destination: IPPrefix("2001:db8:99::/48")!, gateway: IPAddress("2001:db8::2"),
                            outputInterface: try a.route.index(of: prefix + "0"))
        try a.route.addRoute(v6Route)
        let routes6 = try ProcessRunner.check(ProcessConfiguration("ip", ["-n", a.name, "-6", "route", "show", "2001:db8:99::/48"]))
        #expect(routes6.stdout.contains("via 2001:db8::2"))
        try a.route.deleteRoute(v6Route)
        let after6 = try ProcessRunner.check(ProcessConfiguration("ip", ["-n", a.name, "-6", "route", "show", "2001:db8:99::/48"]))
        #expect(after6.stdout.isEmpty)

        // iproute2 sees and can enter our namespace; so does hotspot-nsexec.
        let ipView = try ProcessRunner.check(ProcessConfiguration("ip", ["netns", "exec", b.name, "ip", "-o", "-4", "addr", "show", prefix + "1"]))
        #expect(ipView.stdout.contains("192.0.2.2/24"))
        let nsexecView = try ProcessRunner.check(try ProcessConfiguration("ip", ["-o", "-4", "addr", "show", prefix + "0"]).inNetworkNamespace(a.name))
        #expect(nsexecView.stdout.contains("192.0.2.1/24"))
    }

    @Test func rootPolicyRoutingSelectsTableByFwmark() throws {
        let prefix = testPrefix("p")
        let namespaces = try NetworkNamespace.createMany([prefix + "a", prefix + "b"])
        let (a, b) = (namespaces[0], namespaces[1])
        defer { for ns in namespaces { try? ns.delete() } }
        try a.route.createVeth(prefix + "0", peer: prefix + "1", peerNamespace: b)
        try a.route.addAddress(IPPrefix("192.0.2.1/24")!, to: prefix + "0")
        try b.route.addAddress(IPPrefix("192.0.2.2/24")!, to: prefix + "1")
        try b.route.addAddress(IPPrefix("203.0.113.1/32")!, to: "lo")
        try a.route.setUp(prefix + "0")
        try b.route.setUp(prefix + "1")
        let oif = try a.route.index(of: prefix + "0")
        try a.route.addRoute(Route(destination: IPPrefix("203.0.113.0/24")!, gateway: IPAddress("192.0.2.2"), outputInterface: oif, table: 100))
        let rulesBefore = try a.route.ruleCount()
        try a.route.addRule(RoutingRule(priority: 1000, fwmark: 0x1, fwmask: 0xff, table: 100))
        #expect(try a.route.ruleCount() == rulesBefore + 1)

        let receiver = try b.runInside { () throws -> Int32 in
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            let bound = withSockaddr(sockaddrIn("203.0.113.1", 7002)) { bind(fd, $0, $1) }
            guard bound == 0 else { throw SystemError.current("bind", "203.0.113.1:7002") }
            return fd
        }
        defer { close(receiver) }
        func send(mark: UInt32?) throws -> Int32 {
            try a.runInside { () -> Int32 in
                let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
                defer { close(fd) }
                if var mark {
                    setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, socklen_t(4))
                }
                let message: [UInt8] = Array("marked".utf8)
                let sent = withSockaddr(sockaddrIn("203.0.113.1", 7002)) { sendto(fd, message, message.count, 0, $0, $1) }
                return sent < 0 ? -Errno.current : Int32(sent)
            }
        }
        // Unmarked: the main table has no route to 203.0.113.0/24.
        #expect(try send(mark: nil) == -ENETUNREACH)
        // Marked 0x1: the rule selects table 100, the datagram crosses the veth.
        #expect(try send(mark: 0x1) == 6)
        var pfd = pollfd(fd: receiver, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pfd, 1, 2000) == 1)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(recv(receiver, &buffer, 16, 0) == 6)

        try a.route.deleteRule(RoutingRule(priority: 1000, fwmark: 0x1, fwmask: 0xff, table: 100))
        #expect(try a.route.ruleCount() == rulesBefore)
        #expect(try send(mark: 0x1) == -ENETUNREACH)
    }

    @Test func rootLinkPropertiesBridgeAndErrors() throws {
        let prefix = testPrefix("l")
        let ns = try NetworkNamespace.create(prefix + "a")
        defer { try? ns.delete() }
        try ns.route.createBridge(prefix + "br")
        try ns.route.createVeth(prefix + "0", peer: prefix + "1")
        try ns.route.setMTU(prefix + "0", 1400)
        let mac = MACAddress("02:00:5e:10:00:01")!
        try ns.route.setMAC(prefix + "0", mac)
        try ns.route.setMaster(prefix + "0", bridge: prefix + "br")
        let link = try ns.route.link(prefix + "0")
        #expect(link.mtu == 1400)
        #expect(link.mac == mac)
        #expect(link.master == (try ns.route.index(of: prefix + "br")))
        #expect(try ns.route.link(prefix + "br").kind == "bridge")
        try ns.route.addAddress(IPPrefix("2001:db8::1/64")!, to: prefix + "br")
        #expect(try ns.route.addresses().contains { $0.prefix == IPPrefix("2001:db8::1/64")! })

        // Errors name the operation, the objects and the errno text.
        do {
            try ns.route.createVeth(prefix + "0", peer: prefix + "9")
            Issue.record("duplicate veth accepted")
        } catch {
            #expect("\(error)" == "create veth \(prefix)0 <-> \(prefix)9: File exists (EEXIST)")
        }

        // Move a link into another namespace.
        let other = try NetworkNamespace.create(prefix + "b")
        defer { try? other.delete() }
        try ns.route.move(prefix + "1", to: other)
        #expect(try other.route.link(prefix + "1").name == prefix + "1")
        try ns.route.deleteLink(prefix + "br")
        #expect(throws: SystemError.self) { try ns.route.link(prefix + "br") }
    }

    @Test func rootOpenAndDeleteNamedNamespace() throws {
        let name = testPrefix("o") + "a"
        let created = try NetworkNamespace.create(name)
        created.release()
        let opened = try NetworkNamespace.open(name)
        #expect(try opened.route.link("lo").isUp)
        try opened.delete()
        #expect(!NetworkNamespace.list().contains(name))
        do {
            _ = try NetworkNamespace.open(name)
            Issue.record("opened a deleted namespace")
        } catch {
            #expect("\(error)" == "open netns \(name): No such file or directory (ENOENT)")
        }
    }
}

@Suite("Namespaces from async code (root)", .tags(.root), .requiresRoot)
struct AsyncNamespaceRootTests {
    @Test func rootCreateFromAsyncTaskUsesDedicatedThreads() async throws {
        let prefix = testPrefix("y")
        let namespaces = try await NetworkNamespace.createManyAsync([prefix + "a", prefix + "b"])
        defer { for ns in namespaces { try? ns.delete() } }
        #expect(namespaces.map(\.name) == [prefix + "a", prefix + "b"])
        // The task's own thread never changed namespace: the host's root view has no such link.
        try namespaces[0].route.createVeth(prefix + "0", peer: prefix + "1", peerNamespace: namespaces[1])
        #expect(throws: SystemError.self) { try RouteNetlink.current().link(prefix + "0") }
        #expect(try namespaces[1].route.link(prefix + "1").name == prefix + "1")
        let tid = try await DedicatedThread.runAsync { hslThreadID() }
        #expect(tid != hslThreadID())
    }
}

func hslThreadID() -> Int32 { hsl_gettid() }
