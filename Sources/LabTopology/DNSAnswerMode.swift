/// How the hotspot's DNS answers (a fault switched during a run, docs/REPLAY.md).
public enum DNSAnswerMode: String, Sendable, CaseIterable {
    /// Every name resolves to the internet's address (the portal's own name to the gateway).
    case normal
    /// No name is known and there is no upstream: every query is refused (REFUSED).
    case refused
    /// Every name answers with the gateway (the portal's host): a DNS hijack.
    case hijack
    /// Every query is answered SERVFAIL (an upstream that failed): dnsmasq serves DHCP only (`--port=0`)
    /// and `hotspot-dns-fault` answers on the gateway's port 53.
    case servfail
    /// The internet's public names answer with a private address (`privateAddress`, RFC 1918), as a
    /// misconfigured or rebinding resolver does; nothing in the lab has that address.
    case privateAddresses = "private"

    /// Every mode a topology's `dns:` or a scenario's `dns:` step may name: `no-answer` (the hotspot drops every
    /// query) and the modes above.
    public static let names = ["no-answer"] + allCases.map(\.rawValue)
}
