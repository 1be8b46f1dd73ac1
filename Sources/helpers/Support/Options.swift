// The command line every reference helper (and its provider pair) takes: `--network SSID[:PASSWORD]`, `--name`,
// `--identifier`, `--socket`, `--http-timeout`, as `--flag VALUE` or `--flag=VALUE`; each helper adds its own flags
// (`parseOwn`) and its usage text.
import Foundation
import HotspotHelper

/// A command line the helper cannot run with, or `--help` (then the description starts with `usage:`).
public struct HelperUsageError: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// A reference helper's settings: the ones all share, plus its own.
public protocol ReferenceHelperOptions {
    /// The defaults.
    init()
    var displayName: String { get set }
    var identifier: String { get set }
    var socketPath: String? { get set }
    /// Networks to claim in filterScanList: SSID -> password (nil for an open network).
    var networks: [(ssid: String, password: String?)] { get set }
    var httpTimeout: Duration { get set }
    /// The usage text (`usage: PROGRAM ...`).
    static var usage: String { get }
    /// Takes `flag` (with its value) when it is one of this helper's own: true; false when it is not its flag.
    mutating func parseOwn(_ flag: String, _ value: String) throws(HelperUsageError) -> Bool
}

extension ReferenceHelperOptions {
    public typealias UsageError = HelperUsageError

    /// No flags of its own.
    public mutating func parseOwn(_ flag: String, _ value: String) throws(HelperUsageError) -> Bool { false }

    /// Plain `--flag VALUE` / `--flag=VALUE` parsing.
    public static func parse(_ arguments: [String]) throws(HelperUsageError) -> Self {
        var options = Self()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--help" || argument == "-h" { throw HelperUsageError(description: usage) }
            guard argument.hasPrefix("--") else { throw HelperUsageError(description: "unexpected argument `\(argument)`\n\(usage)") }
            var flag = argument
            var value: String?
            if let eq = argument.firstIndex(of: "=") {
                flag = String(argument[..<eq])
                value = String(argument[argument.index(after: eq)...])
            } else {
                value = rest.popFirst()
            }
            guard let value else { throw HelperUsageError(description: "\(flag) needs a value\n\(usage)") }
            switch flag {
            case "--network":
                // SSID[:PASSWORD]: the first colon separates (an SSID containing a colon cannot be configured).
                let parts = value.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard !parts[0].isEmpty, parts[0].utf8.count <= 32 else {
                    throw HelperUsageError(description: "--network: expected SSID[:PASSWORD] with an SSID of 1 to 32 bytes, found `\(value)`")
                }
                options.networks.append((parts[0], parts.count > 1 ? parts[1] : nil))
            case "--name":
                guard !value.isEmpty, value.count <= 15 else { throw HelperUsageError(description: "--name: 1 to 15 characters, found `\(value)`") }
                options.displayName = value
            case "--identifier": options.identifier = value
            case "--socket": options.socketPath = value
            case "--http-timeout":
                guard let seconds = Double(value), seconds > 0, seconds <= 300 else {
                    throw HelperUsageError(description: "--http-timeout: seconds, more than 0 and at most 300, found `\(value)`")
                }
                options.httpTimeout = .milliseconds(Int64(seconds * 1000))
            default:
                guard try options.parseOwn(flag, value) else { throw HelperUsageError(description: "unknown option \(flag)\n\(usage)") }
            }
        }
        return options
    }

    /// The options of this process's command line, for a provider (an app extension has no one to show usage to):
    /// a usage error is logged and the process exits 64.
    public static func fromCommandLineOrExit(log: (String) -> Void) -> Self {
        do {
            return try parse(Array(CommandLine.arguments.dropFirst()))
        } catch {
            log("\(error)")
            exit(64)
        }
    }

    /// filterScanList: only the configured networks; a secure one only with its password (set on the network).
    /// `listingSkipped`: the reason also names the configured secure networks left out for want of a password.
    public func claimConfigured(_ networks: [HotspotNetwork], listingSkipped: Bool = false) -> (claimed: [HotspotNetwork], reason: String) {
        var claimed: [HotspotNetwork] = []
        var skipped: [String] = []
        for network in networks {
            guard let configured = self.networks.first(where: { $0.ssid == network.ssid }) else { continue }
            if network.isSecure {
                guard let password = configured.password else {
                    skipped.append("\(network.ssid) (secure, no password configured)")
                    continue
                }
                network.setPassword(password)
            }
            claimed.append(network)
        }
        let names = claimed.map(\.ssid).joined(separator: ", ")
        var reason = self.networks.isEmpty ? "no --network configured: claiming nothing"
            : "claiming \(claimed.count) of \(networks.count): [\(names)]"
        if listingSkipped, !skipped.isEmpty { reason += "; skipped \(skipped.joined(separator: ", "))" }
        return (claimed, reason)
    }
}
