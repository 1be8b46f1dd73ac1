// hotspot-helper-voucher: a reference Hotspot Helper that needs the user, and a template for vendors (copy
// this folder: this file, the logic, and main.swift, the entry point; its provider pair in Sources/providers
// shares this file).
//
// It claims captive networks whose portal asks for a voucher code (a hotel room, a café receipt). It cannot
// sign in alone: authenticate posts a notification ("Sign in to <ssid>") and answers uiRequired; when the
// user opens the helper, hotspotd sends presentUI (no deadline), the helper waits for what the user types
// (the lab writes it to `$HOTSPOT_HELPER_UI/input`), posts the voucher and checks the probe.
//
//   hotspot-helper-voucher [--network SSID[:PASSWORD]]... [--name NAME] [--identifier ID] [--socket PATH]
//                          [--http-timeout SECONDS]
//
// Every command and decision is one line on stderr. All traffic goes through `command.http` (marked so it
// passes while the station suppresses IP; redirects not followed; bounded by the command's deadline).
import Foundation
import HotspotHelper

// MARK: - Options

public struct VoucherHelperOptions {
    public var displayName = "Voucher"
    public var identifier = "com.hotspotlab.voucher"
    public var socketPath: String?
    /// Networks to claim in filterScanList: SSID -> password (nil for an open network).
    public var networks: [(ssid: String, password: String?)] = []
    public var httpTimeout: Duration = .seconds(8)
    /// Where the user's typing arrives (the file `input` in it); default `$HOTSPOT_HELPER_UI`.
    public var uiDirectory: String? = HotspotHelperEnvironment.uiDirectory

    static let usage = """
        usage: hotspot-helper-voucher [--network SSID[:PASSWORD]]... [--name NAME] [--identifier ID] [--socket PATH]
                                      [--http-timeout SECONDS] [--ui DIRECTORY]
        """

    public struct UsageError: Error, CustomStringConvertible {
        public var description: String
    }

    public static func parse(_ arguments: [String]) throws(UsageError) -> VoucherHelperOptions {
        var options = VoucherHelperOptions()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--help" || argument == "-h" { throw UsageError(description: usage) }
            guard argument.hasPrefix("--") else { throw UsageError(description: "unexpected argument `\(argument)`\n\(usage)") }
            var flag = argument
            var value: String?
            if let eq = argument.firstIndex(of: "=") {
                flag = String(argument[..<eq])
                value = String(argument[argument.index(after: eq)...])
            } else {
                value = rest.popFirst()
            }
            guard let value else { throw UsageError(description: "\(flag) needs a value\n\(usage)") }
            switch flag {
            case "--network":
                let parts = value.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard !parts[0].isEmpty, parts[0].utf8.count <= 32 else {
                    throw UsageError(description: "--network: expected SSID[:PASSWORD] with an SSID of 1 to 32 bytes, found `\(value)`")
                }
                options.networks.append((parts[0], parts.count > 1 ? parts[1] : nil))
            case "--name":
                guard !value.isEmpty, value.count <= 15 else { throw UsageError(description: "--name: 1 to 15 characters, found `\(value)`") }
                options.displayName = value
            case "--ui": options.uiDirectory = value
            case "--identifier": options.identifier = value
            case "--socket": options.socketPath = value
            case "--http-timeout":
                guard let seconds = Double(value), seconds > 0, seconds <= 300 else {
                    throw UsageError(description: "--http-timeout: seconds, more than 0 and at most 300, found `\(value)`")
                }
                options.httpTimeout = .milliseconds(Int64(seconds * 1000))
            default:
                throw UsageError(description: "unknown option \(flag)\n\(usage)")
            }
        }
        return options
    }
}

public func log(_ line: String) {
    FileHandle.standardError.write(Data("hotspot-helper-voucher: \(line)\n".utf8))
}

// MARK: - Reading the portal page (pure: unit-tested on the pages the lab's portal kinds render)

struct FormField: Equatable {
    var name: String
    var type: String
    var value: String
    /// What the field is for, when its name does not say.
    var placeholder: String = ""
}

struct HTMLForm: Equatable {
    var action: String
    var method: String
    var fields: [FormField]
    var text: String
}

enum HTMLScan {
    static func forms(in html: String) -> [HTMLForm] {
        var forms: [HTMLForm] = []
        var rest = html[...]
        while let open = rest.range(of: "<form", options: .caseInsensitive) {
            guard let tagEnd = rest[open.upperBound...].firstIndex(of: ">") else { break }
            let attributes = attributes(of: rest[open.upperBound..<tagEnd])
            let bodyStart = rest.index(after: tagEnd)
            let close = rest[bodyStart...].range(of: "</form", options: .caseInsensitive)
            let body = rest[bodyStart..<(close?.lowerBound ?? rest.endIndex)]
            forms.append(HTMLForm(action: attributes["action"] ?? "", method: (attributes["method"] ?? "get").lowercased(),
                                  fields: fields(in: body), text: visibleText(body)))
            rest = rest[(close?.upperBound ?? rest.endIndex)...]
        }
        return forms
    }

    static func fields(in body: Substring) -> [FormField] {
        var out: [FormField] = []
        var rest = body
        while let lt = rest.firstIndex(of: "<") {
            let after = rest[rest.index(after: lt)...]
            guard let gt = after.firstIndex(of: ">") else { break }
            let tag = after[..<gt]
            let name = tag.prefix { $0.isLetter }.lowercased()
            if name == "input" || name == "button" {
                let a = attributes(of: tag.dropFirst(name.count))
                let type = (a["type"] ?? (name == "button" ? "submit" : "text")).lowercased()
                out.append(FormField(name: a["name"] ?? "", type: type, value: a["value"] ?? "", placeholder: a["placeholder"] ?? ""))
            }
            rest = after[after.index(after: gt)...]
        }
        return out
    }

    static func attributes(of text: Substring) -> [String: String] {
        var out: [String: String] = [:]
        var i = text.startIndex
        func skipSpace() { while i < text.endIndex, text[i].isWhitespace || text[i] == "/" { i = text.index(after: i) } }
        while true {
            skipSpace()
            guard i < text.endIndex else { break }
            let nameStart = i
            while i < text.endIndex, !text[i].isWhitespace, text[i] != "=", text[i] != ">" { i = text.index(after: i) }
            let name = text[nameStart..<i].lowercased()
            skipSpace()
            var value = ""
            if i < text.endIndex, text[i] == "=" {
                i = text.index(after: i)
                while i < text.endIndex, text[i].isWhitespace { i = text.index(after: i) }
                if i < text.endIndex, text[i] == "\"" || text[i] == "'" {
                    let quote = text[i]
                    let start = text.index(after: i)
                    let end = text[start...].firstIndex(of: quote) ?? text.endIndex
                    value = String(text[start..<end])
                    i = end < text.endIndex ? text.index(after: end) : end
                } else {
                    let start = i
                    while i < text.endIndex, !text[i].isWhitespace { i = text.index(after: i) }
                    value = String(text[start..<i])
                }
            }
            if !name.isEmpty, out[name] == nil { out[name] = decodeEntities(value) }
            if i == nameStart { i = text.index(after: i) }
        }
        return out
    }

    static func decodeEntities(_ s: String) -> String {
        guard s.contains("&") else { return s }
        return s.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    static func visibleText(_ html: Substring) -> String {
        var out = ""
        var rest = html
        while let lt = rest.firstIndex(of: "<") {
            out += rest[..<lt]
            let after = rest[lt...]
            if after.hasPrefix("<!--") {
                rest = after.range(of: "-->").map { after[$0.upperBound...] } ?? ""
            } else {
                rest = after.firstIndex(of: ">").map { after[after.index(after: $0)...] } ?? ""
            }
            out += " "
        }
        out += rest
        return decodeEntities(out.split(whereSeparator: \.isWhitespace).joined(separator: " "))
    }
}

/// A voucher form: one code to type (no password), where to send it.
struct VoucherPage: Equatable {
    var form: HTMLForm
    var codeField: String

    static let words = ["voucher", "code", "access", "ticket", "pin", "coupon"]

    /// Recognizes a voucher page: a form with exactly one field to type, not a password, whose name,
    /// placeholder or label speaks of a voucher/code; nil for anything else.
    static func recognize(_ html: String) -> VoucherPage? {
        for form in HTMLScan.forms(in: html) {
            let typed = form.fields.filter { ["text", "number", "tel", "password", ""].contains($0.type) }
            guard typed.count == 1, let field = typed.first, field.type != "password", !field.name.isEmpty else { continue }
            let wording = (field.name + " " + field.placeholder + " " + form.text + " " + form.action).lowercased()
            if words.contains(where: { wording.contains($0) }) { return VoucherPage(form: form, codeField: field.name) }
        }
        return nil
    }

    /// The form's fields with the code filled in (hidden fields kept, placeholders dropped).
    func submission(code: String) -> [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        for field in form.fields where !field.name.isEmpty {
            if field.name == codeField {
                out.append((field.name, code))
            } else if field.type == "hidden" {
                out.append((field.name, field.value))
            }
        }
        return out
    }
}

// MARK: - The probe and the portal

typealias HTTPSend = (HotspotHTTPRequest) throws(HotspotTrafficError) -> HotspotHTTPResponse

enum ProbeResult {
    case online
    case redirected(to: HotspotURL)
    case other(HotspotHTTPResponse)
}

enum Portal {
    static func probe(_ http: HTTPSend) throws(HotspotTrafficError) -> ProbeResult {
        let response = try http(.get(HotspotHelperEnvironment.probeURL))
        if response.status == 200, HotspotHelperEnvironment.isProbeSuccess(response.text) { return .online }
        if let target = response.redirectURL { return .redirected(to: target) }
        return .other(response)
    }

    enum Discovery {
        case online
        case voucher(VoucherPage, url: HotspotURL)
        case unknown(String)
    }

    /// Probes; when redirected, reads the portal page (at most 4 redirects) and looks for a voucher form.
    static func discover(_ http: HTTPSend) throws(HotspotTrafficError) -> Discovery {
        switch try probe(http) {
        case .online:
            return .online
        case .other(let response):
            if let page = VoucherPage.recognize(response.text) { return .voucher(page, url: response.url) }
            return .unknown("the probe answered \(response.status) with \(response.body.count) bytes that are not a voucher page")
        case .redirected(var target):
            for _ in 0..<4 {
                let response = try http(.get(target.description))
                if let next = response.redirectURL {
                    target = next
                    continue
                }
                guard (200...299).contains(response.status) else { return .unknown("the portal page \(target) answered \(response.status)") }
                if let page = VoucherPage.recognize(response.text) { return .voucher(page, url: target) }
                return .unknown("the portal page \(target) asks for no voucher")
            }
            return .unknown("the portal redirects more than 4 times (last \(target))")
        }
    }
}

// MARK: - Decisions

struct Decision {
    var result: HotspotHelperResult
    var confidence: HotspotHelperConfidence?
    var reason: String
}

public final class VoucherLogic: @unchecked Sendable {
    public let options: VoucherHelperOptions
    private let lock = NSLock()
    /// Per SSID: the voucher page found by authenticate (for presentUI), then the portal signed in to (for logoff).
    private var pages: [String: (page: VoucherPage, url: HotspotURL)] = [:]
    private var sessions: [String: HotspotURL] = [:]

    public init(options: VoucherHelperOptions) { self.options = options }

    public func filter(_ networks: [HotspotNetwork]) -> (claimed: [HotspotNetwork], reason: String) {
        var claimed: [HotspotNetwork] = []
        for network in networks {
            guard let configured = options.networks.first(where: { $0.ssid == network.ssid }) else { continue }
            if network.isSecure {
                guard let password = configured.password else { continue }
                network.setPassword(password)
            }
            claimed.append(network)
        }
        let reason = options.networks.isEmpty ? "no --network configured: claiming nothing"
            : "claiming \(claimed.count) of \(networks.count): [\(claimed.map(\.ssid).joined(separator: ", "))]"
        return (claimed, reason)
    }

    func evaluate(_ http: HTTPSend) -> Decision {
        do {
            switch try Portal.discover(http) {
            case .online: return Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "the probe succeeds: not captive")
            case .voucher(_, let url): return Decision(result: .success, confidence: .high, reason: "voucher portal at \(url)")
            case .unknown(let why): return Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "\(why): not mine")
            }
        } catch {
            return Decision(result: .success, confidence: HotspotHelperConfidence.none, reason: "no answer I can use (\(error)): not mine")
        }
    }

    /// Finds the voucher page; the user must type the code: notify, then uiRequired.
    func authenticate(_ http: HTTPSend, ssid: String) -> Decision {
        let discovery: Portal.Discovery
        do { discovery = try Portal.discover(http) } catch {
            return Decision(result: .temporaryFailure, reason: "portal unreachable: \(error)")
        }
        switch discovery {
        case .online:
            return Decision(result: .success, reason: "the probe already succeeds")
        case .unknown(let why):
            return Decision(result: .unsupportedNetwork, reason: "\(why): no voucher to enter")
        case .voucher(let page, let url):
            lock.withLock { pages[ssid] = (page, url) }
            let posted = HotspotHelper.postNotification(title: "Sign in to \(ssid)", body: "Tap to enter your voucher")
            return Decision(result: .uiRequired, reason: "voucher portal at \(url): the user must type the code (notification posted: \(posted))")
        }
    }

    /// presentUI: waits for the user's voucher (no deadline), posts it, checks the probe. Nil when the command
    /// was withdrawn while waiting (nothing to answer).
    func presentUI(_ http: HTTPSend, ssid: String, cancelled: () -> Bool) -> Decision? {
        guard let uiDirectory = options.uiDirectory else {
            return Decision(result: .failure, reason: "no $\(HotspotHelperEnvironment.uiDirectoryVariable): nowhere to ask the user")
        }
        var known = lock.withLock { pages[ssid] }
        if known == nil {
            // Not seen by this process (it restarted): look again.
            do {
                switch try Portal.discover(http) {
                case .online: return Decision(result: .success, reason: "the probe already succeeds")
                case .unknown(let why): return Decision(result: .unsupportedNetwork, reason: "\(why): no voucher to enter")
                case .voucher(let page, let url): known = (page, url)
                }
            } catch {
                return Decision(result: .temporaryFailure, reason: "portal unreachable: \(error)")
            }
        }
        guard let (page, url) = known else { return nil }
        log("presentUI \(ssid): waiting for the voucher in \(uiDirectory)/\(HotspotHelperEnvironment.uiInputFile)")
        guard let typed = HotspotHelperEnvironment.waitForUserInput(directory: uiDirectory, stop: cancelled) else { return nil }
        let code = typed.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !code.isEmpty else { return Decision(result: .failure, reason: "the user entered no voucher") }
        guard let action = url.resolving(page.form.action) else {
            return Decision(result: .unsupportedNetwork, reason: "the voucher form's action \(page.form.action) is not plain HTTP")
        }
        do {
            let fields = page.submission(code: code)
            let response = page.form.method == "post" ? try http(.postForm(action.description, fields: fields))
                : try http(.get(action.description + "?" + HotspotHTTPRequest.formEncode(fields)))
            switch response.status {
            case 200...399: break
            case 400...499: return Decision(result: .failure, reason: "voucher \(code) refused (\(response.status))")
            default: return Decision(result: .temporaryFailure, reason: "voucher: the portal answered \(response.status)")
            }
            guard case .online = try Portal.probe(http) else {
                return Decision(result: .temporaryFailure, reason: "the portal accepted the voucher, but the probe is still captive")
            }
            lock.withLock {
                pages[ssid] = nil
                sessions[ssid] = url
            }
            return Decision(result: .success, reason: "voucher accepted at \(url.origin); the probe succeeds")
        } catch {
            return Decision(result: .temporaryFailure, reason: "posting the voucher failed: \(error)")
        }
    }

    func maintain(_ http: HTTPSend) -> Decision {
        do {
            switch try Portal.probe(http) {
            case .online: return Decision(result: .success, reason: "the probe succeeds")
            case .redirected(let target): return Decision(result: .authenticationRequired, reason: "the probe is redirected to \(target): signed out")
            case .other(let response):
                if VoucherPage.recognize(response.text) != nil {
                    return Decision(result: .authenticationRequired, reason: "the probe shows the voucher page: signed out")
                }
                return Decision(result: .failure, reason: "the probe answered \(response.status) with something unknown")
            }
        } catch {
            return Decision(result: .failure, reason: "probe failed: \(error)")
        }
    }

    func logoff(_ http: HTTPSend, ssid: String) -> Decision {
        guard let portal = lock.withLock({ sessions[ssid] }), let target = portal.resolving("/logoff") else {
            return Decision(result: .failure, reason: "no session of this helper on \(ssid) to log off")
        }
        do {
            let response = try http(.get(target.description))
            guard (200...299).contains(response.status) else {
                return Decision(result: .failure, reason: "logoff at \(target) answered \(response.status)")
            }
            lock.withLock { sessions[ssid] = nil }
            return Decision(result: .success, reason: "logged off at \(target)")
        } catch {
            return Decision(result: .failure, reason: "logoff at \(target) failed: \(error)")
        }
    }

    /// Runs one command and answers it (the legacy helper; the provider pair returns `response(to:)` instead).
    public func handle(_ command: HotspotHelperCommand) {
        guard let response = response(to: command) else { return }
        if command.isCancelled {
            log("\(command.commandType) #\(command.identifier): withdrawn by hotspotd meanwhile: not answering")
            return
        }
        if !response.deliver() { log("\(command.commandType) #\(command.identifier): the answer could not be delivered: \(HotspotHelper.lastError ?? "?")") }
    }

    /// Runs one command and returns its answer (nil: withdrawn while waiting for the user).
    public func response(to command: HotspotHelperCommand) -> HotspotHelperResponse? {
        let network = command.network
        let ssid = network?.ssid ?? ""
        let label = "\(command.commandType) #\(command.identifier)" + (network.map { " \($0.ssid) (\($0.bssid))" } ?? "")
        log("\(label): received" + (command.deadlineMilliseconds.map { " deadline \(Int($0)) ms" } ?? " no deadline"))
        let http: HTTPSend = { (request) throws(HotspotTrafficError) -> HotspotHTTPResponse in
            var r = request
            if r.timeout == nil { r.timeout = self.options.httpTimeout }
            let response = try command.http(r)
            log("\(label): \(r.method) \(r.url) -> \(response.status)\(response.redirectURL.map { " Location \($0)" } ?? "")")
            return response
        }
        let response: HotspotHelperResponse
        switch command.commandType {
        case .filterScanList:
            let (claimed, reason) = filter(command.networkList ?? [])
            log("\(label): \(reason)")
            response = command.createResponse(.success)
            response.setNetworkList(claimed)
        case .evaluate:
            guard let network else {
                response = command.createResponse(.success)
                break
            }
            let d = evaluate(http)
            network.setConfidence(d.confidence ?? HotspotHelperConfidence.none)
            log("\(label): confidence \(network.confidence): \(d.reason)")
            response = command.createResponse(d.result)
            response.setNetwork(network)
        case .presentUI:
            guard let d = presentUI(http, ssid: ssid, cancelled: { command.isCancelled }) else {
                log("\(label): withdrawn by hotspotd while waiting for the user: not answering")
                return nil
            }
            log("\(label): \(d.result): \(d.reason)")
            response = command.createResponse(d.result)
        case .authenticate, .maintain, .logoff:
            let d = command.commandType == .authenticate ? authenticate(http, ssid: ssid)
                : command.commandType == .maintain ? maintain(http) : logoff(http, ssid: ssid)
            log("\(label): \(d.result): \(d.reason)")
            response = command.createResponse(d.result)
        default:
            log("\(label): commandNotRecognized")
            response = command.createResponse(.commandNotRecognized)
        }
        return response
    }
}

