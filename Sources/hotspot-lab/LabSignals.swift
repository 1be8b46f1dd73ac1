#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HotspotSystem
import LabKit
import Synchronization

/// The lab commands' side of the signal service (`SignalService`, installed first thing in `main`, before any
/// argument is parsed): until a command takes over shutdown a stop signal ends it as the default action would
/// (nothing is created before that).
///
/// `run`, `demo`, `certify`, `replay` and `bench` take over with `install(command:)`: the first stop request
/// (SIGINT, SIGTERM, SIGHUP, SIGPIPE when the output's reader is gone or another process sent it, or a write to a
/// closed stdout) tears down every lab the command has up
/// (`LiveLabs.stopAll`: processes, radios, namespaces, links, state folders, as `up` and `clean` do), says so
/// on stderr and ends the command with 128 + the signal (130 for SIGINT, 143 for SIGTERM). A step waiting for a
/// state or several labs at once (`--jobs`) do not delay it: the service's own thread runs the teardown
/// (docs/RELIABILITY.md). A signal the command was started with ignored (`nohup`, a background job) stays ignored.
///
/// Taken over after `Placement.relayIfNeeded`: a command relayed to the VM stops the VM on SIGINT/SIGTERM
/// itself (`VMRunner`), and the copy inside the VM takes over there.
enum LabSignals {
    /// Takes over shutdown for `command` (once per process).
    static func install(command: String) {
        let once = Atomic<Bool>(false)
        let registration = SignalService.onStop { request in
            guard !once.exchange(true, ordering: .acquiringAndReleasing) else { return }
            upDownWarn("hotspot-lab \(command): \(request) received; tearing down")
            let (prefixes, errors) = LiveLabs.stopAll()
            for error in errors { upDownWarn("hotspot-lab \(command): teardown: \(error)") }
            upDownWarn("hotspot-lab \(command): \(signalName(request.signal)): "
                       + (prefixes.isEmpty ? "no lab was up" : "lab\(prefixes.count == 1 ? "" : "s") \(prefixes.joined(separator: ", ")) torn down")
                       + "; exit status \(request.exitStatus)")
            exit(request.exitStatus)
        }
        registrations.withLock { $0.append(registration) }
    }

    /// Kept for the life of the process.
    private static let registrations = Synchronization.Mutex<[SignalService.Registration]>([])
}

/// Installs the signal service first thing in `main` (before parsing): see `LabSignals`.
func installSignalService() {
    do {
        try SignalService.install()
    } catch {
        upDownWarn("hotspot-lab: \(error)")
        exit(1)
    }
}

/// One line to stdout for the lab commands: unbuffered, and a reader that went away (EPIPE) is a stop
/// request (as SIGPIPE), not a crash.
func labSay(_ text: String) {
    upDownSay(text)
}
