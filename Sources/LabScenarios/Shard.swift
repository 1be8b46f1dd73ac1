import Foundation

/// `--shard K/N`.
public struct Shard: Sendable, Equatable {
    public var index: Int
    public var count: Int

    public init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    public static func parse(_ text: String) throws -> Shard {
        let parts = text.split(separator: "/").map { Int($0) }
        guard parts.count == 2, let k = parts[0], let n = parts[1], n >= 1, (1...n).contains(k) else {
            throw ShardError("--shard: expected K/N with 1 <= K <= N, found `\(text)`")
        }
        return Shard(index: k, count: n)
    }

    /// Every N-th item from the K-th, after sorting: the union of the N shards is the whole list, once.
    public func select(_ items: [String]) -> [String] {
        items.sorted().enumerated().filter { $0.offset % count == index - 1 }.map(\.element)
    }
}

public struct ShardError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}
