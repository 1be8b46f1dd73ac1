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
    /// What a load left out to keep the limit (`init(json:file:limit:)`); zero for a state made in memory.
    public var dropped = Dropped()

    /// Entries a load left out: past `limit`, counted but not even parsed.
    public struct Dropped: Sendable, Equatable {
        public var cacheEntries = 0
        public var autoJoinDisabled = 0
        public init() {}
    }

    public init(cache: [NetworkIdentity: CacheEntry] = [:], autoJoinDisabled: Set<NetworkIdentity> = [],
                managers: [String: ManagerConfiguration] = [:])
    {
        self.cache = cache
        self.autoJoinDisabled = autoJoinDisabled
        self.managers = managers
    }

    public static let formatVersion = 1

    public var json: JSON {
        // Sorted by the identity's text, formatted once per entry (not in every comparison: issue 27).
        let cacheItems: [JSON] = Self.sortedByText(cache.keys).map { identity in
            var o = identity.wire.objectValue!
            switch cache[identity]! {
            case .helper(let h): o["helper"] = .string(h)
            case .notCaptive: o["notCaptive"] = true
            }
            return .object(o)
        }
        let disabled: [JSON] = Self.sortedByText(autoJoinDisabled).map(\.wire)
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

    /// Identities in the order of their text (`description`), each formatted once: O(n log n) comparisons of
    /// strings made in O(n).
    static func sortedByText(_ identities: some Collection<NetworkIdentity>) -> [NetworkIdentity] {
        let list = Array(identities)
        let texts = list.map { "\($0)" }
        return texts.indices.sorted { texts[$0] < texts[$1] }.map { list[$0] }
    }

    /// The entries kept of a loaded state: at most `limit` cache entries and `limit` auto-join-disabled networks
    /// (the first in the file's order, which is the identities' text). Returns how many of each were dropped.
    /// Keeps at most `limit` cache entries and auto-join-disabled networks (the first in the order of their
    /// text, as a load keeps the first in the file), counting the others in `dropped`: for a state that did not
    /// come through `init(json:file:limit:)`.
    public mutating func applyLimit(_ limit: Int) {
        let limit = max(limit, 1)
        if cache.count > limit {
            let sorted = Self.sortedByText(cache.keys)
            for identity in sorted[limit...] { cache[identity] = nil }
            dropped.cacheEntries += sorted.count - limit
        }
        if autoJoinDisabled.count > limit {
            let sorted = Self.sortedByText(autoJoinDisabled)
            autoJoinDisabled = Set(sorted[..<limit])
            dropped.autoJoinDisabled += sorted.count - limit
        }
    }

    /// Parses a state file's JSON. At most `limit` cache entries and `limit` auto-join-disabled networks are
    /// taken, the first in the file (which lists them in the order of their text); the others are counted in
    /// `dropped`, not parsed (issue 27: a large file must not hold up the start).
    public init(json: JSON, file: String, limit: Int = .max, skipped: [String: Int] = [:]) throws(ProtocolError) {
        guard case .object(let o) = json else { throw ProtocolError(.invalidField, "\(file): expected a JSON object") }
        guard let v = o["version"]?.intValue, v == Self.formatVersion else {
            throw ProtocolError(.invalidField, "\(file): version: expected \(Self.formatVersion)")
        }
        guard let c = o["cache"]?.arrayValue else { throw ProtocolError(.invalidField, "\(file): cache: expected an array") }
        dropped.cacheEntries = max(0, c.count - limit) + (skipped["cache"] ?? 0)
        for (k, item) in c.prefix(limit).enumerated() {
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
        dropped.autoJoinDisabled = max(0, a.count - limit) + (skipped["autoJoinDisabled"] ?? 0)
        for (k, item) in a.prefix(limit).enumerated() {
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

    /// Loads the file; at most `limit` cache entries and auto-join-disabled networks are taken (the rest are
    /// counted in `PersistentState.dropped`).
    public func load(limit: Int = .max) -> LoadOutcome {
        let bytes: [UInt8]?
        do {
            bytes = try AtomicFile.read(path, maximumBytes: Self.maximumBytes)
        } catch {
            return moveAside(reason: error.description)
        }
        guard let bytes else { return .missing }
        do {
            // Entries past the limits are checked but not built (26,000 entries in 2 MiB: bench/README.md).
            let (json, skipped) = try JSON.parse(bytes, arraysKeepingAtMost: limit)
            return .loaded(try PersistentState(json: json, file: path, limit: limit, skipped: skipped))
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

    /// The largest state file loaded: a full cache and auto-join list take well under it (docs/RELIABILITY.md);
    /// a larger file is moved aside like a corrupt one, so that loading never takes long (issue 27).
    public static let maximumBytes = 2 << 20

    /// Writes `state` beside the file and removes it again: throws when a save would fail now (ENOSPC, EROFS).
    public func checkWritable(_ state: PersistentState) throws(SystemError) {
        var bytes = state.json.bytes
        bytes.append(0x0A)
        try AtomicFile.checkWritable(bytes, besides: path)
    }

    public func save(_ state: PersistentState) throws(SystemError) {
        var bytes = state.json.bytes
        bytes.append(0x0A)
        try AtomicFile.write(bytes, to: path)
    }
}
