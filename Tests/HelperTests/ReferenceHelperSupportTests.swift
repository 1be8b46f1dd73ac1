import Foundation
import HotspotCore
import Testing
@testable import CaptiveAPIHelper
@testable import HotspotHelper
@testable import PortalHelper
@testable import ReferenceHelperSupport
@testable import VoucherHelper

/// What the reference helpers share (Sources/helpers/Support): the one HTML form parser that replaced the portal
/// helper's and the voucher helper's copies (the superset: the voucher helper's `placeholder` kept), and the one
/// command line.
@Suite("ReferenceHelperSupport: the shared form parser and command line")
struct ReferenceHelperSupportTests {
    /// What the portal helper relied on: fields in order, a `<button>` as a submit, types and names lowercased,
    /// quoted, single-quoted and bare attributes, entities decoded, the default method, the visible text without
    /// tags or comments, and what a browser submits without typing.
    @Test func formParserKeepsThePortalHelpersReading() throws {
        let html = """
            <p>before</p><FORM Action='/login?a=1&amp;b=2'>
              <!-- a comment, not text --><label>User &amp; guest</label>
              <input name=user><input type="EMAIL" name="mail"><input type=password name="pw" value='p&quot;w'>
              <input type="hidden" name="csrf" value="t0k"><input type="checkbox" name="terms"><input type="checkbox" name="news" value="yes">
              <input type="submit" name="go" value="Go"><button name="other">Other</button><input name="" type="hidden" value="unnamed">
            </form><form method="POST" action="/second"></form>
            """
        let forms = HTMLScan.forms(in: html)
        try #require(forms.count == 2)
        let form = forms[0]
        #expect(form.action == "/login?a=1&b=2" && form.method == "get" && forms[1].method == "post")
        #expect(form.fields.map(\.name) == ["user", "mail", "pw", "csrf", "terms", "news", "go", "other", ""])
        #expect(form.fields.map(\.type) == ["text", "email", "password", "hidden", "checkbox", "checkbox", "submit", "submit", "hidden"])
        #expect(form.passwordField?.value == "p\"w")
        #expect(form.typedFields.map(\.name) == ["user", "mail", "pw"])
        #expect(form.defaultSubmission.map { "\($0.name)=\($0.value)" } == ["csrf=t0k", "terms=on", "news=yes", "go=Go"])
        #expect(form.text == "User & guest Other")
        #expect(HTMLScan.visibleText("a <b>b</b> <!-- c --> &lt;d&gt;"[...]) == "a b <d>")
    }

    /// What the voucher helper relied on: each field's `placeholder` (its only hint when the name says nothing), and
    /// the voucher recognizer reading it through the shared parser.
    @Test func formParserKeepsThePlaceholder() throws {
        let html = #"<form method="post" action="/x"><input name="f1" placeholder="Room voucher &amp; code"><input type="hidden" name="h" value="1"></form>"#
        let form = try #require(HTMLScan.forms(in: html).first)
        #expect(form.fields == [FormField(name: "f1", type: "text", value: "", placeholder: "Room voucher & code"),
                                FormField(name: "h", type: "hidden", value: "1")])
        // Nothing but the placeholder speaks of a voucher: the voucher helper still finds the code field.
        let page = try #require(VoucherPage.recognize(html))
        #expect(page.codeField == "f1")
        #expect(VoucherPage.recognize(html.replacingOccurrences(of: "Room voucher &amp; code", with: "Your name")) == nil)
    }

    /// The one command line: the flags every helper takes, each helper's own, and the others refused.
    @Test func commandLineSharedAndOwnFlags() throws {
        let v = try VoucherHelperOptions.parse(["--network=Hotel:pw", "--ui", "/tmp/ui", "--identifier", "id", "--socket", "/s", "--http-timeout", "0.5"])
        #expect(v.networks.map { "\($0.ssid)|\($0.password ?? "-")" } == ["Hotel|pw"])
        #expect(v.uiDirectory == "/tmp/ui" && v.identifier == "id" && v.socketPath == "/s" && v.httpTimeout == .milliseconds(500))
        let p = try PortalHelperOptions.parse(["--email", "a@b.example", "--name", "Cafe"])
        #expect(p.email == "a@b.example" && p.displayName == "Cafe" && p.networks.isEmpty)
        let refused: [(String, [String], String)] = [
            ("portal", ["--ui", "/tmp/ui"], "unknown option --ui\nusage: hotspot-helper-portal"),
            ("voucher", ["--account", "a:b"], "unknown option --account\nusage: hotspot-helper-voucher"),
            ("captive-api", ["--email", "a@b.example"], "unknown option --email\nusage: hotspot-helper-captive-api"),
            ("captive-api", ["--network", ":pw"], "--network: expected SSID[:PASSWORD]"),
            ("voucher", ["--http-timeout", "301"], "--http-timeout: seconds"),
            ("portal", ["--network"], "--network needs a value"),
            ("voucher", ["--help"], "usage: hotspot-helper-voucher"),
        ]
        for (helper, arguments, start) in refused {
            let error: HelperUsageError? = switch helper {
            case "portal": #expect(throws: HelperUsageError.self) { try PortalHelperOptions.parse(arguments) }
            case "voucher": #expect(throws: HelperUsageError.self) { try VoucherHelperOptions.parse(arguments) }
            default: #expect(throws: HelperUsageError.self) { try CaptiveAPIHelperOptions.parse(arguments) }
            }
            #expect(error?.description.hasPrefix(start) == true, "\(helper) \(arguments): \(error?.description ?? "no error")")
        }
    }

    /// filterScanList's reason: the portal helper names the secure networks it skipped, the others do not (as before).
    @Test func claimingConfiguredNetworks() throws {
        let list = [SDKNetwork(HotspotCore.HotspotNetwork(ssid: "Home", bssid: "02:00:00:00:00:01", security: .wpa2Personal)),
                    SDKNetwork(HotspotCore.HotspotNetwork(ssid: "Cafe", bssid: "02:00:00:00:00:02", security: .open))]
        let arguments = ["--network", "Home", "--network", "Cafe"]
        let portal = PortalLogic(options: try PortalHelperOptions.parse(arguments)).filter(list)
        let voucher = VoucherLogic(options: try VoucherHelperOptions.parse(arguments)).filter(list)
        let captive = CaptiveAPILogic(options: try CaptiveAPIHelperOptions.parse(arguments)).filter(list)
        #expect(portal.claimed.map(\.ssid) == ["Cafe"] && voucher.claimed.map(\.ssid) == ["Cafe"] && captive.claimed.map(\.ssid) == ["Cafe"])
        #expect(portal.reason == "claiming 1 of 2: [Cafe]; skipped Home (secure, no password configured)")
        #expect(voucher.reason == "claiming 1 of 2: [Cafe]" && captive.reason == voucher.reason)
    }
}
