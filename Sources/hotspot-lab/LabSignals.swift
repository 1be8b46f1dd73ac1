#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HotspotSystem
import LabKit

/// SIGINT, SIGTERM, SIGHUP and SIGPIPE for the lab commands other than `up` (`run`, `demo`, `certify`,
/// `replay`, `bench`): the first one tears down every lab the command has up (`LiveLabs.stopAll`: processes,
/// radios, namespaces, links, state folders, as `up` and `clean` do), says so on stderr and ends the command
/// with 128 + the signal (130 for SIGINT, 143 for SIGTERM). A step waiting for a state or several labs at
/// once (`--jobs`) do not delay it: a thread of its own waits for the signal (docs/RELIABILITY.md).
///
/// Installed after `Placement.relayIfNeeded`: a command relayed to the VM stops the VM on SIGINT/SIGTERM
/// itself (`VMRunner`), and the copy inside the VM installs these.
enum LabSignals {
    /// Installs the handlers and the thread that waits for them (once per process).
    static func install(command: String) {
        do {
            try StopSignals.install()
        } catch {
            upDownWarn("hotspot-lab \(command): \(error); a signal will end the command without tearing its labs down")
            return
        }
        let waiter = Thread {
            guard let signal = StopSignals.wait() else { return }
            upDownWarn("hotspot-lab \(command): \(signalName(signal)) received; tearing down")
            let (prefixes, errors) = LiveLabs.stopAll()
            for error in errors { upDownWarn("hotspot-lab \(command): teardown: \(error)") }
            upDownWarn("hotspot-lab \(command): \(signalName(signal)): "
                       + (prefixes.isEmpty ? "no lab was up" : "lab\(prefixes.count == 1 ? "" : "s") \(prefixes.joined(separator: ", ")) torn down")
                       + "; exit status \(128 + signal)")
            exit(128 + signal)
        }
        waiter.start()
    }
}

/// One line to stdout for the lab commands: unbuffered, and a reader that went away (EPIPE) is a stop
/// request (as SIGPIPE), not a crash.
func labSay(_ text: String) {
    upDownSay(text)
}
