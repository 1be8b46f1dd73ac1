import HotspotCore
import HotspotProtocol
import HotspotSystem
#if canImport(Glibc)
import Glibc
#endif

/// The persisted part of the machine: the cache and the auto-join-disabled list, in one JSON file written atomically.
public struct PersistentState: Sendable, Equatable {
    public var cache: [NetworkIdentity: CacheEntry] = [:]
    public var autoJoinDisabled: Set<NetworkIdentity> = []
    /// Each app's manager configuration (by bundle identifier); absent from the file when empty.
    public var managers: [String: ManagerConfiguration] = [:]

    public init(cache: [NetworkIdentity: CacheEntry] = [:], autoJoinDisabled: Set<NetworkIdentity> = [],
                managers: [String: ManagerConfiguration] = [:])
    {
        self.cache = cache
        self.autoJoinDisabled = autoJoinDisabled
        self.managers = managers
    }

    public static let formatVersion = 1

    public var json: JSON {
        let cacheItems: [JSON] = cache.sorted { "\($0.key)" < "\($1.key)" }.map { identity, entry in
            var o = identity.wire.objectValue!
            switch entry {
            case .helper(let h): o["helper"] = .string(h)
            case .notCaptive: o["notCaptive"] = true
            }
            return .object(o)
        }
        let disabled: [JSON] = autoJoinDisabled.sorted { "\($0)" < "\($1)" }.map(\.wire)
        var o: [String: JSON] = ["version": .number(Double(Self.formatVersion)), "cache": .array(cacheItems),
                                 "autoJoinDisabled": .array(disabled)]
        if !managers.isEmpty {
            o["managers"] = .array(managers.sorted { $0.key < $1.key }.map { app, config in
                var m = config.fields
                m["app"] = .string(app)
                return .object(m)
            })
        }
        return .object(o)
    }

    public init(json: JSON, file: String) throws(ProtocolError) {
        guard case .object(let o) = json else { throw ProtocolError(.invalidField, "\(file): expected a JSON object") }
        guard let v = o["version"]?.intValue, v == Self.formatVersion else {
            throw ProtocolError(.invalidField, "\(file): version: expected \(Self.formatVersion)")
        }
        guard let c = o["cache"]?.arrayValue else { throw ProtocolError(.invalidField, "\(file): cache: expected an array") }
        for (k, item) in c.enumerated() {
            let identity = try NetworkIdentity(wire: item, path: "\(file): cache[\(k)]")
            if let h = item["helper"]?.stringValue {
                cache[identity] = .helper(h)
            } else if item["notCaptive"]?.boolValue == true {
                cache[identity] = .notCaptive
            } else {
                throw ProtocolError(.invalidField, "\(file): cache[\(k)]: expected \"helper\" or \"notCaptive\": true")
            }
        }
        guard let a = o["autoJoinDisabled"]?.arrayValue else {
            throw ProtocolError(.invalidField, "\(file): autoJoinDisabled: expected an array")
        }
        for (k, item) in a.enumerated() {
            autoJoinDisabled.insert(try NetworkIdentity(wire: item, path: "\(file): autoJoinDisabled[\(k)]"))
        }
        if let m = o["managers"], m != .null {
            guard let list = m.arrayValue else { throw ProtocolError(.invalidField, "\(file): managers: expected an array") }
            for (k, item) in list.enumerated() {
                guard let app = item["app"]?.stringValue else {
                    throw ProtocolError(.invalidField, "\(file): managers[\(k)].app: expected a string")
                }
                managers[app] = try ManagerConfiguration(json: item, path: "\(file): managers[\(k)]")
            }
        }
    }
}

/// Loads and saves `PersistentState` at a path.
public struct StateStore: Sendable {
    public let path: String
    public init(path: String) { self.path = path }

    public enum LoadOutcome: Sendable {
        case missing
        case loaded(PersistentState)
        /// The file was unreadable or corrupt; it was moved to `movedTo` and the daemon starts clean.
        case corrupt(reason: String, movedTo: String?)
    }

    public func load() -> LoadOutcome {
        let bytes: [UInt8]?
        do {
            bytes = try AtomicFile.read(path)
        } catch {
            return moveAside(reason: error.description)
        }
        guard let bytes else { return .missing }
        do {
            let json = try JSON.parse(bytes)
            return .loaded(try PersistentState(json: json, file: path))
        } catch {
            return moveAside(reason: "\(path): \(error.description)")
        }
    }

    private func moveAside(reason: String) -> LoadOutcome {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let aside = "\(path).corrupt-\(ts.tv_sec)-\(getpid())"
        if rename(path, aside) == 0 { return .corrupt(reason: reason, movedTo: aside) }
        return .corrupt(reason: reason + "; " + SystemError.current("rename \(path) to", aside).description, movedTo: nil)
    }

    /// Removes `PATH.tmp.*` files a killed daemon left behind (its atomic write never reached the rename).
    /// Returns their names.
    @discardableResult
    public func removeStaleTemporaries() -> [String] {
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { String(path[..<$0]) } ?? "."
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard let d = opendir(dir.isEmpty ? "/" : dir) else { return [] }
        defer { closedir(d) }
        var removed: [String] = []
        while let entry = readdir(d) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasPrefix(base + ".tmp."), unlink(dir + "/" + name) == 0 { removed.append(name) }
        }
        return removed
    }

    public func save(_ state: PersistentState) throws(SystemError) {
        var bytes = state.json.bytes
        bytes.append(0x0A)
        try AtomicFile.write(bytes, to: path)
    }
}
