// hotspot-probe: the `probe` scenario step's HTTP client, run in a station's namespace. Fetches each URL once
// with the helper SDK's client (no redirect following; the system's own evaluation traffic, so its sockets carry
// the command traffic mark and pass the station's IP suppression, as an OS's connectivity probe does) and prints
// one line per URL: `<status> <body as hex>` or `error <text>`. Names resolve with $HOTSPOT_RESOLV_CONF's servers;
// https:// is verified against $HOTSPOT_CA_FILE.
import Foundation
import HotspotHelper

var timeout: Duration = .seconds(10)
var urls: [String] = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.first {
    arguments.removeFirst()
    if argument == "--timeout", let value = arguments.first, let seconds = Int(value) {
        arguments.removeFirst()
        timeout = .seconds(seconds)
    } else {
        urls.append(argument)
    }
}
let client = HotspotHTTPClient(mark: HotspotHelper.commandTrafficMark, timeout: timeout)
for url in urls {
    do {
        let response = try client.get(url)
        print("\(response.status) " + response.body.map { String(format: "%02x", $0) }.joined())
    } catch {
        print("error " + "\(error)".replacingOccurrences(of: "\n", with: " "))
    }
}
