// hotspot-helper-voucher's entry point: options, registration, the wait. What it does is in VoucherHelper.swift
// (the reference helper's logic, shared with its provider pair in Sources/providers).
import Foundation
import HotspotHelper
import VoucherHelper

// MARK: - Main

func runVoucherHelper() -> Never {
    let options: VoucherHelperOptions
    do {
        options = try VoucherHelperOptions.parse(Array(CommandLine.arguments.dropFirst()))
    } catch {
        let help = error.description.hasPrefix("usage:")
        (help ? FileHandle.standardOutput : FileHandle.standardError).write(Data("\(error)\n".utf8))
        exit(help ? 0 : 64)
    }
    let logic = VoucherLogic(options: options)
    // Concurrent: presentUI waits for the user without holding up other commands.
    let queue = DispatchQueue(label: "hotspot-helper-voucher", attributes: .concurrent)
    let registered = HotspotHelper.register(
        options: HotspotHelperOptions(displayName: options.displayName, identifier: options.identifier, socketPath: options.socketPath),
        queue: queue
    ) { command in logic.handle(command) }
    guard registered else {
        log("register failed: \(HotspotHelper.lastError ?? "unknown error")")
        exit(2)
    }
    log("registered as \(options.identifier) (\"\(options.displayName)\"); networks [\(options.networks.map(\.ssid).joined(separator: ", "))]; "
        + "UI \(options.uiDirectory ?? "none"); probe \(HotspotHelperEnvironment.probeURL)")
    while HotspotHelper.isConnected { usleep(50_000) }
    log("hotspotd went away: exiting")
    exit(0)
}

runVoucherHelper()
