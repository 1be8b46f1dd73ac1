import HotspotCore
import Foundation
import Netlink
import PortalKinds
import Yams

/// A topology file that cannot be used: where, which field, and what was expected.
public struct TopologyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int
    /// Dotted path of the field, e.g. `hotspots[0].security.psk`.
    public var field: String
    public var message: String

    public init(file: String, line: Int, column: Int, field: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.field = field
        self.message = message
    }

    public var description: String {
        "\(file):\(line):\(column): \(field.isEmpty ? "(document)" : field): \(message)"
    }
}

/// Parses and validates topology YAML, keeping node marks so every error names `file:line:column`.
public enum TopologyParser {
    /// Reads and parses a file (at most `LabYAML.maxBytes`, no anchors or aliases).
    public static func load(path: String) throws -> Topology {
        try parse(try LabYAML.read(path: path), file: path)
    }

    /// Parses YAML text; `file` is used in messages only.
    public static func parse(_ yaml: String, file: String) throws -> Topology {
        guard let root = try LabYAML.compose(yaml, file: file) else {
            throw TopologyError(file: file, line: 1, column: 1, field: "", message: "the file is empty; expected a mapping with `hotspots:`")
        }
        let reader = Reader(file: file)
        let topology = try reader.topology(Field(node: root, path: "", file: file))
        try Validator(file: file).validate(topology, reader.marks)
        return topology
    }

    static func convert(_ error: YamlError, file: String) -> TopologyError {
        switch error {
        case .scanner(let context, let problem, let mark, _):
            return TopologyError(file: file, line: mark.line, column: mark.column, field: "",
                                 message: "YAML syntax: \(problem)\(context.map { " \($0.text)" } ?? "")")
        case .parser(let context, let problem, let mark, _):
            return TopologyError(file: file, line: mark.line, column: mark.column, field: "",
                                 message: "YAML syntax: \(problem)\(context.map { " \($0.text)" } ?? "")")
        case .composer(let context, let problem, let mark, _):
            return TopologyError(file: file, line: mark.line, column: mark.column, field: "",
                                 message: "YAML: \(problem)\(context.map { " \($0.text)" } ?? "")")
        case .duplicatedKeysInMapping(let duplicates, let context):
            let names = duplicates.joined(separator: ", ")
            let mark = context.mark
            return TopologyError(file: file, line: mark.line, column: mark.column, field: names,
                                 message: "duplicate key; each key may appear once in a mapping")
        case .reader(let problem, let offset, let value, let yaml):
            // `offset` counts characters; the position is that character's.
            var line = 1, column = 1
            for character in yaml.prefix(offset ?? 0) {
                if character == "\n" || character == "\r\n" { line += 1; column = 1 } else { column += character.unicodeScalars.count }
            }
            return TopologyError(file: file, line: line, column: column, field: "",
                                 message: "YAML: \(problem)\(value >= 0 ? String(format: " (0x%02X)", value) : ""); expected printable UTF-8 text")
        default:
            return TopologyError(file: file, line: 1, column: 1, field: "", message: "YAML: \(error)")
        }
    }
}

/// Builds the model; remembers marks of fields the validator refers to.
package final class Reader {
    let file: String
    var marks: [String: Position] = [:]

    init(file: String) { self.file = file }

    func remember(_ field: Field) { marks[field.path] = field.mark }

    func topology(_ root: Field) throws -> Topology {
        let keys = try root.keys(allowed: ["name", "description", "internet", "hotspots", "stations"], required: ["hotspots"])
        let name = try keys["name"].map { try identifier($0) } ?? "lab"
        _ = try keys["description"]?.string()
        let internet = try keys["internet"].map(internet) ?? Internet(
            address: Internet.defaultAddress, uplinks: Internet.defaultUplinks, names: Internet.defaultNames)
        guard let hotspotsField = keys["hotspots"] else { throw root.error("missing key `hotspots`") }
        let hotspotFields = try hotspotsField.list()
        guard !hotspotFields.isEmpty else { throw hotspotsField.error("expected at least one hotspot") }
        let hotspots = try hotspotFields.map(hotspot)
        let stations = try keys["stations"].map { try $0.list().map(station) } ?? []
        return Topology(name: name, file: file, internet: internet, hotspots: hotspots, stations: stations)
    }

    func identifier(_ field: Field) throws -> String {
        let text = try field.nonEmptyString()
        let ok = text.count <= 12 && text.unicodeScalars.allSatisfy {
            ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "-"
        } && text.first?.isLetter == true
        guard ok else {
            throw field.error("expected a short name: lower-case letters, digits and '-', starting with a letter, at most 12 characters; found `\(text)`")
        }
        return text
    }

    func internet(_ field: Field) throws -> Internet {
        let keys = try field.keys(allowed: ["address", "uplinks", "names", "port", "services", "hosts"])
        let address = try keys["address"]?.ipv4() ?? Internet.defaultAddress
        let uplinks = try keys["uplinks"]?.subnet(maxLength: 30) ?? Internet.defaultUplinks
        if let f = keys["uplinks"] { remember(f) }
        if let f = keys["address"] { remember(f) }
        let names = try keys["names"].map { try $0.list().map { try $0.nonEmptyString() } } ?? Internet.defaultNames
        let port = try keys["port"]?.int(in: 1...65535) ?? 80
        if uplinks.contains(address) {
            throw (keys["address"] ?? field).error("the internet address \(address) lies inside the uplink range \(uplinks); expected an address outside it")
        }
        let services = try keys["services"].map(services) ?? []
        var hosts: [HostAddress] = []
        if let f = keys["hosts"] {
            guard case .mapping(let mapping) = f.node else { throw f.error("expected a mapping of host names to IPv4 addresses, found \(f.kindName)") }
            for (key, value) in mapping {
                let keyField = Field(node: key, path: f.path, file: f.file)
                guard let name = key.string?.lowercased(), !name.isEmpty, !name.hasPrefix("."), !name.contains(".."),
                      name.unicodeScalars.allSatisfy({ ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "." })
                else { throw keyField.error("expected a host name such as cdn.vendor.example, found `\(key.string ?? "")`") }
                hosts.append(HostAddress(name: name, address: try f.child(name, value).ipv4()))
            }
        }
        return Internet(address: address, uplinks: uplinks, names: names, port: port, services: services, hosts: hosts)
    }

    /// `services:`: a list of `{host, path, method, status, headers, body, delay-ms, fault}` (host and path required).
    func services(_ field: Field) throws -> [InternetRoute] {
        var seen: [String: String] = [:]
        return try field.list().map { item in
            let keys = try item.keys(allowed: ["host", "path", "method", "status", "headers", "body", "delay-ms", "fault"],
                                     required: ["host", "path"])
            let hostField = try keys.required("host")
            let host = try hostField.nonEmptyString().lowercased()
            let bare = host.hasPrefix("*.") ? String(host.dropFirst(2)) : host
            guard !bare.isEmpty, !bare.hasPrefix("."), !bare.hasSuffix("."), !bare.contains(".."),
                  bare.unicodeScalars.allSatisfy({ ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "." })
            else {
                throw hostField.error("expected a host name such as api.vendor.example (or *.vendor.example), found `\(host)`")
            }
            let pathField = try keys.required("path")
            let path = try pathField.nonEmptyString()
            guard path.hasPrefix("/"), !path.contains("?"), !path.contains(where: { $0.isWhitespace }) else {
                throw pathField.error("expected a path starting with / without a query (a trailing * matches a prefix), found `\(path)`")
            }
            let method = try keys["method"].map { f -> String in
                let text = try f.nonEmptyString().uppercased()
                guard ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].contains(text) else {
                    throw f.error("expected an HTTP method (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS), found `\(text)`")
                }
                return text
            }
            let status = try keys["status"]?.int(in: 100...599) ?? 200
            var headers: [String: String] = [:]
            if let f = keys["headers"] {
                guard case .mapping(let mapping) = f.node else { throw f.error("expected a mapping of header names to values, found \(f.kindName)") }
                for (key, value) in mapping {
                    let keyField = Field(node: key, path: f.path, file: f.file)
                    guard let name = key.string, !name.isEmpty,
                          name.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 32 && $0 != ":" }) else {
                        throw keyField.error("expected a header name (printable ASCII without spaces or `:`)")
                    }
                    let valueField = f.child(name, value)
                    let text = try valueField.string()
                    guard !text.contains("\r"), !text.contains("\n") else { throw valueField.error("expected a header value on one line") }
                    headers[name] = text
                }
            }
            let body = try keys["body"]?.string() ?? ""
            let delay = try keys["delay-ms"]?.int(in: 0...120_000) ?? 0
            let fault = try keys["fault"].map { f -> InternetFault in
                let text = try f.nonEmptyString()
                guard let fault = InternetFault(rawValue: text) else {
                    throw f.error("unknown fault `\(text)`; expected one of: \(InternetFault.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                return fault
            }
            let key = "\(method ?? "*") \(host)\(path)"
            if let first = seen[key] {
                throw item.error("duplicate route \(key) (first at \(first)); expected each method, host and path once")
            }
            seen[key] = item.path
            return InternetRoute(host: host, path: path, method: method, status: status, headers: headers, body: body,
                                 delayMilliseconds: delay, fault: fault)
        }
    }

    func hotspot(_ field: Field) throws -> Hotspot {
        let keys = try field.keys(
            allowed: ["name", "ssid", "ssid_hex", "bssid", "channel", "hidden", "security", "gateway", "faults", "access-points"],
            required: ["name", "bssid", "gateway"])
        let name = try identifier(try keys.required("name"))
        remember(try keys.required("name"))
        let ssid = try Reader.ssid(keys)
        let bssidField = try keys.required("bssid")
        remember(bssidField)
        let bssid = try bssidField.unicastMAC(example: "02:00:00:00:01:00")
        let channel = try keys["channel"]?.int(in: 1...13) ?? 6
        let hidden = try keys["hidden"]?.bool() ?? false
        let security = try keys["security"].map(security) ?? .open
        let gateway = try self.gateway(try keys.required("gateway"))
        let faults = try keys["faults"].map(faults) ?? Faults()
        // More access points of the same SSID on the same LAN: [{bssid, channel (default the hotspot's)}].
        var extra: [AccessPoint] = []
        if let list = keys["access-points"] {
            for item in try list.list() {
                let ap = try item.keys(allowed: ["bssid", "channel"], required: ["bssid"])
                let field = try ap.required("bssid")
                remember(field)
                extra.append(AccessPoint(bssid: try field.unicastMAC(), channel: try ap["channel"]?.int(in: 1...13) ?? channel))
            }
        }
        return Hotspot(name: name, rawSSID: ssid, bssid: bssid, channel: channel, hidden: hidden,
                       security: security, gateway: gateway, faults: faults, extraAccessPoints: extra)
    }

    func security(_ field: Field) throws -> Security {
        if case .scalar = field.node {
            let kind = try field.string()
            guard kind == "open" else {
                throw field.error("`\(kind)` needs settings; expected `open`, or a mapping with `kind:` open, wpa2-psk or wpa2-enterprise")
            }
            return .open
        }
        let keys = try field.keys(allowed: ["kind", "psk", "eap-method", "users"], required: ["kind"])
        let kindField = try keys.required("kind")
        switch try kindField.string() {
        case "open":
            for extra in ["psk", "eap-method", "users"] {
                if let f = keys[extra] { throw f.error("`\(extra)` does not apply to an open network") }
            }
            return .open
        case "wpa2-psk":
            guard let pskField = keys["psk"] else { throw field.error("missing key `psk` (8 to 63 characters) for wpa2-psk") }
            let psk = try pskField.string()
            guard psk.count >= 8 else { throw pskField.error("expected a PSK of 8 to 63 characters, found \(psk.count)") }
            guard psk.count <= 63, psk.allSatisfy({ $0.isASCII && !$0.isNewline }) else {
                throw pskField.error("expected a PSK of 8 to 63 printable ASCII characters")
            }
            return .wpa2PSK(passphrase: psk)
        case "wpa2-enterprise":
            let method: EAPMethod
            if let f = keys["eap-method"] {
                let text = try f.string()
                guard let m = EAPMethod(rawValue: text) else {
                    throw f.error("unknown EAP method `\(text)`; expected one of: \(EAPMethod.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                method = m
            } else {
                method = .peap
            }
            guard let usersField = keys["users"] else { throw field.error("missing key `users` (identity/password list) for wpa2-enterprise") }
            let users = try usersField.list().map { userField -> EAPUser in
                let u = try userField.keys(allowed: ["identity", "password"], required: ["identity", "password"])
                return EAPUser(identity: try u.required("identity").nonEmptyString(), password: try u.required("password").nonEmptyString())
            }
            guard !users.isEmpty else { throw usersField.error("expected at least one user") }
            return .wpa2Enterprise(method: method, users: users)
        case let other:
            throw kindField.error("unknown security kind `\(other)`; expected one of: open, wpa2-psk, wpa2-enterprise")
        }
    }

    func gateway(_ field: Field) throws -> Gateway {
        let keys = try field.keys(
            allowed: ["subnet", "address", "dhcp-range", "dns", "captive-api", "portal", "session-seconds", "lease-seconds",
                      "ip", "ipv6-prefix"],
            required: ["subnet"])
        let subnetField = try keys.required("subnet")
        let subnet = try subnetField.subnet(maxLength: 29)
        remember(subnetField)
        let address = try keys["address"]?.ipv4() ?? IPv4Address(value: subnet.network.value + 1)
        if let f = keys["address"], !subnet.contains(address) || address == subnet.first || address == subnet.last {
            throw f.error("expected a host address inside \(subnet), found \(address)")
        }
        guard var (start, end) = DHCPRange.derived(subnet: subnet, gateway: address) else {
            throw subnetField.error("expected a subnet with a host address besides the gateway \(address) for DHCP, found \(subnet)")
        }
        if let f = keys["dhcp-range"] {
            let items = try f.list()
            guard items.count == 2 else { throw f.error("expected a list of two addresses [first, last], found \(items.count) items") }
            start = try items[0].ipv4()
            end = try items[1].ipv4()
            for (item, a) in [(items[0], start), (items[1], end)] where !subnet.contains(a) || a == subnet.first || a == subnet.last {
                throw item.error("expected a host address inside \(subnet), found \(a)")
            }
            guard start <= end else { throw f.error("expected first <= last, found \(start) > \(end)") }
            if (start...end).contains(address) {
                throw f.error("the range \(start)-\(end) contains the gateway address \(address); expected a range without it")
            }
        }
        let dns = try keys["dns"].map { f -> [IPv4Address] in
            if case .sequence = f.node { return try f.list().map { try $0.ipv4() } }
            return [try f.ipv4()]
        } ?? [address]
        var portal: PortalSettings?
        if let f = keys["portal"] { portal = try self.portal(f) }
        let (ip, ipv6) = try self.ipFamilies(keys, subnet: subnet)
        let portalHost = ip == .v6Only && ipv6 != nil ? "[\(ipv6!.address)]" : "\(address)"
        var captiveAPI = CaptiveAPI.none
        if let f = keys["captive-api"] {
            let text = try f.string()
            switch text {
            case "none": captiveAPI = .none
            case "auto":
                guard let portal else { throw f.error("`auto` needs a `portal:`; expected `none` or a URI") }
                captiveAPI = .uri("http://\(portalHost):\(portal.port)/captive-api")
            default:
                guard text.hasPrefix("http://") || text.hasPrefix("https://"), text.count > 8 else {
                    throw f.error("expected `none`, `auto` or an http(s) URI for DHCP option 114, found `\(text)`")
                }
                captiveAPI = .uri(text)
            }
        }
        let session = try keys["session-seconds"]?.int(in: 1...604_800) ?? 3600
        let lease = try keys["lease-seconds"]?.int(in: 120...604_800) ?? 3600
        var gateway = Gateway(subnet: subnet, address: address, dhcpStart: start, dhcpEnd: end, dns: dns,
                              captiveAPI: captiveAPI, portal: portal, sessionSeconds: session, leaseSeconds: lease)
        gateway.ip = ip
        gateway.ipv6 = ipv6
        return gateway
    }

    /// `ip: v4 | dual | v6-only` and `ipv6-prefix:` (a /64 inside 2001:db8::/32, outside the lab's own
    /// 2001:db8:ff00::/40; derived from the IPv4 subnet when absent). A prefix needs `ip: dual` or `v6-only`.
    func ipFamilies(_ keys: FieldKeys, subnet: IPv4Subnet) throws -> (IPFamilies, GatewayIPv6?) {
        var ip = IPFamilies.v4
        if let f = keys["ip"] {
            let text = try f.string()
            guard let parsed = IPFamilies(rawValue: text) else {
                throw f.error("expected one of v4, dual, v6-only, found `\(text)`")
            }
            ip = parsed
        }
        guard let f = keys["ipv6-prefix"] else { return (ip, ip.hasIPv6 ? GatewayIPv6.derived(from: subnet) : nil) }
        guard ip.hasIPv6 else { throw f.error("an IPv6 prefix needs `ip: dual` or `ip: v6-only`; this gateway is `ip: v4`") }
        let text = try f.string()
        guard let prefix = IPPrefix(text), prefix.address.isIPv6, text.contains("/") else {
            throw f.error("expected an IPv6 prefix such as 2001:db8:1::/64, found `\(text)`")
        }
        guard prefix.length == 64 else { throw f.error("expected a /64 (SLAAC needs 64 bits of interface identifier), found /\(prefix.length)") }
        guard GatewayIPv6.contains(GatewayIPv6.documentationRange, prefix) else {
            throw f.error("expected a prefix inside the documentation range 2001:db8::/32 (labs are sealed), found \(text)")
        }
        guard !GatewayIPv6.contains(GatewayIPv6.labReserved, prefix) else {
            throw f.error("\(text) is inside 2001:db8:ff00::/40, which the lab keeps for the internet, uplinks and NAT64; expected another /64 of 2001:db8::/32")
        }
        return (ip, GatewayIPv6(prefix: prefix, address: GatewayIPv6.host(prefix.network, 1)))
    }

    func faults(_ field: Field) throws -> Faults {
        let keys = try field.keys(allowed: ["uplink-down", "dns-down", "dns", "latency-ms", "jitter-ms", "loss-percent", "rate-kbit"])
        var faults = Faults()
        faults.uplinkDown = try keys["uplink-down"]?.bool() ?? false
        if let dns = keys["dns"] {
            if keys["dns-down"] != nil {
                throw dns.error("give either dns-down or dns, not both (dns-down: true is dns: refused)")
            }
            let mode = try dns.nonEmptyString()
            guard DNSAnswerMode.names.contains(mode) else {
                throw dns.error("unknown DNS mode `\(mode)`; expected one of: \(DNSAnswerMode.names.joined(separator: ", "))")
            }
            faults.dns = mode
        } else if try keys["dns-down"]?.bool() == true {
            faults.dns = "refused"
        }
        faults.latencyMS = try keys["latency-ms"]?.int(in: 0...10_000) ?? 0
        faults.lossPercent = try keys["loss-percent"]?.int(in: 0...100) ?? 0
        faults.jitterMS = try keys["jitter-ms"]?.int(in: 0...10_000) ?? 0
        faults.rateKbit = try keys["rate-kbit"]?.int(in: 0...10_000_000) ?? 0
        return faults
    }

    /// An SSID: `ssid:` (text, its UTF-8 bytes) or `ssid_hex:` (the bytes as hex digits, for an SSID that is
    /// not UTF-8), exactly one of them; 1 to 32 bytes (IEEE 802.11; an empty SSID is a hidden one's broadcast).
    package static func ssid(_ keys: FieldKeys) throws -> SSID {
        switch (keys["ssid"], keys["ssid_hex"]) {
        case (nil, nil):
            throw keys.parent.error("missing key `ssid`")   // (or `ssid_hex`: the bytes of an SSID that is not UTF-8, docs/TOPOLOGY.md)
        case (.some, .some(let hex)):
            throw hex.error("expected `ssid` or `ssid_hex`, not both")
        case (.some(let field), nil):
            let text = try field.nonEmptyString()
            guard text.utf8.count <= SSID.maximumBytes else {
                throw field.error("expected an SSID of at most \(SSID.maximumBytes) bytes, found \(text.utf8.count)")
            }
            return SSID(text)
        case (nil, .some(let field)):
            let text = try field.nonEmptyString()
            guard let ssid = SSID(hex: text) else {
                throw field.error("expected the SSID's bytes as hex digits, two a byte (e.g. 436166e9 for Caf\\xe9), found `\(text)`")
            }
            guard (1...SSID.maximumBytes).contains(ssid.bytes.count) else {
                throw field.error("expected an SSID of 1 to \(SSID.maximumBytes) bytes, found \(ssid.bytes.count)")
            }
            return ssid
        }
    }

    func station(_ field: Field) throws -> Station {
        let keys = try field.keys(allowed: ["name", "helpers", "known-networks", "apps"], required: ["name"])
        let name = try identifier(try keys.required("name"))
        remember(try keys.required("name"))
        let helpers = try keys["helpers"].map { try $0.list().map { try $0.commandLine() } } ?? []
        let known = try keys["known-networks"].map { f in
            try f.list().map { item -> KnownNetwork in
                remember(item)
                let k = try item.keys(allowed: ["ssid", "ssid_hex", "psk", "identity", "password", "auto-join"])
                let ssid = try Reader.ssid(k)
                if let p = k["psk"] {
                    let psk = try p.string()
                    guard (8...63).contains(psk.count) else { throw p.error("expected a PSK of 8 to 63 characters, found \(psk.count)") }
                }
                return KnownNetwork(
                    rawSSID: ssid, psk: try k["psk"]?.string(),
                    identity: try k["identity"]?.string(), password: try k["password"]?.string(),
                    autoJoin: try k["auto-join"]?.bool() ?? true)
            }
        } ?? []
        let apps = try keys["apps"].map(apps) ?? []
        return Station(name: name, helpers: helpers, knownNetworks: known, apps: apps)
    }
}

/// Cross-field checks (duplicates, overlaps, references), with the marks the reader kept.
struct Validator {
    let file: String

    func error(_ marks: [String: Position], _ path: String, _ message: String) -> TopologyError {
        let mark = marks[path] ?? Position(line: 1, column: 1)
        return TopologyError(file: file, line: mark.line, column: mark.column, field: path, message: message)
    }

    func validate(_ topology: Topology, _ marks: [String: Position]) throws {
        var names: [String: Int] = [:]
        var bssids: [String: String] = [:]
        for (index, hotspot) in topology.hotspots.enumerated() {
            if let first = names[hotspot.name] {
                throw error(marks, "hotspots[\(index)].name", "duplicate hotspot name `\(hotspot.name)` (first used by hotspots[\(first)]); expected a unique name")
            }
            names[hotspot.name] = index
            // BSSIDs are unique across every access point of every hotspot.
            for (ap, accessPoint) in hotspot.accessPoints.enumerated() {
                let path = ap == 0 ? "hotspots[\(index)].bssid" : "hotspots[\(index)].access-points[\(ap - 1)].bssid"
                let key = accessPoint.bssid.text.lowercased()
                if let first = bssids[key] {
                    throw error(marks, path, "duplicate BSSID \(accessPoint.bssid) (first used by \(first)); expected a unique BSSID")
                }
                bssids[key] = ap == 0 ? "hotspots[\(index)]" : "hotspots[\(index)].access-points[\(ap - 1)]"
            }
        }
        let count = topology.hotspots.count
        if count * 4 > 1 << (32 - topology.internet.uplinks.length) {
            throw error(marks, "internet.uplinks", "\(topology.internet.uplinks) holds \((1 << (32 - topology.internet.uplinks.length)) / 4) uplink /30s; expected room for \(count)")
        }
        let uplinkRange = IPv4Subnet(network: topology.internet.uplinks.network,
                                     length: max(topology.internet.uplinks.length, 32 - bitsFor(count * 4)))
        for (index, hotspot) in topology.hotspots.enumerated() {
            let subnet = hotspot.gateway.subnet
            for other in 0..<index where topology.hotspots[other].gateway.subnet.overlaps(subnet) {
                throw error(marks, "hotspots[\(index)].gateway.subnet", "subnet \(subnet) overlaps hotspots[\(other)].gateway.subnet \(topology.hotspots[other].gateway.subnet); expected disjoint subnets")
            }
            if subnet.overlaps(uplinkRange) || subnet.overlaps(topology.internet.uplinks) {
                throw error(marks, "hotspots[\(index)].gateway.subnet", "subnet \(subnet) overlaps internet.uplinks \(topology.internet.uplinks); expected disjoint subnets")
            }
            if let prefix = hotspot.gateway.ipv6?.prefix,
               let other = (0..<index).first(where: { topology.hotspots[$0].gateway.ipv6?.prefix.network == prefix.network }) {
                throw error(marks, "hotspots[\(index)].gateway.subnet", "IPv6 prefix \(prefix) is also hotspots[\(other)]'s; expected disjoint prefixes")
            }
            if subnet.contains(topology.internet.address) {
                throw error(marks, "hotspots[\(index)].gateway.subnet", "subnet \(subnet) contains the internet address \(topology.internet.address); expected disjoint subnets")
            }
        }
        var stationNames: Set<String> = []
        for (index, station) in topology.stations.enumerated() {
            guard stationNames.insert(station.name).inserted else {
                throw error(marks, "stations[\(index)].name", "duplicate station name `\(station.name)`; expected a unique name")
            }
            for (k, known) in station.knownNetworks.enumerated() {
                let path = "stations[\(index)].known-networks[\(k)]"
                guard let hotspot = topology.hotspots.first(where: { $0.rawSSID == known.rawSSID }) else {
                    continue // a network the station remembers but that is not on the air: allowed
                }
                switch hotspot.security {
                case .wpa2PSK where known.psk == nil && station.helperCommands.isEmpty && !station.apps.contains(where: \.hasProviders):
                    // With helpers, the password may come from a helper's filterScanList answer.
                    throw error(marks, path, "\(known.rawSSID.printable) is wpa2-psk; expected `psk:` (8 to 63 characters), or a helper that sets the password in its filterScanList answer")
                case .wpa2Enterprise where known.identity == nil || known.password == nil:
                    throw error(marks, path, "\(known.rawSSID.printable) is wpa2-enterprise; expected `identity:` and `password:`")
                default: break
                }
            }
        }
    }

    private func bitsFor(_ n: Int) -> Int {
        var bits = 0
        while (1 << bits) < n { bits += 1 }
        return bits
    }
}
