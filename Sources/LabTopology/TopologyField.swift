import Yams

/// A line and column, counted from 1.
package struct Position: Sendable, Equatable {
    package var line: Int
    package var column: Int
}

/// A node with its dotted path.
package struct Field {
    package let node: Node
    package let path: String
    package let file: String

    package init(node: Node, path: String, file: String) {
        self.node = node
        self.path = path
        self.file = file
    }

    package var mark: Position { node.mark.map { Position(line: $0.line, column: $0.column) } ?? Position(line: 1, column: 1) }

    package func error(_ message: String) -> TopologyError {
        TopologyError(file: file, line: mark.line, column: mark.column, field: path, message: message)
    }

    package func child(_ key: String, _ node: Node) -> Field {
        Field(node: node, path: path.isEmpty ? key : "\(path).\(key)", file: file)
    }

    package var kindName: String {
        switch node {
        case .scalar(let s):
            if s.style == .plain && s.string.isEmpty || s.string == "~" || s.string == "null" { return "null" }
            return "scalar `\(s.string)`"
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        }
    }

    /// The mapping's entries, rejecting keys not in `allowed` and requiring those in `required` (`keys(allowed:required:)`
    /// wraps them for `required(_:)` reads).
    func mapping(allowed: [String], required: [String] = []) throws -> [String: Field] {
        guard case .mapping(let mapping) = node else {
            throw error("expected a mapping with keys \(allowed.joined(separator: ", ")), found \(kindName)")
        }
        var result: [String: Field] = [:]
        for (key, value) in mapping {
            guard let name = key.string else {
                throw Field(node: key, path: path, file: file).error("expected a string key")
            }
            guard allowed.contains(name) else {
                throw Field(node: key, path: path.isEmpty ? name : "\(path).\(name)", file: file)
                    .error("unknown key `\(name)`; expected one of: \(allowed.joined(separator: ", "))")
            }
            result[name] = child(name, value)
        }
        for name in required where result[name] == nil {
            throw error("missing key `\(name)`")
        }
        return result
    }

    package func list() throws -> [Field] {
        guard case .sequence(let sequence) = node else {
            throw error("expected a list, found \(kindName)")
        }
        return sequence.enumerated().map { Field(node: $0.element, path: "\(path)[\($0.offset)]", file: file) }
    }

    package func string() throws -> String {
        guard case .scalar(let scalar) = node, kindName != "null" else {
            throw error("expected a string, found \(kindName)")
        }
        return scalar.string
    }

    package func nonEmptyString() throws -> String {
        let value = try string()
        guard !value.isEmpty else { throw error("expected a non-empty string") }
        return value
    }

    /// A unicast MAC address (a BSSID); the error shows `example`.
    package func unicastMAC(example: String = "02:00:00:00:01:01") throws -> MACAddressText {
        let text = try string()
        guard let mac = MACAddressText(text), !mac.isMulticast else {
            throw error("expected a unicast MAC address such as \(example), found `\(text)`")
        }
        return mac
    }

    package func int(in range: ClosedRange<Int>) throws -> Int {
        guard case .scalar(let scalar) = node, scalar.style == .plain, let value = Int(scalar.string) else {
            throw error("expected an integer in \(range.lowerBound)...\(range.upperBound), found \(kindName)")
        }
        guard range.contains(value) else {
            throw error("expected an integer in \(range.lowerBound)...\(range.upperBound), found \(value)")
        }
        return value
    }

    package func bool() throws -> Bool {
        guard case .scalar(let scalar) = node, scalar.style == .plain else {
            throw error("expected true or false, found \(kindName)")
        }
        switch scalar.string {
        case "true", "yes": return true
        case "false", "no": return false
        default: throw error("expected true or false, found \(kindName)")
        }
    }

    func ipv4() throws -> IPv4Address {
        let text = try string()
        guard let address = IPv4Address(text) else { throw error("expected an IPv4 address such as 198.51.100.1, found `\(text)`") }
        guard IPv4Subnet.isLabAddress(address) else {
            throw error("address \(text) is outside the lab ranges; expected one in 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 or 198.18.0.0/15")
        }
        return address
    }

    func subnet(minLength: Int = 8, maxLength: Int = 30) throws -> IPv4Subnet {
        let text = try string()
        guard let subnet = IPv4Subnet(text), text.contains("/") else {
            throw error("expected a subnet in CIDR form such as 198.51.100.0/24, found `\(text)`")
        }
        guard subnet.network.description == text.split(separator: "/")[0] else {
            throw error("expected the network address \(subnet), found `\(text)` (host bits set)")
        }
        guard (minLength...maxLength).contains(subnet.length) else {
            throw error("expected a prefix length in /\(minLength)...\(maxLength), found /\(subnet.length)")
        }
        guard IPv4Subnet.isLabSubnet(subnet) else {
            throw error("subnet \(text) is outside the lab ranges; expected one inside 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 or 198.18.0.0/15")
        }
        return subnet
    }
}

/// A mapping's keys, read after `Field.mapping` checked them: `required(_:)` for the keys it made sure of.
package struct FieldKeys {
    package let parent: Field
    package let fields: [String: Field]

    package subscript(_ key: String) -> Field? { fields[key] }

    /// A key the mapping was checked to have; throws (naming the key) rather than trapping if it is missing.
    package func required(_ key: String) throws -> Field {
        guard let field = fields[key] else { throw parent.error("missing key `\(key)`") }
        return field
    }
}

extension Field {
    package func keys(allowed: [String], required: [String] = []) throws -> FieldKeys {
        FieldKeys(parent: self, fields: try mapping(allowed: allowed, required: required))
    }
}
