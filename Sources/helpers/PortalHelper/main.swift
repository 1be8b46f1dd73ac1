// hotspot-helper-portal's entry point: options, registration, the wait. What it does is in PortalHelper.swift
// (the reference helper's logic, shared with the portal provider pair in Sources/providers).
import Foundation
import HotspotHelper
import PortalHelper

// MARK: - Main

func runPortalHelper() -> Never {
    let options: PortalHelperOptions
    do {
        options = try PortalHelperOptions.parse(Array(CommandLine.arguments.dropFirst()))
    } catch {
        let help = error.description.hasPrefix("usage:")
        (help ? FileHandle.standardOutput : FileHandle.standardError).write(Data("\(error)\n".utf8))
        exit(help ? 0 : 64)
    }
    let logic = PortalLogic(options: options)
    // Concurrent: a slow portal never holds up filterScanList.
    let queue = DispatchQueue(label: "hotspot-helper-portal", attributes: .concurrent)
    let registered = HotspotHelper.register(
        options: HotspotHelperOptions(displayName: options.displayName, identifier: options.identifier, socketPath: options.socketPath),
        queue: queue
    ) { command in logic.handle(command) }
    guard registered else {
        log("register failed: \(HotspotHelper.lastError ?? "unknown error")")
        exit(2)
    }
    log("registered as \(options.identifier) (\"\(options.displayName)\"); account \(options.account.map { $0.username } ?? "none"); "
        + "networks [\(options.networks.map(\.ssid).joined(separator: ", "))]; probe \(HotspotHelperEnvironment.probeURL)")
    while HotspotHelper.isConnected { usleep(50_000) }
    log("hotspotd went away: exiting")
    exit(0)
}

runPortalHelper()
