#if canImport(Glibc)
import Glibc
#endif

/// Whether `fd` has something to read within `milliseconds` (poll(2); false on a timeout or an interrupted wait).
/// A failed poll throws, naming `what` of `interface`. The raw sockets' receives (`IPv4PacketSocket`,
/// `RouterAdvertisementListener`) wait through it.
func readable(_ fd: Int32, within milliseconds: Int32, _ what: String, of interface: String) throws -> Bool {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&poller, 1, milliseconds)
    if ready < 0 {
        if errno == EINTR { return false }
        throw SystemError.current("poll \(what) of", interface)
    }
    return ready > 0
}
