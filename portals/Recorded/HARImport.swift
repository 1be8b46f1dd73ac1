import Foundation

// `hotspot-lab portal import`: a HAR capture of a sign-in turned into a recorded portal definition, with every
// personal value found listed and replaced (by a per-station placeholder or a stand-in), never written out.

/// A personal value the import found: what it is, where it was first seen, and what replaced it.
public struct HARPersonalValue: Sendable, Equatable {
    /// `client MAC`, `client IP`, `MAC`, `IP`, `e-mail`, `cookie`, `token`, `session id`, `credential`.
    public var kind: String
    public var value: String
    /// What the definition has instead (`{{mac}}`, `guest@example.com`, `{{setting:password}}`); the value itself when kept.
    public var replacement: String
    /// The first place it was seen, `log.entries[2].request.url`.
    public var location: String
    /// `--keep`: left in the definition on purpose.
    public var kept: Bool
}

public struct HARImportResult: Sendable {
    public var definition: RecordedPortalDefinition
    public var personal: [HARPersonalValue]
    /// The recorded kind's settings to put in a topology (stand-ins, or the kept values).
    public var settings: [String: String]
    public var warnings: [String]
    /// The capture's probe that found the portal, the sign-in and the refusal (entry indices).
    public var probeEntry: Int
    public var signInEntry: Int?
    public var refusalEntry: Int?
}

public enum HARImport {
    /// Connectivity probes: Apple's, Android's (Google), Firefox's, Windows'.
    static let probePaths: Set<String> = ["/hotspot-detect.html", "/library/test/success.html", "/generate_204", "/gen_204",
                                          "/canonical.html", "/success.txt", "/connecttest.txt", "/ncsi.txt"]

    public static func isProbe(_ url: URLParts) -> Bool { probePaths.contains(url.path) }

    static func succeeded(_ entry: HAREntry) -> Bool {
        let status = entry.response.status
        if status == 204 { return true }
        guard status == 200 else { return false }
        let body = entry.response.content.text ?? ""
        guard let url = URLParts(entry.request.url) else { return false }
        switch url.path {
        case "/hotspot-detect.html", "/library/test/success.html": return body.contains("<BODY>Success</BODY>") || body.trimmingCharacters(in: .whitespacesAndNewlines) == "Success"
        case "/connecttest.txt": return body.hasPrefix("Microsoft Connect Test")
        case "/ncsi.txt": return body.hasPrefix("Microsoft NCSI")
        case "/success.txt": return body.hasPrefix("success")
        case "/canonical.html": return body.contains("captive-portal")
        default: return false
        }
    }

    static func header(_ name: String, _ headers: [HARNameValue]) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    static func location(of entry: HAREntry) -> URLParts? {
        guard (300...399).contains(entry.response.status) else { return nil }
        let raw = header("Location", entry.response.headers) ?? entry.response.redirectURL ?? ""
        guard !raw.isEmpty else { return nil }
        if let absolute = URLParts(raw) { return absolute }
        guard let base = URLParts(entry.request.url) else { return nil }
        return URLParts(base.origin + (raw.hasPrefix("/") ? raw : "/" + raw))
    }

    static func isAsset(_ entry: HAREntry, _ url: URLParts) -> Bool {
        let mime = (entry.response.content.mimeType ?? header("Content-Type", entry.response.headers) ?? "").lowercased()
        if mime.hasPrefix("image/") || mime.hasPrefix("font/") || mime.contains("css") || mime.contains("javascript") { return true }
        let ext = url.path.split(separator: ".").last.map { $0.lowercased() } ?? ""
        return ["css", "js", "png", "jpg", "jpeg", "gif", "svg", "ico", "woff", "woff2", "ttf", "webp"].contains(ext) && url.path.contains(".")
    }

    // MARK: shapes of personal values

    static func isMAC(_ s: String) -> Bool {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false).count == 6
            ? s.split(separator: ":", omittingEmptySubsequences: false) : s.split(separator: "-", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
    }

    static func isIPv4(_ s: String) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isNumber) && (Int($0) ?? 256) < 256 }
    }

    /// A random-looking value: at least 8 characters of letters, digits, `-` `_` `.` `=` `+` `/`, with digits and letters
    /// (or 16 and more hex digits).
    static func isTokenLike(_ s: String) -> Bool {
        guard s.count >= 8, s.count <= 512, !isMAC(s), !isIPv4(s), !s.contains("://") else { return false }
        let allowed = s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.=+/%".contains($0)) }
        return allowed && s.contains(where: \.isNumber) && s.contains(where: \.isLetter)
    }

    static func alphabet(of s: String) -> String {
        if s.allSatisfy({ $0.isNumber }) { return "digits" }
        if s.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) { return "hex" }
        if s.allSatisfy({ $0.isHexDigit && !$0.isLowercase }) { return "HEX" }
        return "alnum"
    }

    /// How the capture wrote MACs, without the MAC: `AA:BB:CC:DD:EE:FF`, `aa-bb-cc-dd-ee-ff`, ...
    static func macStyle(_ mac: String) -> String {
        let sample = mac.contains("-") ? "aa-bb-cc-dd-ee-ff" : "aa:bb:cc:dd:ee:ff"
        return mac.contains(where: \.isUppercase) ? sample.uppercased() : sample
    }

    static func normalizedKey(_ key: String) -> String { key.lowercased().filter { $0.isLetter || $0.isNumber } }

    static func isClientMACKey(_ key: String) -> Bool {
        let k = normalizedKey(key)
        guard k.contains("mac") else { return false }
        return !["ap", "gw", "nas", "router", "bssid", "wlan", "switch", "called"].contains { k.hasPrefix($0) }
    }

    static func isClientIPKey(_ key: String) -> Bool {
        let k = normalizedKey(key)
        guard k == "ip" || k.hasSuffix("ip") || k.hasPrefix("ip") || k.contains("clientip") || k.contains("userip") else { return false }
        return !["ap", "gw", "nas", "router", "server", "gateway", "wlan", "switch"].contains { k.hasPrefix($0) }
    }

    static func isPasswordKey(_ key: String) -> Bool {
        let k = normalizedKey(key)
        return ["pass", "pwd", "pin", "secret", "surname", "lastname", "familyname"].contains { k.contains($0) }
    }

    static func isUserKey(_ key: String) -> Bool {
        let k = normalizedKey(key)
        return ["user", "login", "email", "mail", "name", "room", "account", "guest", "voucher", "code", "id"].contains { k.contains($0) }
    }

    static let emailPattern = try? NSRegularExpression(pattern: "[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}")
    static let macPattern = try? NSRegularExpression(pattern: "(?<![0-9A-Fa-f:-])[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(\\1[0-9A-Fa-f]{2}){4}(?![0-9A-Fa-f:-])")
    static let ipPattern = try? NSRegularExpression(pattern: "(?<![0-9.])(?:[0-9]{1,3}\\.){3}[0-9]{1,3}(?![0-9.])")

    static func matches(_ pattern: NSRegularExpression?, in text: String) -> [String] {
        guard let pattern else { return [] }
        let ns = text as NSString
        return pattern.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range) }
    }

    /// `<input type="hidden" name=.. value=..>` of a page.
    static func hiddenFields(_ html: String) -> [(name: String, value: String)] {
        var out: [(String, String)] = []
        var rest = html[...]
        while let open = rest.range(of: "<input", options: .caseInsensitive) {
            guard let close = rest[open.upperBound...].firstIndex(of: ">") else { break }
            let tag = String(rest[open.upperBound..<close])
            let attributes = attributeValues(tag)
            if attributes["type"]?.lowercased() == "hidden", let name = attributes["name"], let value = attributes["value"] { out.append((name, value)) }
            rest = rest[close...]
        }
        return out
    }

    static func attributeValues(_ tag: String) -> [String: String] {
        var out: [String: String] = [:]
        let pattern = try? NSRegularExpression(pattern: "([A-Za-z-]+)\\s*=\\s*(\"([^\"]*)\"|'([^']*)'|([^\\s>]+))")
        let ns = tag as NSString
        for m in pattern?.matches(in: tag, range: NSRange(location: 0, length: ns.length)) ?? [] {
            let name = ns.substring(with: m.range(at: 1)).lowercased()
            var value = ""
            for group in 3...5 where m.range(at: group).location != NSNotFound { value = ns.substring(with: m.range(at: group)) }
            if out[name] == nil { out[name] = value }
        }
        return out
    }

    static func fields(_ text: String?) -> [(name: String, value: String)] {
        guard let text, !text.isEmpty else { return [] }
        return text.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (s: Substring) in String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(s) }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    static func setCookies(_ entry: HAREntry) -> [(name: String, value: String, header: String)] {
        entry.response.headers.filter { $0.name.lowercased() == "set-cookie" }.flatMap { header in
            // Some exporters join several cookies with newlines.
            header.value.split(separator: "\n").compactMap { line -> (String, String, String)? in
                let first = line.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
                guard let eq = first.firstIndex(of: "=") else { return nil }
                return (first[..<eq].trimmingCharacters(in: .whitespaces), String(first[first.index(after: eq)...]), String(line))
            }
        }
    }

    static func variableName(_ prefix: String, _ key: String) -> String {
        prefix + "-" + key.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" }.reduce("") { $0 + String($1) }
    }

    // MARK: the import

    public static func convert(_ har: HARDocument, source: String, keep: Set<String> = []) throws -> HARImportResult {
        let entries = har.log.entries
        let urls = entries.map { URLParts($0.request.url) }
        var warnings: [String] = []

        // 1. The probe that found the portal.
        var probeIndex = entries.indices.first { i in urls[i].map(isProbe) == true && !succeeded(entries[i]) }
        if probeIndex == nil {
            probeIndex = entries.indices.first { i in
                guard let target = location(of: entries[i]), let url = urls[i] else { return false }
                return target.host != url.host
            }
        }
        guard let probeIndex, let probeURL = urls[probeIndex] else {
            throw HARError(file: source, field: "log.entries",
                           message: "no probe found: no connectivity probe (captive.apple.com/hotspot-detect.html, connectivitycheck.gstatic.com/generate_204, ...) was answered by a portal, and no request was redirected to another host; record from before joining the network")
        }
        let probe = entries[probeIndex]

        // 2. The portal's hosts: where the probe went, the hosts its pages redirect to, where forms were posted.
        var portalHosts: [String] = []
        if let target = location(of: probe) { portalHosts.append(target.host) } else { portalHosts.append(probeURL.host) }
        var changed = true
        while changed {
            changed = false
            for i in entries.indices where i > probeIndex {
                guard let url = urls[i], !isProbe(url) else { continue }
                var candidates: [String] = []
                if portalHosts.contains(url.host), let target = location(of: entries[i]), !isProbe(target) { candidates.append(target.host) }
                if entries[i].request.method.uppercased() == "POST" { candidates.append(url.host) }
                for host in candidates where !portalHosts.contains(host) {
                    portalHosts.append(host)
                    changed = true
                }
            }
        }
        let isPortal = { (i: Int) -> Bool in i != probeIndex && urls[i].map { portalHosts.contains($0.host) && !isProbe($0) } == true }

        // 3. Success: the first probe after it that got through; the sign-in is the last portal request before it.
        let successIndex = entries.indices.first { $0 > probeIndex && urls[$0].map(isProbe) == true && succeeded(entries[$0]) }
        var signInIndex: Int?
        if let successIndex {
            let candidates = entries.indices.filter { i in i > probeIndex && i < successIndex && isPortal(i) && urls[i].map { !isAsset(entries[i], $0) } == true }
            signInIndex = candidates.last { entries[$0].request.method.uppercased() == "POST" } ?? candidates.last
            if signInIndex == nil { warnings.append("the probe succeeded (log.entries[\(successIndex)]) without a portal request before it: nothing signs in") }
        } else {
            warnings.append("the capture never shows the probe succeeding after log.entries[\(probeIndex)]: no request signs in (the portal will never open the gate)")
        }
        var refusalIndex: Int?
        if let signInIndex, let signURL = urls[signInIndex] {
            refusalIndex = entries.indices.last { i in
                i > probeIndex && i < signInIndex && isPortal(i) && urls[i]?.path == signURL.path
                    && entries[i].request.method.uppercased() == entries[signInIndex].request.method.uppercased()
            }
        }

        // 4. Personal values, from the probe and the portal's exchanges.
        let relevant = entries.indices.filter { $0 == probeIndex || isPortal($0) }
        var personal: [HARPersonalValue] = []
        var variables: [RecordedVariable] = []
        var replacements: [(original: String, placeholder: String)] = []
        var seen = Set<String>()
        func add(_ kind: String, _ value: String, _ placeholder: String, at location: String, variable: RecordedVariable? = nil) {
            guard !value.isEmpty, !seen.contains(value) else { return }
            seen.insert(value)
            let kept = keep.contains(value)
            personal.append(HARPersonalValue(kind: kind, value: value, replacement: kept ? value : placeholder, location: location, kept: kept))
            guard !kept else { return }
            // A short credential (a room number) is replaced in the request only, not in every text.
            if kind.hasPrefix("credential"), value.count < 4 { return }
            if let variable, !variables.contains(where: { $0.name == variable.name }) { variables.append(variable) }
            replacements.append((value, placeholder))
        }
        // Query and form fields of the probe's redirect and the portal's requests.
        var fieldSources: [(location: String, fields: [(name: String, value: String)])] = []
        for i in relevant {
            let entry = entries[i]
            if let target = location(of: entry) { fieldSources.append(("log.entries[\(i)].response.headers.Location", fields(target.query))) }
            if isPortal(i) {
                fieldSources.append(("log.entries[\(i)].request.url", fields(urls[i]?.query)))
                fieldSources.append(("log.entries[\(i)].request.postData", fields(entry.request.postData?.text)))
            }
        }
        for (where_, list) in fieldSources {
            for (name, value) in list where isMAC(value) && isClientMACKey(name) {
                add("client MAC", value, "{{mac}}", at: "\(where_) `\(name)`", variable: RecordedVariable(name: "mac", kind: "mac", length: 17, alphabet: macStyle(value)))
            }
            for (name, value) in list where isIPv4(value) && isClientIPKey(name) {
                add("client IP", value, "{{ip}}", at: "\(where_) `\(name)`", variable: RecordedVariable(name: "ip", kind: "ip", length: 0, alphabet: ""))
            }
        }
        // Cookies the portal set.
        for i in relevant {
            for cookie in setCookies(entries[i]) where !cookie.value.isEmpty {
                let name = variableName("cookie", cookie.name)
                add("cookie", cookie.value, "{{\(name)}}", at: "log.entries[\(i)].response.headers.Set-Cookie `\(cookie.name)`",
                    variable: RecordedVariable(name: name, kind: "cookie", length: cookie.value.count, alphabet: alphabet(of: cookie.value)))
            }
        }
        // Credentials: the sign-in's typed fields (and the failed attempt's).
        var settings: [String: String] = [:]
        var credentialFields: [String: String] = [:] // field -> setting
        if let signInIndex {
            let signIn = entries[signInIndex]
            let hidden = Set(relevant.flatMap { hiddenFields(entries[$0].response.content.text ?? "").map(\.name) })
            let typed = fields(signIn.request.postData?.text) + fields(urls[signInIndex]?.query)
            let candidates = typed.filter { !hidden.contains($0.name) && !isMAC($0.value) && !isIPv4($0.value) && !$0.value.isEmpty }
            let password = candidates.first { isPasswordKey($0.name) }
            let user = candidates.first { isUserKey($0.name) && $0.name != password?.name }
            for (setting, field, standIn) in [("username", user, "guest"), ("password", password, "guest-password")] {
                guard let field else { continue }
                credentialFields[field.name] = setting
                settings[setting] = keep.contains(field.value) ? field.value : standIn
                add("credential", field.value, "{{setting:\(setting)}}", at: "log.entries[\(signInIndex)].request.postData `\(field.name)`")
            }
            if let refusalIndex {
                let tried = fields(entries[refusalIndex].request.postData?.text) + fields(urls[refusalIndex]?.query)
                for (name, value) in tried where credentialFields[name] != nil {
                    add("credential (refused)", value, "wrong-\(credentialFields[name] ?? "value")", at: "log.entries[\(refusalIndex)].request.postData `\(name)`")
                }
            }
            if credentialFields.isEmpty { warnings.append("the sign-in log.entries[\(signInIndex)] carries no credential field: any submission of it signs in") }
        }
        // Hidden form fields that look random (CSRF tokens and the like).
        for i in relevant {
            for (name, value) in hiddenFields(entries[i].response.content.text ?? "") where isTokenLike(value) && !seen.contains(value) {
                let variable = variableName("token", name)
                add("token", value, "{{\(variable)}}", at: "log.entries[\(i)].response.content.text hidden field `\(name)`",
                    variable: RecordedVariable(name: variable, kind: "token", length: value.count, alphabet: alphabet(of: value)))
            }
        }
        // Session ids in links and redirects.
        for (where_, list) in fieldSources {
            for (name, value) in list where isTokenLike(value) && !seen.contains(value) {
                let variable = variableName("session", name)
                add("session id", value, "{{\(variable)}}", at: "\(where_) `\(name)`",
                    variable: RecordedVariable(name: variable, kind: "session", length: value.count, alphabet: alphabet(of: value)))
            }
        }
        // Other MACs, IPs and e-mail addresses anywhere in the portal's text.
        var standIns = 0
        for i in relevant {
            let entry = entries[i]
            let texts = [("request.url", entry.request.url), ("request.postData", entry.request.postData?.text ?? ""),
                         ("response.content.text", entry.response.content.text ?? "")]
                + entry.response.headers.map { ("response.headers.\($0.name)", $0.value) }
            for (field, text) in texts {
                for value in matches(emailPattern, in: text.removingPercentEncoding ?? text) where !seen.contains(value) {
                    standIns += 1
                    add("e-mail", value, "person\(standIns)@example.com", at: "log.entries[\(i)].\(field)")
                }
                for value in matches(macPattern, in: text.removingPercentEncoding ?? text) where !seen.contains(value) {
                    standIns += 1
                    add("MAC", value, String(format: "02:00:5e:00:00:%02x", standIns % 256), at: "log.entries[\(i)].\(field)")
                }
                guard field != "request.url" || isPortal(i) else { continue }
                for value in matches(ipPattern, in: text.removingPercentEncoding ?? text) where isIPv4(value) && !seen.contains(value)
                    && !portalHosts.contains(value) {
                    standIns += 1
                    add("IP", value, "192.0.2.\(standIns % 250 + 1)", at: "log.entries[\(i)].\(field)")
                }
            }
        }

        // 5. The replacement table: longest first; percent-encoded forms too; the portal's origins become {{portal}}.
        var table: [(String, String)] = []
        for (original, placeholder) in replacements {
            table.append((original, placeholder))
            let encoded = Template.urlEncode(original)
            if encoded != original {
                let variable = placeholder.hasPrefix("{{") ? String(placeholder.dropLast(2)) + "|url}}" : Template.urlEncode(placeholder)
                table.append((encoded, variable))
                table.append((encoded.replacingOccurrences(of: "%3A", with: "%3a").replacingOccurrences(of: "%40", with: "%40"), variable))
            }
        }
        for host in portalHosts {
            for scheme in ["https", "http"] {
                let ports = Set(entries.compactMap { URLParts($0.request.url) }.filter { $0.host == host }.compactMap(\.port))
                for port in ports { table.append(("\(scheme)://\(host):\(port)", "{{portal}}")) }
                table.append(("\(scheme)://\(host)", "{{portal}}"))
                table.append((Template.urlEncode("\(scheme)://\(host)"), "{{portal|url}}"))
            }
        }
        table.sort { $0.0.count > $1.0.count }
        func scrub(_ text: String) -> String {
            var out = text
            for (original, placeholder) in table where out.contains(original) { out = out.replacingOccurrences(of: original, with: placeholder) }
            return out
        }

        // 6. The exchanges.
        func response(_ entry: HAREntry) -> RecordedResponse {
            var headers: [String: String] = [:]
            for name in ["Location", "Content-Type", "Refresh", "Cache-Control", "WWW-Authenticate"] {
                if let value = header(name, entry.response.headers) { headers[name] = scrub(value) }
            }
            if let cookie = setCookies(entry).first { headers["Set-Cookie"] = scrub(cookie.header) }
            return RecordedResponse(status: entry.response.status, headers: headers, body: scrub(entry.response.content.text ?? ""))
        }
        func request(_ i: Int, withFields: Bool) -> RecordedRequest {
            let entry = entries[i]
            var fieldValues: [String: String] = [:]
            var cookies: [String: String] = [:]
            if withFields {
                for (name, value) in fields(urls[i]?.query) + fields(entry.request.postData?.text) {
                    fieldValues[name] = credentialFields[name].map { "{{setting:\($0)}}" } ?? scrub(value)
                }
                for (name, value) in parseCookies(header("Cookie", entry.request.headers)) { cookies[name] = scrub(value) }
            }
            return RecordedRequest(method: entry.request.method.uppercased(), path: scrub(urls[i]?.path ?? "/"), fields: fieldValues, cookies: cookies)
        }
        var exchanges = [RecordedExchange(role: "probe", entry: probeIndex, request: RecordedRequest(method: probe.request.method.uppercased(), path: "*"),
                                          response: response(probe))]
        var skipped = 0
        for i in entries.indices where isPortal(i) && entries[i].response.content.omittedBytes != nil {
            warnings.append("log.entries[\(i)]: a binary \(entries[i].response.content.mimeType ?? "asset") of \(entries[i].response.content.omittedBytes ?? 0) bytes is not kept: the lab's portal answers it 404 (not in the capture)")
        }
        for i in entries.indices where isPortal(i) && entries[i].response.content.omittedBytes == nil {
            let role: String
            if i == signInIndex { role = "sign-in" } else if i == refusalIndex { role = "refusal" } else if let url = urls[i], isAsset(entries[i], url) { role = "asset" } else { role = "page" }
            let recorded = RecordedExchange(role: role, entry: i, request: request(i, withFields: role == "sign-in" || role == "refusal"), response: response(entries[i]))
            if role == "page" || role == "asset", exchanges.contains(where: { ($0.role == "page" || $0.role == "asset" || $0.role == "sign-in") && $0.request.method == recorded.request.method && $0.request.path == recorded.request.path }) {
                skipped += 1
                continue
            }
            exchanges.append(recorded)
        }
        if refusalIndex != nil {
            // An attempt recorded before the sign-in with the same request: its page is not served directly.
            exchanges.removeAll { $0.role == "page" && $0.entry == refusalIndex }
        }
        if skipped > 0 { warnings.append("\(skipped) repeated request(s) of the portal: the first answer of each is served") }
        let others = entries.indices.filter { $0 != probeIndex && !isPortal($0) }.count
        if others > 0 { warnings.append("\(others) request(s) to other hosts (probes, web sites, CDNs) are not part of the portal and not kept") }
        let name = (source as NSString).lastPathComponent
        let definition = RecordedPortalDefinition(source: name, portalHosts: portalHosts, variables: variables, exchanges: exchanges)
        // Nothing personal may be left in what is written.
        let written = String(decoding: (try? definition.encoded()) ?? Data(), as: UTF8.self)
        for value in personal where !value.kept && value.value.count >= 4 && written.contains(value.value) {
            warnings.append("the \(value.kind) value first seen at \(value.location) is still in the definition (a part of a longer text); check it")
        }
        return HARImportResult(definition: definition, personal: personal, settings: settings, warnings: warnings,
                               probeEntry: probeIndex, signInEntry: signInIndex, refusalEntry: refusalIndex)
    }
}
